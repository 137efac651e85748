package domain_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

func TestParseTOTPCode(t *testing.T) {
	t.Parallel()
	for in, ok := range map[string]bool{
		"123456": true, "000000": true,
		"12345": false, "1234567": false, "12 456": false, " 23456": false, "12345a": false,
		"-12345": false, "１２３４５６": false, "": false,
	} {
		if _, got := domain.ParseTOTPCode(in); got != ok {
			t.Errorf("ParseTOTPCode(%q) = %v, want %v", in, got, ok)
		}
	}
}

func TestRecoveryCodes(t *testing.T) {
	t.Parallel()
	codes := domain.NewRecoveryCodes()
	if len(codes) != domain.RecoveryCodeCount {
		t.Fatalf("%d codes", len(codes))
	}
	form := regexp.MustCompile(`^[0-9abcdefghjkmnpqrstvwxyz]{5}-[0-9abcdefghjkmnpqrstvwxyz]{5}$`)
	for _, c := range codes {
		if !form.MatchString(c) {
			t.Errorf("code %q has the wrong form", c)
		}
		if got, ok := domain.ParseRecoveryCode(c); !ok || got != c {
			t.Errorf("ParseRecoveryCode(%q) = %q, %v", c, got, ok)
		}
	}
	slices.Sort(codes)
	if len(slices.Compact(codes)) != domain.RecoveryCodeCount {
		t.Error("codes repeat")
	}
	for in, ok := range map[string]bool{
		"ABCDE-12345": true, "abcde-12345": true,
		"abcde12345": false, "abcde-1234": false, "abcde 12345": false, "abcd-e12345": false, "abcde-1234!": false,
	} {
		if _, got := domain.ParseRecoveryCode(in); got != ok {
			t.Errorf("ParseRecoveryCode(%q) = %v, want %v", in, got, ok)
		}
	}
	const u = domain.UserID("6740f1c2a1b2c3d4e5f60718")
	if domain.HashRecoveryCode(u, "ABCDE-12345") != domain.HashRecoveryCode(u, "abcde-12345") {
		t.Error("the hash depends on letter case")
	}
	if domain.HashRecoveryCode(u, "abcde-12345") == domain.HashRecoveryCode("6740f1c2a1b2c3d4e5f60719", "abcde-12345") {
		t.Error("the hash does not depend on the user")
	}
}

func TestAMR(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		amr domain.AMR
		acr string
	}{
		{domain.AMRPassword, "aal1"}, {domain.AMRPasskey, "aal1"},
		{domain.AMRPasswordOTP, "aal2"}, {domain.AMRPasswordPasskey, "aal2"}, {domain.AMRPasskeyVerified, "aal2"},
	} {
		if got := tc.amr.ACR(); got != tc.acr {
			t.Errorf("%v.ACR() = %q, want %q", tc.amr, got, tc.acr)
		}
		if got, ok := domain.ParseAMR(tc.amr); !ok || !slices.Equal(got, tc.amr) {
			t.Errorf("ParseAMR(%v) = %v, %v", tc.amr, got, ok)
		}
	}
	if got, ok := domain.ParseAMR(nil); !ok || !slices.Equal(got, domain.AMRPassword) {
		t.Errorf("ParseAMR(nil) = %v, %v; want pwd", got, ok)
	}
	for _, bad := range [][]string{{"pwd", "face"}, {"otp", "otp"}, {""}} {
		if _, ok := domain.ParseAMR(bad); ok {
			t.Errorf("ParseAMR(%q) accepted", bad)
		}
	}
}

func TestSession_Strong(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		s    domain.Session
		want bool
	}{
		{"second_factor_long_ago", domain.Session{AMR: domain.AMRPasswordOTP, AuthTime: now.Add(-48 * time.Hour)}, true},
		{"password_just_now", domain.Session{AMR: domain.AMRPassword, AuthTime: now.Add(-time.Minute)}, true},
		{"password_at_the_bound", domain.Session{AMR: domain.AMRPassword, AuthTime: now.Add(-domain.RecentSignIn)}, true},
		{"password_past_the_bound", domain.Session{AMR: domain.AMRPassword, AuthTime: now.Add(-domain.RecentSignIn - time.Second)}, false},
		{"unknown_age", domain.Session{AMR: domain.AMRPassword}, false},
	} {
		if got := tc.s.Strong(now); got != tc.want {
			t.Errorf("%s: Strong = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParsePasskeyName(t *testing.T) {
	t.Parallel()
	if n, msg := domain.ParsePasskeyName(""); n != domain.DefaultPasskeyName || msg != "" {
		t.Errorf("empty name = %q, %q", n, msg)
	}
	if n, msg := domain.ParsePasskeyName("  MacBook  "); n != "MacBook" || msg != "" {
		t.Errorf("name = %q, %q", n, msg)
	}
	for _, bad := range []string{strings.Repeat("x", 65), "a\x00b", "   "} {
		if _, msg := domain.ParsePasskeyName(bad); msg == "" {
			t.Errorf("ParsePasskeyName(%q) accepted", bad)
		}
	}
}
