package domain_test

import (
	"slices"
	"testing"

	"github.com/userd/userd/domain"
)

func TestNewEmailCode_six_digits_hashed_per_email(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 200 {
		code, hash := domain.NewEmailCode("a@example.com")
		if !domain.WellFormedEmailCode(code) {
			t.Fatalf("code %q is not six digits", code)
		}
		if hash != domain.HashEmailCode("a@example.com", code) {
			t.Fatalf("hash of %q is not HashEmailCode's", code)
		}
		if hash == domain.HashEmailCode("b@example.com", code) {
			t.Fatalf("the hash of %q does not depend on the email", code)
		}
		seen[code] = true
	}
	if len(seen) < 190 {
		t.Errorf("200 codes gave only %d different ones", len(seen))
	}
}

func TestWellFormedEmailCode(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{"012345": true, "999999": true, "12345": false, "1234567": false,
		"12a456": false, "１２３４５６": false, "": false, " 12345": false} {
		if got := domain.WellFormedEmailCode(s); got != want {
			t.Errorf("WellFormedEmailCode(%q) = %v, want %v", s, got, want)
		}
	}
}

// An emailed code followed by a TOTP code names otp once: amr lists
// methods, and ParseAMR refuses a repeated one.
func TestSecondStepAMR_names_each_method_once(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		first, second string
		want          domain.AMR
	}{
		{"", domain.MethodOTP, domain.AMRPasswordOTP},
		{domain.MethodPassword, domain.MethodHardwareKey, domain.AMRPasswordPasskey},
		{domain.MethodOTP, domain.MethodOTP, domain.AMR{"otp", "mfa"}},
		{domain.MethodOTP, domain.MethodHardwareKey, domain.AMR{"otp", "hwk", "mfa"}},
		{domain.MethodFederated, domain.MethodOTP, domain.AMR{"fed", "otp", "mfa"}},
	} {
		got := domain.SecondStepAMR(c.first, c.second)
		if !slices.Equal(got, c.want) {
			t.Errorf("SecondStepAMR(%q, %q) = %v, want %v", c.first, c.second, got, c.want)
		}
		if _, ok := domain.ParseAMR(got); !ok {
			t.Errorf("ParseAMR(%v) refuses it", got)
		}
	}
}
