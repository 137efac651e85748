package httpapi_test

import (
	"bytes"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	pqtotp "github.com/pquerna/otp/totp"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/softauthn"
)

// Bodies of the second-factor routes; decoding them with
// DisallowUnknownFields proves they carry nothing else.
type mfaSummaryBody struct {
	TOTP              bool `json:"totp"`
	Passkeys          int  `json:"passkeys"`
	RecoveryCodesLeft int  `json:"recoveryCodesLeft"`
}

type totpEnrolmentBody struct {
	Secret     string `json:"secret"`
	OTPAuthURI string `json:"otpauthUri"`
}

type recoveryCodesBody struct {
	RecoveryCodes []string `json:"recoveryCodes"`
}

// mfaRequiredBody is the problem of a right password for an account with
// a second factor: no token, but the extension members of the next step.
type mfaRequiredBody struct {
	problemBody
	MFAToken   string   `json:"mfaToken"`
	MFAMethods []string `json:"mfaMethods"`
}

// accessClaims are the claims of an access token that say how its session
// signed in.
type accessClaims struct {
	Sub      string   `json:"sub"`
	Sid      string   `json:"sid"`
	AuthTime *int64   `json:"auth_time"`
	AMR      []string `json:"amr"`
	ACR      string   `json:"acr"`
}

// claimsOf decodes the payload of an access token. The signature is the
// issuer's business (its own tests); here the claims are what matter.
func claimsOf(t *testing.T, token string) accessClaims {
	t.Helper()
	var c accessClaims
	kit.DecodePart(t, token, 1, &c)
	return c
}

// wantSession checks how the session of an access token signed in.
func wantSession(t *testing.T, token string, amr []string, acr string) accessClaims {
	t.Helper()
	c := claimsOf(t, token)
	if !slices.Equal(c.AMR, amr) || c.ACR != acr {
		t.Errorf("amr %q acr %q, want %q %q", c.AMR, c.ACR, amr, acr)
	}
	if c.Sid == "" || c.AuthTime == nil || *c.AuthTime == 0 {
		t.Errorf("sid %q auth_time %v: want both set", c.Sid, c.AuthTime)
	}
	return c
}

var (
	amrPassword        = []string{"pwd"}
	amrPasswordOTP     = []string{"pwd", "otp", "mfa"}
	amrPasswordPasskey = []string{"pwd", "hwk", "mfa"}
	amrPasskeyVerified = []string{"hwk", "user"}
	amrPasskey         = []string{"hwk"}
)

var recoveryCodePattern = regexp.MustCompile(`^[0-9a-z]{5}-[0-9a-z]{5}$`)

// totpCode is the code an authenticator app shows at at.
func totpCode(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	code, err := pqtotp.GenerateCodeCustom(secret, at, pqtotp.ValidateOpts{
		Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// wrongCode is a well-formed code that no step within the window of at
// gives.
func wrongCode(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	near := []string{totpCode(t, secret, at.Add(-30*time.Second)), totpCode(t, secret, at), totpCode(t, secret, at.Add(30*time.Second))}
	for i := 0; ; i++ {
		c := fmt.Sprintf("%06d", 123456+i*7919)
		if !slices.Contains(near, c) {
			return c
		}
	}
}

// now is the server's clock.
func (s *testServer) now() time.Time { return s.clock.Now() }

func (s *testServer) mfaSummary(token string) mfaSummaryBody {
	s.t.Helper()
	var b mfaSummaryBody
	wantJSON(s.t, s.do("GET", "/api/users/me/mfa", nil, withToken(token)), http.StatusOK, &b)
	return b
}

func (s *testServer) me(token string) userBody {
	s.t.Helper()
	var u userBody
	wantJSON(s.t, s.do("GET", "/api/users/me", nil, withToken(token)), http.StatusOK, &u)
	return u
}

// enrolTOTP enrols and confirms a TOTP factor for the holder of token (a
// customer with custPassword), and returns its secret and recovery codes.
// The clock then moves on by a step, so that the next code is a fresh one.
func (s *testServer) enrolTOTP(token string) (secret string, codes []string) {
	s.t.Helper()
	var e totpEnrolmentBody
	wantJSON(s.t, s.do("POST", "/api/users/me/mfa/totp", map[string]string{"currentPassword": custPassword}, withToken(token)),
		http.StatusCreated, &e)
	var rc recoveryCodesBody
	wantJSON(s.t, s.do("POST", "/api/users/me/mfa/totp/confirm", map[string]string{"code": totpCode(s.t, e.Secret, s.now())},
		withToken(token)), http.StatusOK, &rc)
	s.clock.Advance(30 * time.Second)
	return e.Secret, rc.RecoveryCodes
}

// totpCustomer registers a customer with a confirmed TOTP factor.
func (s *testServer) totpCustomer(name, email string) (u userBody, tb tokenBody, secret string, codes []string) {
	s.t.Helper()
	u, tb = s.customer(name, email)
	secret, codes = s.enrolTOTP(tb.AccessToken)
	return u, tb, secret, codes
}

// mfaRequired signs in with a right password and expects the second step.
func (s *testServer) mfaRequired(email, password string) mfaRequiredBody {
	s.t.Helper()
	res := s.do("POST", "/auth/login", map[string]string{"email": email, "password": password})
	if res.Status != http.StatusUnauthorized {
		s.t.Fatalf("login: status %d, want 401 mfa_required; body %s", res.Status, res.Body)
	}
	if mt := mediaType(res.Header); mt != "application/problem+json" {
		s.t.Errorf("Content-Type = %q", res.Header.Get("Content-Type"))
	}
	var b mfaRequiredBody
	dec := json.NewDecoder(bytes.NewReader(res.Body))
	dec.DisallowUnknownFields() // no accessToken, no refreshToken
	if err := dec.Decode(&b); err != nil {
		s.t.Fatalf("mfa_required body %s: %v", res.Body, err)
	}
	if b.Code != "mfa_required" || b.Status != http.StatusUnauthorized || len(b.MFAToken) != 43 {
		s.t.Fatalf("mfa_required body %s", res.Body)
	}
	return b
}

// loginMFA sends the second step with a TOTP code.
func (s *testServer) loginMFA(mfaToken, code string) response {
	s.t.Helper()
	return s.do("POST", "/auth/login/mfa", map[string]string{"mfaToken": mfaToken, "code": code})
}

// loginTOTP signs in with password and TOTP code of now.
func (s *testServer) loginTOTP(email, secret string) tokenBody {
	s.t.Helper()
	ch := s.mfaRequired(email, custPassword)
	var tb tokenBody
	wantJSON(s.t, s.loginMFA(ch.MFAToken, totpCode(s.t, secret, s.now())), http.StatusOK, &tb)
	return tb
}

func TestMFA_totp_enrolment(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, tb := s.customer("Ada", "ada@example.com")
	tok := tb.AccessToken
	if got := s.mfaSummary(tok); got != (mfaSummaryBody{}) {
		t.Errorf("summary before: %+v", got)
	}

	for _, tt := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"missing_current_password", map[string]any{}, http.StatusBadRequest, "validation_failed"},
		{"empty_current_password", map[string]any{"currentPassword": ""}, http.StatusBadRequest, "validation_failed"},
		{"wrong_current_password", map[string]any{"currentPassword": "wrong-Secret-Phrase-3"}, http.StatusUnauthorized, "invalid_credentials"},
	} {
		p := wantProblem(t, s.do("POST", "/api/users/me/mfa/totp", tt.body, withToken(tok)), tt.status, tt.code)
		if tt.code == "validation_failed" && !slices.Equal(p.Fields(), []string{"currentPassword"}) {
			t.Errorf("%s: fields %q", tt.name, p.Fields())
		}
	}
	wantProblem(t, s.do("POST", "/api/users/me/mfa/totp", map[string]string{"currentPassword": custPassword}),
		http.StatusUnauthorized, "unauthorized")

	var e totpEnrolmentBody
	wantJSON(t, s.do("POST", "/api/users/me/mfa/totp", map[string]string{"currentPassword": custPassword}, withToken(tok)),
		http.StatusCreated, &e)
	if raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(e.Secret); err != nil || len(raw) < 16 {
		t.Errorf("secret %q: %d bytes, %v; want base32 of at least 128 bits", e.Secret, len(raw), err)
	}
	u, err := url.Parse(e.OTPAuthURI)
	if err != nil || u.Scheme != "otpauth" || u.Host != "totp" {
		t.Fatalf("otpauthUri %q: %v", e.OTPAuthURI, err)
	}
	q := u.Query()
	if q.Get("issuer") != "userd" || q.Get("secret") != e.Secret || !strings.Contains(u.Path, "ada@example.com") ||
		!strings.HasPrefix(u.Path, "/userd:") {
		t.Errorf("otpauthUri %q: want issuer userd, the email and the secret", e.OTPAuthURI)
	}
	if got := s.mfaSummary(tok); got.TOTP || s.me(tok).MFAEnabled {
		t.Errorf("a pending factor counts as enabled: %+v", got)
	}

	right := totpCode(t, e.Secret, s.now())
	for _, tt := range []struct {
		name string
		code string
	}{
		{"wrong_code", wrongCode(t, e.Secret, s.now())},
		{"code_with_spaces", right[:3] + " " + right[3:]},
		{"code_with_surrounding_spaces", " " + right + " "},
		{"five_digits", right[:5]},
		{"seven_digits", right + "0"},
		{"letters", "abcdef"},
		{"recovery_code_shape", "abcde-fghij"},
		{"unicode_digits", "١٢٣٤٥٦"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantProblem(t, s.do("POST", "/api/users/me/mfa/totp/confirm", map[string]string{"code": tt.code}, withToken(tok)),
				http.StatusBadRequest, "invalid_mfa_code")
		})
	}
	p := wantProblem(t, s.do("POST", "/api/users/me/mfa/totp/confirm", map[string]any{}, withToken(tok)),
		http.StatusBadRequest, "validation_failed")
	if !slices.Equal(p.Fields(), []string{"code"}) {
		t.Errorf("fields %q", p.Fields())
	}

	var rc recoveryCodesBody
	wantJSON(t, s.do("POST", "/api/users/me/mfa/totp/confirm", map[string]string{"code": right}, withToken(tok)), http.StatusOK, &rc)
	if len(rc.RecoveryCodes) != 10 {
		t.Fatalf("%d recovery codes, want 10", len(rc.RecoveryCodes))
	}
	for _, c := range rc.RecoveryCodes {
		if !recoveryCodePattern.MatchString(c) {
			t.Errorf("recovery code %q", c)
		}
	}
	if distinct := slices.Compact(slices.Sorted(slices.Values(rc.RecoveryCodes))); len(distinct) != 10 {
		t.Errorf("recovery codes repeat: %q", rc.RecoveryCodes)
	}
	if got := s.mfaSummary(tok); got != (mfaSummaryBody{TOTP: true, RecoveryCodesLeft: 10}) {
		t.Errorf("summary after: %+v", got)
	}
	if !s.me(tok).MFAEnabled {
		t.Error("mfaEnabled false after confirmation")
	}
	wantProblem(t, s.do("POST", "/api/users/me/mfa/totp", map[string]string{"currentPassword": custPassword}, withToken(tok)),
		http.StatusConflict, "mfa_already_enabled")
	wantProblem(t, s.do("POST", "/api/users/me/mfa/totp/confirm", map[string]string{"code": right}, withToken(tok)),
		http.StatusConflict, "mfa_already_enabled")
}

func TestMFA_login_with_totp(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, _, secret, _ := s.totpCustomer("Ada", "ada@example.com")

	ch := s.mfaRequired("ada@example.com", custPassword)
	if !slices.Equal(ch.MFAMethods, []string{"totp", "recovery_code"}) {
		t.Errorf("mfaMethods %q", ch.MFAMethods)
	}
	if ch.Detail == "" || ch.Instance != "/auth/login" || ch.Title != "Unauthorized" {
		t.Errorf("incomplete problem: %+v", ch.problemBody)
	}

	signedIn := s.now()
	var tb tokenBody
	res := s.loginMFA(ch.MFAToken, totpCode(t, secret, s.now()))
	wantJSON(t, res, http.StatusOK, &tb)
	if res.Header.Get("Cache-Control") != "no-store" || tb.TokenType != "Bearer" || tb.RefreshToken == "" || !tb.User.MFAEnabled {
		t.Errorf("token response %s", res.Body)
	}
	c := wantSession(t, tb.AccessToken, amrPasswordOTP, "aal2")
	if *c.AuthTime != signedIn.Unix() || c.Sub != tb.User.ID {
		t.Errorf("auth_time %d sub %s, want %d %s", *c.AuthTime, c.Sub, signedIn.Unix(), tb.User.ID)
	}

	// Refresh keeps how and when the session signed in.
	s.clock.Advance(5 * time.Minute)
	next := s.refreshOK(tb.RefreshToken)
	nc := wantSession(t, next.AccessToken, amrPasswordOTP, "aal2")
	if nc.Sid != c.Sid || *nc.AuthTime != *c.AuthTime {
		t.Errorf("refresh changed the session: sid %s→%s auth_time %d→%d", c.Sid, nc.Sid, *c.AuthTime, *nc.AuthTime)
	}

	// A plain password user signs in at once, single-factor.
	_, plain := s.customer("Bob", "bob@example.com")
	pc := wantSession(t, plain.AccessToken, amrPassword, "aal1")
	pn := wantSession(t, s.refreshOK(plain.RefreshToken).AccessToken, amrPassword, "aal1")
	if pn.Sid != pc.Sid || *pn.AuthTime != *pc.AuthTime {
		t.Errorf("refresh changed the session: %+v → %+v", pc, pn)
	}
}

func TestMFA_totp_code_is_used_once(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, _, secret, _ := s.totpCustomer("Ada", "ada@example.com")
	code := totpCode(t, secret, s.now())
	wantJSON(t, s.loginMFA(s.mfaRequired("ada@example.com", custPassword).MFAToken, code), http.StatusOK, nil)
	wantProblem(t, s.loginMFA(s.mfaRequired("ada@example.com", custPassword).MFAToken, code),
		http.StatusUnauthorized, "invalid_mfa_code")
	// Ten seconds later the step is the same: still a replay.
	s.clock.Advance(10 * time.Second)
	wantProblem(t, s.loginMFA(s.mfaRequired("ada@example.com", custPassword).MFAToken, code),
		http.StatusUnauthorized, "invalid_mfa_code")
}

func TestMFA_totp_time_window(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		offset time.Duration
		ok     bool
	}{
		{"previous_step", -30 * time.Second, true},
		{"current_step", 0, true},
		{"next_step", 30 * time.Second, true},
		{"two_steps_back", -60 * time.Second, false},
		{"two_steps_ahead", 60 * time.Second, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTestServer(t)
			_, _, secret, _ := s.totpCustomer("Ada", "ada@example.com")
			// Far enough from the confirmation that its step is not in
			// play; 15 s into a step, as a user's clock would be.
			s.clock.Advance(5*time.Minute + 15*time.Second)
			res := s.loginMFA(s.mfaRequired("ada@example.com", custPassword).MFAToken, totpCode(t, secret, s.now().Add(tt.offset)))
			if tt.ok {
				wantJSON(t, res, http.StatusOK, nil)
			} else {
				wantProblem(t, res, http.StatusUnauthorized, "invalid_mfa_code")
			}
		})
	}
}

func TestMFA_wrong_codes_void_the_token_and_lock_the_email(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, _, secret, _ := s.totpCustomer("Ada", "ada@example.com")
	ch := s.mfaRequired("ada@example.com", custPassword)
	for i := range 5 {
		if p := wantProblem(t, s.loginMFA(ch.MFAToken, wrongCode(t, secret, s.now())), http.StatusUnauthorized, "invalid_mfa_code"); t.Failed() {
			t.Fatalf("wrong code %d: %+v", i+1, p)
		}
	}
	wantProblem(t, s.loginMFA(ch.MFAToken, totpCode(t, secret, s.now())), http.StatusUnauthorized, "invalid_mfa_token")
	res := s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": custPassword})
	wantProblem(t, res, http.StatusTooManyRequests, "too_many_attempts")
	if res.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
}

func TestMFA_login_mfa_refusals(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, _, secret, codes := s.totpCustomer("Ada", "ada@example.com")

	used := s.mfaRequired("ada@example.com", custPassword).MFAToken
	wantJSON(t, s.loginMFA(used, totpCode(t, secret, s.now())), http.StatusOK, nil)
	s.clock.Advance(30 * time.Second)
	live := s.mfaRequired("ada@example.com", custPassword).MFAToken

	for _, tt := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"used_token", map[string]string{"mfaToken": used, "code": totpCode(t, secret, s.now())}, http.StatusUnauthorized, "invalid_mfa_token"},
		{"unknown_token", map[string]string{"mfaToken": strings.Repeat("A", 43), "code": totpCode(t, secret, s.now())}, http.StatusUnauthorized, "invalid_mfa_token"},
		{"malformed_token", map[string]string{"mfaToken": "not a token", "code": totpCode(t, secret, s.now())}, http.StatusUnauthorized, "invalid_mfa_token"},
		{"missing_token", map[string]string{"code": totpCode(t, secret, s.now())}, http.StatusBadRequest, "validation_failed"},
		{"code_and_recovery_code", map[string]string{"mfaToken": live, "code": totpCode(t, secret, s.now()), "recoveryCode": codes[0]},
			http.StatusBadRequest, "validation_failed"},
		{"neither_code_nor_recovery_code", map[string]string{"mfaToken": live}, http.StatusBadRequest, "validation_failed"},
		{"empty_code", map[string]string{"mfaToken": live, "code": ""}, http.StatusBadRequest, "validation_failed"},
		{"unknown_field", map[string]string{"mfaToken": live, "otp": "123456"}, http.StatusBadRequest, "unknown_field"},
		{"malformed_json", `{"mfaToken":`, http.StatusBadRequest, "malformed_json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantProblem(t, s.do("POST", "/auth/login/mfa", tt.body), tt.status, tt.code)
		})
	}
	// None of those spent the live token or a recovery code.
	var tb tokenBody
	wantJSON(t, s.do("POST", "/auth/login/mfa", map[string]string{"mfaToken": live, "recoveryCode": codes[0]}), http.StatusOK, &tb)

	expired := s.mfaRequired("ada@example.com", custPassword).MFAToken
	s.clock.Advance(5*time.Minute + time.Second)
	wantProblem(t, s.loginMFA(expired, totpCode(t, secret, s.now())), http.StatusUnauthorized, "invalid_mfa_token")
}

func TestMFA_recovery_code_login(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, _, _, codes := s.totpCustomer("Ada", "ada@example.com")

	var tb tokenBody
	wantJSON(t, s.do("POST", "/auth/login/mfa", map[string]string{
		"mfaToken": s.mfaRequired("ada@example.com", custPassword).MFAToken, "recoveryCode": strings.ToUpper(codes[0])}),
		http.StatusOK, &tb)
	wantSession(t, tb.AccessToken, amrPasswordOTP, "aal2")
	if got := s.mfaSummary(tb.AccessToken); got.RecoveryCodesLeft != 9 {
		t.Errorf("summary %+v, want 9 codes left", got)
	}
	for _, tt := range []struct {
		name string
		code string
	}{
		{"used_code", codes[0]},
		{"unknown_code", "aaaaa-aaaaa"},
		{"malformed_code", "not-a-code"},
		{"totp_code_as_recovery_code", "123456"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantProblem(t, s.do("POST", "/auth/login/mfa", map[string]string{
				"mfaToken": s.mfaRequired("ada@example.com", custPassword).MFAToken, "recoveryCode": tt.code}),
				http.StatusUnauthorized, "invalid_mfa_code")
		})
	}
}

func TestMFA_disable_totp(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, tb, secret, codes := s.totpCustomer("Ada", "ada@example.com")
	tok := tb.AccessToken

	for _, tt := range []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"wrong_code", map[string]string{"code": wrongCode(t, secret, s.now())}, http.StatusBadRequest, "invalid_mfa_code"},
		{"wrong_recovery_code", map[string]string{"code": "aaaaa-aaaaa"}, http.StatusBadRequest, "invalid_mfa_code"},
		{"letters", map[string]string{"code": "abcdef"}, http.StatusBadRequest, "invalid_mfa_code"},
		{"missing_code", map[string]string{}, http.StatusBadRequest, "validation_failed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantProblem(t, s.do("DELETE", "/api/users/me/mfa/totp", tt.body, withToken(tok)), tt.status, tt.code)
		})
	}
	wantProblem(t, s.do("DELETE", "/api/users/me/mfa/totp", map[string]string{"code": codes[1]}),
		http.StatusUnauthorized, "unauthorized")

	wantNoContent(t, s.do("DELETE", "/api/users/me/mfa/totp", map[string]string{"code": codes[1]}, withToken(tok)))
	if s.me(tok).MFAEnabled {
		t.Error("mfaEnabled still true")
	}
	if got := s.mfaSummary(tok); got != (mfaSummaryBody{}) {
		t.Errorf("summary after: %+v; the recovery codes go with the last factor", got)
	}
	wantProblem(t, s.do("DELETE", "/api/users/me/mfa/totp", map[string]string{"code": codes[2]}, withToken(tok)),
		http.StatusConflict, "mfa_not_enabled")
	wantSession(t, s.login("ada@example.com", custPassword).AccessToken, amrPassword, "aal1")
}

func TestMFA_disable_totp_with_a_totp_code(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, tb, secret, _ := s.totpCustomer("Ada", "ada@example.com")
	wantNoContent(t, s.do("DELETE", "/api/users/me/mfa/totp", map[string]string{"code": totpCode(t, secret, s.now())},
		withToken(tb.AccessToken)))
	s.login("ada@example.com", custPassword)
}

func TestMFA_renew_recovery_codes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, tb, secret, old := s.totpCustomer("Ada", "ada@example.com")
	tok := tb.AccessToken

	wantProblem(t, s.do("POST", "/api/users/me/mfa/recovery-codes", map[string]string{"code": wrongCode(t, secret, s.now())},
		withToken(tok)), http.StatusBadRequest, "invalid_mfa_code")
	wantProblem(t, s.do("POST", "/api/users/me/mfa/recovery-codes", nil, withToken(tok)),
		http.StatusBadRequest, "validation_failed")

	var rc recoveryCodesBody
	wantJSON(t, s.do("POST", "/api/users/me/mfa/recovery-codes", map[string]string{"code": totpCode(t, secret, s.now())},
		withToken(tok)), http.StatusOK, &rc)
	if len(rc.RecoveryCodes) != 10 {
		t.Fatalf("%d codes", len(rc.RecoveryCodes))
	}
	for _, c := range rc.RecoveryCodes {
		if !recoveryCodePattern.MatchString(c) || slices.Contains(old, c) {
			t.Errorf("new recovery code %q: malformed or one of the old", c)
		}
	}
	if got := s.mfaSummary(tok); got.RecoveryCodesLeft != 10 {
		t.Errorf("summary %+v", got)
	}
	wantProblem(t, s.do("POST", "/auth/login/mfa", map[string]string{
		"mfaToken": s.mfaRequired("ada@example.com", custPassword).MFAToken, "recoveryCode": old[0]}),
		http.StatusUnauthorized, "invalid_mfa_code")
	wantJSON(t, s.do("POST", "/auth/login/mfa", map[string]string{
		"mfaToken": s.mfaRequired("ada@example.com", custPassword).MFAToken, "recoveryCode": rc.RecoveryCodes[0]}),
		http.StatusOK, nil)

	// Without any second factor there is nothing to renew.
	_, plain := s.customer("Bob", "bob@example.com")
	wantProblem(t, s.do("POST", "/api/users/me/mfa/recovery-codes", nil, withToken(plain.AccessToken)),
		http.StatusConflict, "mfa_not_enabled")
}

func TestMFA_admin_reset(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	ada, adaTok, _, _ := s.totpCustomer("Ada", "ada@example.com")
	_, bob := s.customer("Bob", "bob@example.com")

	for _, tt := range []struct {
		name   string
		path   string
		token  string
		status int
		code   string
	}{
		{"anonymous", "/api/users/" + ada.ID + "/mfa", "", http.StatusUnauthorized, "unauthorized"},
		{"anonymous_bad_id", "/api/users/nope/mfa", "", http.StatusUnauthorized, "unauthorized"},
		{"customer_bad_id", "/api/users/nope/mfa", bob.AccessToken, http.StatusBadRequest, "invalid_id"},
		{"customer_other_user", "/api/users/" + ada.ID + "/mfa", bob.AccessToken, http.StatusForbidden, "forbidden"},
		{"customer_missing_user", "/api/users/" + missingID + "/mfa", bob.AccessToken, http.StatusForbidden, "forbidden"},
		{"customer_itself", "/api/users/me/mfa", bob.AccessToken, http.StatusForbidden, "forbidden"},
		{"admin_bad_id", "/api/users/ABCDEF/mfa", admin, http.StatusBadRequest, "invalid_id"},
		{"admin_missing_user", "/api/users/" + missingID + "/mfa", admin, http.StatusNotFound, "not_found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var opts []reqOption
			if tt.token != "" {
				opts = append(opts, withToken(tt.token))
			}
			wantProblem(t, s.do("DELETE", tt.path, nil, opts...), tt.status, tt.code)
		})
	}

	wantNoContent(t, s.do("DELETE", "/api/users/"+ada.ID+"/mfa", nil, withToken(admin)))
	s.refreshFails(adaTok.RefreshToken)
	var got userBody
	wantJSON(t, s.do("GET", "/api/users/"+ada.ID, nil, withToken(admin)), http.StatusOK, &got)
	if got.MFAEnabled {
		t.Error("mfaEnabled still true after the reset")
	}
	fresh := s.login("ada@example.com", custPassword) // one step again
	if sum := s.mfaSummary(fresh.AccessToken); sum != (mfaSummaryBody{}) {
		t.Errorf("summary after the reset: %+v", sum)
	}

	// me names the admin itself; an admin without factors may reset them.
	wantNoContent(t, s.do("DELETE", "/api/users/me/mfa", nil, withToken(admin)))
	wantNoContent(t, s.do("DELETE", "/api/users/me/mfa", "{}", withToken(s.login(adminEmail, adminPassword).AccessToken)))
}

// TestMFA_audit_and_logs_hold_no_secrets runs every second-factor flow with
// the audit trail on, then checks that each left its event and that no
// audit row or log line holds a TOTP secret, a code, an mfaToken or a
// recovery code.
func TestMFA_audit_and_logs_hold_no_secrets(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit())
	s.createAdmin()
	ada, tb := s.customer("Ada", "ada@example.com")
	var secrets, codes []string // codes: six digits, matched as whole numbers

	secret, recovery := s.enrolTOTP(tb.AccessToken) // mfa.totp_enabled
	secrets = append(secrets, secret)
	secrets = append(secrets, recovery...)

	ch := s.mfaRequired("ada@example.com", custPassword)
	bad := wrongCode(t, secret, s.now())
	wantProblem(t, s.loginMFA(ch.MFAToken, bad), http.StatusUnauthorized, "invalid_mfa_code")
	good := totpCode(t, secret, s.now())
	wantJSON(t, s.loginMFA(ch.MFAToken, good), http.StatusOK, nil)
	secrets, codes = append(secrets, ch.MFAToken), append(codes, bad, good)

	ch = s.mfaRequired("ada@example.com", custPassword) // mfa.recovery_code_used
	wantJSON(t, s.do("POST", "/auth/login/mfa", map[string]string{"mfaToken": ch.MFAToken, "recoveryCode": strings.ToUpper(recovery[0])}),
		http.StatusOK, nil)
	secrets = append(secrets, ch.MFAToken, strings.ToUpper(recovery[0]))

	s.clock.Advance(30 * time.Second)
	renewWith := totpCode(t, secret, s.now())
	var renewed recoveryCodesBody // mfa.recovery_codes_renewed
	wantJSON(t, s.do("POST", "/api/users/me/mfa/recovery-codes", map[string]string{"code": renewWith}, withToken(tb.AccessToken)),
		http.StatusOK, &renewed)
	codes = append(codes, renewWith)
	secrets = append(secrets, renewed.RecoveryCodes...)

	// mfa.totp_disabled, and a recovery code used
	wantNoContent(t, s.do("DELETE", "/api/users/me/mfa/totp", map[string]string{"code": renewed.RecoveryCodes[0]}, withToken(tb.AccessToken)))

	a := softauthn.New(testOrigin)
	p := s.addPasskey(tb.AccessToken, a, "") // passkey.registered
	ch = s.mfaRequired("ada@example.com", custPassword)
	o := s.beginPasskeyLogin(ch.MFAToken)
	wantJSON(t, s.finishPasskeyLogin(o.CeremonyID, assertion(t, o, a, softauthn.Faults{}), ch.MFAToken), http.StatusOK, nil)
	secrets = append(secrets, ch.MFAToken)
	wantNoContent(t, s.do("DELETE", "/api/users/me/passkeys/"+p.ID, currentPassword(custPassword), withToken(tb.AccessToken))) // passkey.removed

	second, more := s.enrolTOTP(tb.AccessToken)
	secrets = append(secrets, second)
	secrets = append(secrets, more...)
	admin := s.login(adminEmail, adminPassword).AccessToken
	wantNoContent(t, s.do("DELETE", "/api/users/"+ada.ID+"/mfa", nil, withToken(admin))) // mfa.reset

	events, res := s.auditPage(admin, "?limit=200")
	count := map[string]int{}
	for _, e := range events {
		if strings.HasPrefix(e.Type, "mfa.") || strings.HasPrefix(e.Type, "passkey.") {
			if e.SubjectID != ada.ID {
				t.Errorf("%s: subject %s, want %s", e.Type, e.SubjectID, ada.ID)
			}
			count[e.Type]++
		}
	}
	want := map[string]int{"mfa.totp_enabled": 2, "mfa.totp_disabled": 1, "mfa.recovery_codes_renewed": 1,
		"mfa.recovery_code_used": 2, "mfa.reset": 1, "passkey.registered": 1, "passkey.removed": 1}
	for typ, n := range want {
		if count[typ] != n {
			t.Errorf("%d %s events, want %d (all: %v)", count[typ], typ, n, count)
		}
	}

	logs := s.logs.String()
	if !strings.Contains(logs, "totp enabled") {
		t.Fatal("the logs buffer holds none of the flows")
	}
	for _, where := range []struct {
		name string
		text string
	}{{"the audit trail", withoutNoise(t, string(res.Body))}, {"the log", withoutNoise(t, logs)}} {
		for _, secret := range secrets {
			if strings.Contains(where.text, secret) || strings.Contains(where.text, strings.ToUpper(secret)) {
				t.Errorf("%s holds the secret %q", where.name, secret)
			}
		}
		for _, code := range codes {
			if regexp.MustCompile(`(^|[^0-9])` + code + `([^0-9]|$)`).MatchString(where.text) {
				t.Errorf("%s holds the code %q", where.name, code)
			}
		}
	}
}

// withoutNoise drops, from JSON objects one a line or an array of them,
// the members whose values are made of random or clock digits (ids, times,
// latencies) that a six-digit code could appear in by chance.
func withoutNoise(t *testing.T, text string) string {
	t.Helper()
	noise := []string{"id", "time", "latency", "request_id", "requestId", "ceremonyId"}
	var objects []map[string]any
	if strings.HasPrefix(text, "[") {
		if err := json.Unmarshal([]byte(text), &objects); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			objects = append(objects, m)
		}
	}
	var b strings.Builder
	for _, m := range objects {
		for _, k := range noise {
			delete(m, k)
		}
		line, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}
