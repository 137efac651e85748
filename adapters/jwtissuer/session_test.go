package jwtissuer

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/userd/userd/domain"
)

// The session claims of the contract: sid, auth_time, amr and acr, written
// on every token and read back into the principal.
func TestIssuer_session_claims(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		amr     domain.AMR
		wantACR string
	}{
		{"password", domain.AMRPassword, "aal1"},
		{"password_and_totp", domain.AMRPasswordOTP, "aal2"},
		{"password_and_passkey", domain.AMRPasswordPasskey, "aal2"},
		{"passkey_user_verified", domain.AMRPasskeyVerified, "aal2"},
		{"passkey_without_verification", domain.AMRPasskey, "aal1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			iss, _, _ := newTestIssuer(t)
			s := testSession
			s.AMR = tc.amr
			at, err := iss.Issue(context.Background(), testUser, s, domain.HookClaims{})
			if err != nil {
				t.Fatal(err)
			}
			payload := decodeSegment(t, at.Token, 1)
			var (
				sid, acr string
				amr      []string
				authTime int64
			)
			for name, dst := range map[string]any{"sid": &sid, "acr": &acr, "amr": &amr, "auth_time": &authTime} {
				if err := json.Unmarshal(payload[name], dst); err != nil {
					t.Fatalf("claim %s: %v (payload %s)", name, err, payload[name])
				}
			}
			if sid != s.ID || acr != tc.wantACR || !slices.Equal(amr, tc.amr) || authTime != s.AuthTime.Unix() {
				t.Errorf("claims sid=%q acr=%q amr=%v auth_time=%d; want %q %q %v %d",
					sid, acr, amr, authTime, s.ID, tc.wantACR, tc.amr, s.AuthTime.Unix())
			}
			p, err := iss.Verify(context.Background(), at.Token)
			if err != nil {
				t.Fatal(err)
			}
			if p.Session.ID != s.ID || !p.Session.AuthTime.Equal(s.AuthTime) || !slices.Equal(p.Session.AMR, tc.amr) {
				t.Errorf("principal session = %+v, want %+v", p.Session, s)
			}
			// The cached path gives the same.
			if p2, err := iss.Verify(context.Background(), at.Token); err != nil || !slices.Equal(p2.Session.AMR, tc.amr) {
				t.Errorf("second Verify = %+v, %v", p2.Session, err)
			}
		})
	}
}

// A token whose amr names an unknown method, or whose acr does not follow
// from its amr, was not made by us: refused.
func TestIssuer_refuses_inconsistent_session_claims(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		amr  []string
		acr  string
	}{
		{"unknown_method", []string{"pwd", "face"}, "aal1"},
		{"repeated_method", []string{"pwd", "pwd"}, "aal1"},
		{"acr_raised", []string{"pwd"}, "aal2"},
		{"acr_lowered", []string{"pwd", "otp", "mfa"}, "aal1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			iss, _, clk := newTestIssuer(t)
			c := claimsAt(clk.Now())
			c["amr"], c["acr"], c["sid"] = tc.amr, tc.acr, "s"
			token := signWith(t, iss, c, nil)
			if _, err := iss.Verify(context.Background(), token); err == nil {
				t.Error("Verify accepted the token")
			}
		})
	}
	// Without session claims (a token of an earlier version): a password
	// session of unknown age.
	iss, _, clk := newTestIssuer(t)
	p, err := iss.Verify(context.Background(), signWith(t, iss, claimsAt(clk.Now()), nil))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Session.AMR, domain.AMRPassword) || !p.Session.AuthTime.IsZero() || p.Session.ID != "" {
		t.Errorf("session of an old token = %+v", p.Session)
	}
}
