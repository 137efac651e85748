package mfaflow

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/test/kit"
)

// oathCode asks oathtool for the TOTP code of the base32 secret at a
// time: what an authenticator app shows then.
func oathCode(t *testing.T, bin, secret string, at time.Time) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	//nolint:gosec // G204: the test's own oathtool, with the secret the server gave
	cmd := exec.CommandContext(ctx, bin, "--totp", "-b", "--now=@"+strconv.FormatInt(at.Unix(), 10), secret)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	return strings.TrimSpace(string(out))
}

// mfaRequired is the body of a 401 mfa_required.
type mfaRequired struct {
	Code       string   `json:"code"`
	MFAToken   string   `json:"mfaToken"`
	MFAMethods []string `json:"mfaMethods"`
}

// passwordStep signs in with the password of an account with a second
// factor and returns the mfaToken of the 401 mfa_required.
func passwordStep(t *testing.T, base, email string) mfaRequired {
	t.Helper()
	var m mfaRequired
	kit.Want(t, "login with the password", kit.Send(t, http.MethodPost, base+"/auth/login",
		map[string]string{"email": email, "password": userPassword}, ""), http.StatusUnauthorized, &m)
	if m.Code != "mfa_required" || len(m.MFAToken) != 43 {
		t.Fatalf("login with the password: code %q, mfaToken %q", m.Code, m.MFAToken)
	}
	return m
}

// TestTOTP_oathtool enrols TOTP on the running binary and signs in with
// the codes oathtool makes from the secret the server gave: the code
// confirms the factor, a password login then asks for a second step, a
// code of the next time step finishes it with amr pwd+otp+mfa and acr
// aal2, and the same code again is refused. The otpauth URI the server
// gave, drawn as userd's QR code, reads back the same through zbarimg.
func TestTOTP_oathtool(t *testing.T) {
	t.Parallel()
	oathtool := kit.Tool(t, "oathtool", "oathtool", "the codes are not made by OATH Toolkit")
	zbarimg := kit.Tool(t, "zbarimg", "zbar-tools", "the QR code is not read back")
	n := startUserd(t, map[string]string{"USERD_TOTP_ISSUER": "userd e2e"})
	base := n.Base
	const email = "totp@example.com"
	register(t, base, email)
	var tok kit.Tokens
	kit.Want(t, "login", kit.Send(t, http.MethodPost, base+"/auth/login",
		map[string]string{"email": email, "password": userPassword}, ""), http.StatusOK, &tok)
	wantSignIn(t, "password login", tok.AccessToken, []string{"pwd"}, "aal1")

	var enrol struct {
		Secret     string `json:"secret"`
		OTPAuthURI string `json:"otpauthUri"`
	}
	kit.Want(t, "enrol TOTP", kit.Send(t, http.MethodPost, base+"/api/users/me/mfa/totp",
		map[string]string{"currentPassword": userPassword}, tok.AccessToken), http.StatusCreated, &enrol)
	uri, err := url.Parse(enrol.OTPAuthURI)
	if err != nil {
		t.Fatal(err)
	}
	q := uri.Query()
	if uri.Scheme != "otpauth" || uri.Host != "totp" || q.Get("secret") != enrol.Secret || q.Get("issuer") != "userd e2e" {
		t.Errorf("otpauth URI %q does not name the secret %q and the issuer", enrol.OTPAuthURI, enrol.Secret)
	}
	for k, v := range map[string]string{"algorithm": "SHA1", "digits": "6", "period": "30"} {
		if got := q.Get(k); got != "" && got != v {
			t.Errorf("otpauth URI: %s=%s, oathtool's default (and the contract's) is %s", k, got, v)
		}
	}

	// The QR code of the URI reads back as the URI.
	img, err := web.TOTPQRCode(enrol.OTPAuthURI)
	if err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(t.TempDir(), "totp.png")
	if err := os.WriteFile(png, img, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, zbarimg, "--raw", "-q", png).Output() //nolint:gosec // G204: the test's own zbarimg and file
	if err != nil {
		t.Fatalf("zbarimg: %v", err)
	}
	if got := strings.TrimRight(string(out), "\n"); got != enrol.OTPAuthURI {
		t.Errorf("zbarimg read %q, want %q", got, enrol.OTPAuthURI)
	}

	// Confirm with the code of now: ten recovery codes, the factor active.
	now := time.Now()
	var rc struct {
		RecoveryCodes []string `json:"recoveryCodes"`
	}
	kit.Want(t, "confirm", kit.Send(t, http.MethodPost, base+"/api/users/me/mfa/totp/confirm",
		map[string]string{"code": oathCode(t, oathtool, enrol.Secret, now)}, tok.AccessToken), http.StatusOK, &rc)
	if len(rc.RecoveryCodes) != 10 {
		t.Errorf("%d recovery codes, want 10", len(rc.RecoveryCodes))
	}
	kit.Want(t, "log out", kit.Send(t, http.MethodPost, base+"/auth/logout",
		map[string]string{"refreshToken": tok.RefreshToken}, ""), http.StatusNoContent, nil)

	// The password alone no longer signs in.
	m := passwordStep(t, base, email)
	if strings.Join(m.MFAMethods, ",") != "totp,recovery_code" {
		t.Errorf("mfaMethods %q, want totp and recovery_code", m.MFAMethods)
	}
	// The step of now is used by the confirmation: the next step's code,
	// within the window of one step either side, finishes the sign-in.
	next := oathCode(t, oathtool, enrol.Secret, now.Add(30*time.Second))
	var mfaTok kit.Tokens
	kit.Want(t, "second step with oathtool's code", kit.Send(t, http.MethodPost, base+"/auth/login/mfa",
		map[string]string{"mfaToken": m.MFAToken, "code": next}, ""), http.StatusOK, &mfaTok)
	wantSignIn(t, "TOTP login", mfaTok.AccessToken, []string{"pwd", "otp", "mfa"}, "aal2")
	var me struct {
		MFAEnabled bool `json:"mfaEnabled"`
	}
	kit.Want(t, "me", kit.Send(t, http.MethodGet, base+"/api/users/me", nil, mfaTok.AccessToken), http.StatusOK, &me)
	if !me.MFAEnabled {
		t.Error("mfaEnabled is false after the confirmation")
	}

	// The same code again, on a fresh mfaToken: a replay.
	m = passwordStep(t, base, email)
	r := kit.Send(t, http.MethodPost, base+"/auth/login/mfa", map[string]string{"mfaToken": m.MFAToken, "code": next}, "")
	if r.Status != http.StatusUnauthorized || r.Code() != "invalid_mfa_code" {
		t.Errorf("a reused code: %d %s, want 401 invalid_mfa_code", r.Status, r.Body)
	}
	// The token survives one wrong code: a recovery code finishes.
	kit.Want(t, "second step with a recovery code", kit.Send(t, http.MethodPost, base+"/auth/login/mfa",
		map[string]string{"mfaToken": m.MFAToken, "recoveryCode": rc.RecoveryCodes[0]}, ""), http.StatusOK, &mfaTok)
	wantSignIn(t, "recovery-code login", mfaTok.AccessToken, []string{"pwd", "otp", "mfa"}, "aal2")
}
