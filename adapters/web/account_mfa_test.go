package web_test

import (
	"bytes"
	"encoding/base64"
	"html"
	"image/png"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/totpgen"
)

// totpSecret is the secret that the set-up page shows to type by hand.
var totpSecret = regexp.MustCompile(`<code id="totp-secret">([A-Z2-7 ]+)</code>`)

// qrPNG is the QR code of the set-up page.
var qrPNG = regexp.MustCompile(`<img src="data:image/png;base64,([^"]+)" alt="QR code for your authenticator app"`)

// recoveryCodes are the codes of the codes page.
var recoveryCodes = regexp.MustCompile(`<li><code>([a-z0-9]{5}-[a-z0-9]{5})</code></li>`)

// setUpTOTP begins a set-up at the two-step page and returns the secret
// shown.
func setUpTOTP(t *testing.T, v *visitorSession) string {
	t.Helper()
	a := v.post("/account/mfa/totp", url.Values{"currentPassword": {custPassword}})
	wantPage(t, a, http.StatusOK, "Set up your authenticator app")
	m := totpSecret.FindStringSubmatch(a.Body)
	q := qrPNG.FindStringSubmatch(a.Body)
	if m == nil || q == nil {
		t.Fatalf("no secret or no QR code:\n%s", a.Body)
	}
	raw, err := base64.StdEncoding.DecodeString(html.UnescapeString(q[1]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Fatalf("the QR code is not a PNG: %v", err)
	}
	return strings.ReplaceAll(m[1], " ", "")
}

func TestAccount_totp_set_up_renew_and_turn_off(t *testing.T) {
	t.Parallel()
	audit := memory.NewAuditLog()
	e := newEnv(t, withAccountAudit(audit))
	u := e.addUser("ada@example.com", false)
	v := e.signedInUser("ada@example.com")

	mfa := v.get("/account/mfa")
	if !strings.Contains(mfa.Body, `id="totp-set-up">Set up</button>`) {
		t.Fatalf("no set-up button:\n%s", mfa.Body)
	}
	wrong := v.post("/account/mfa/totp", url.Values{"currentPassword": {"wrong password"}})
	wantPage(t, wrong, http.StatusUnauthorized, "Two-step verification")
	wantField(t, wrong, "currentPassword", "The current password is not right.")

	secret := setUpTOTP(t, v)
	// A wrong first code: the form again, without the QR code, with the
	// way to start again.
	bad := v.post("/account/mfa/totp/confirm", url.Values{"code": {"12345"}})
	wantPage(t, bad, http.StatusBadRequest, "Set up your authenticator app")
	wantField(t, bad, "code", "The code is not right.")
	if qrPNG.MatchString(bad.Body) || totpSecret.MatchString(bad.Body) || !strings.Contains(bad.Body, `id="totp-restart"`) {
		t.Errorf("after a wrong code: the QR code again, or no way to start again:\n%s", bad.Body)
	}

	codes := v.post("/account/mfa/totp/confirm", url.Values{"code": {totpgen.MustCode(t, secret, e.clock.Now())}})
	wantPage(t, codes, http.StatusOK, "Save your recovery codes")
	list := recoveryCodes.FindAllStringSubmatch(codes.Body, -1)
	if len(list) != domain.RecoveryCodeCount || !strings.Contains(codes.Body, "Keep these codes somewhere safe") ||
		!strings.Contains(codes.Body, `action="/account/recovery-codes.txt"`) {
		t.Fatalf("the codes page:\n%s", codes.Body)
	}
	if !audited(t, audit, domain.AuditTOTPEnabled, u.ID, u.ID) {
		t.Error("no mfa.totp_enabled event")
	}
	// The page says it is on; a second set-up is refused.
	mfa = v.get("/account/mfa")
	if !strings.Contains(mfa.Body, `id="totp-turn-off"`) || !strings.Contains(mfa.Body, "You have 10 unused recovery codes.") {
		t.Errorf("the two-step page after the set-up:\n%s", mfa.Body)
	}
	wantDone(t, v, v.post("/account/mfa/totp", url.Values{"currentPassword": {custPassword}}), "/account/mfa",
		"totp-on-already", "Two-step verification", "The authenticator app is on already.")

	// New recovery codes, proven by a code: the error tied to its own
	// input of the two.
	e.clock.Advance(30 * time.Second)
	renewBad := v.post("/account/mfa/recovery-codes", url.Values{"code": {"000000"}})
	wantPage(t, renewBad, http.StatusBadRequest, "Two-step verification")
	wantField(t, renewBad, "renew-code", "The code is not right.")
	if strings.Contains(renewBad.Body, `id="disable-code-error"`) {
		t.Error("the error shows beside the other form's code too")
	}
	renewed := v.post("/account/mfa/recovery-codes", url.Values{"code": {totpgen.MustCode(t, secret, e.clock.Now())}})
	wantPage(t, renewed, http.StatusOK, "Save your recovery codes")
	if fresh := recoveryCodes.FindAllStringSubmatch(renewed.Body, -1); len(fresh) != domain.RecoveryCodeCount || fresh[0][1] == list[0][1] {
		t.Error("no new codes")
	}
	if !audited(t, audit, domain.AuditRecoveryCodesRenewed, u.ID, u.ID) {
		t.Error("no mfa.recovery_codes_renewed event")
	}

	// Signing in now asks for the code.
	other := e.visitor()
	wantPage(t, other.signIn("/account/", "ada@example.com", custPassword), http.StatusOK, "Confirm it is you")

	// Turning it off needs a code.
	e.clock.Advance(30 * time.Second)
	offBad := v.post("/account/mfa/totp/disable", url.Values{"code": {""}})
	wantPage(t, offBad, http.StatusBadRequest, "Two-step verification")
	wantField(t, offBad, "disable-code", "The code must not be empty.")
	wantDone(t, v, v.post("/account/mfa/totp/disable", url.Values{"code": {totpgen.MustCode(t, secret, e.clock.Now())}}),
		"/account/mfa", "totp-off", "Two-step verification", "The authenticator app is turned off")
	if e.user("ada@example.com").MFAEnabled || !strings.Contains(v.get("/account/mfa").Body, `id="totp-set-up"`) {
		t.Error("still on")
	}
	if !audited(t, audit, domain.AuditTOTPDisabled, u.ID, u.ID) {
		t.Error("no mfa.totp_disabled event")
	}
}

func TestAccount_recovery_codes_download(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	v := e.signedInUser("ada@example.com")
	codes := url.Values{"codes": {"abcde-12345", "FGHIJ-67890"}}

	a := v.post("/account/recovery-codes.txt", codes)
	if a.Status != http.StatusOK || a.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		a.Header.Get("Content-Disposition") != `attachment; filename="userd-recovery-codes.txt"` ||
		a.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%d %v", a.Status, a.Header)
	}
	if !strings.Contains(a.Body, "\nabcde-12345\nfghij-67890\n") || !strings.Contains(a.Body, "ada@example.com") {
		t.Errorf("the file:\n%s", a.Body)
	}
	for _, garbage := range []url.Values{
		{}, {"codes": {"<script>alert(1)</script>"}}, {"codes": {"abcde-12345", "abcde12345x"}},
		{"codes": {"abcde-12345\nhello"}}, {"codes": strings.Fields(strings.Repeat("abcde-12345 ", 11))},
	} {
		a := v.post("/account/recovery-codes.txt", garbage)
		wantPage(t, a, http.StatusBadRequest, "These are not recovery codes")
		if strings.Contains(a.Body, "alert(1)") {
			t.Error("the posted text is reflected")
		}
	}
	if res := v.get("/account/recovery-codes.txt"); res.Status != http.StatusMethodNotAllowed {
		t.Errorf("GET of the download: %d", res.Status)
	}
	// Signed out: to the sign-in page, nothing answered.
	wantRedirect(t, e.visitor().post("/account/recovery-codes.txt", codes), "/account/login")
}
