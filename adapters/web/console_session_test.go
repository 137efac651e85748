package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/userd/userd/test/softauthn"
)

// signInWithPasskey signs in at the area's sign-in page with a passkey
// alone, as its script does: the options, the authenticator's answer,
// the form.
func (v *visitorSession) signInWithPasskey(t *testing.T, prefix string, key *softauthn.Authenticator) answer {
	t.Helper()
	o := v.post(prefix+"login/passkey/options", url.Values{})
	var options struct {
		CeremonyID string          `json:"ceremonyId"`
		PublicKey  json.RawMessage `json:"publicKey"`
	}
	if err := json.Unmarshal([]byte(o.Body), &options); err != nil || options.CeremonyID == "" {
		t.Fatalf("options: %d %s: %v", o.Status, o.Body, err)
	}
	cred, err := key.Get(options.PublicKey, softauthn.Faults{})
	if err != nil {
		t.Fatal(err)
	}
	return v.post(prefix+"login/passkey", url.Values{"ceremonyId": {options.CeremonyID}, "credential": {string(cred)}})
}

// wantSignedOut checks that cookie opens no session any more.
func wantSignedOut(t *testing.T, e *env, cookie *http.Cookie) {
	t.Helper()
	v := e.visitor()
	v.cookie = cookie
	wantRedirect(t, v.get("/account/"), "/account/login")
}

// signInAgain is one way of signing in, for a browser v that may
// hold a cookie already.
type signInAgain struct {
	e      *env
	v      *visitorSession
	key    *softauthn.Authenticator
	secret string
}

// A sign-in over a cookie that still holds a session ends that session:
// the browser drops the old cookie for the new, and nobody could end the
// old session from it any more. So on every sign-in form of both areas.
func TestConsole_signing_in_again_ends_the_session_of_the_cookie_it_replaces(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want string
		// prepare gives the account what the sign-in needs.
		prepare func(t *testing.T, s *signInAgain)
		// signIn signs s.v in again, over the cookie it holds.
		signIn func(t *testing.T, s *signInAgain) answer
	}{
		{name: "password_admin", want: "/admin/", signIn: func(_ *testing.T, s *signInAgain) answer {
			return s.v.signIn("/admin/", rootEmail, custPassword)
		}},
		{name: "password_account", want: "/account/", signIn: func(_ *testing.T, s *signInAgain) answer {
			return s.v.signIn("/account/", rootEmail, custPassword)
		}},
		{name: "second_step_code", want: "/admin/",
			prepare: func(_ *testing.T, s *signInAgain) { s.secret = s.e.enrolTOTP(rootEmail) },
			signIn: func(t *testing.T, s *signInAgain) answer {
				s.e.clock.Advance(time.Minute) // a fresh time step for the code
				step := s.v.signIn("/admin/", rootEmail, custPassword)
				m := hiddenMFAToken.FindStringSubmatch(step.Body)
				if m == nil {
					t.Fatalf("no second step:\n%s", step.Body)
				}
				return s.v.post("/admin/login/code", url.Values{"mfaToken": {m[1]},
					"code": {totpCode(t, s.secret, s.e.clock.Now())}})
			}},
		{name: "passkey", want: "/account/",
			prepare: func(t *testing.T, s *signInAgain) {
				wantDone(t, s.v, addPasskey(t, s.v, s.key, "Laptop"), "/account/passkeys", "passkey-added", "Passkeys",
					"The passkey is added.")
			},
			signIn: func(t *testing.T, s *signInAgain) answer { return s.v.signInWithPasskey(t, "/account/", s.key) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.addUser(rootEmail, true)
			s := &signInAgain{e: e, v: e.signedInUser(rootEmail), key: softauthn.New("http://localhost:8080")}
			if tc.prepare != nil {
				tc.prepare(t, s)
			}
			// The first sign-in's session, as its cookie holds it (adding
			// a factor may renew the cookie, not the session; enrolling
			// TOTP opens a session of its own).
			old := *s.v.cookie
			before := e.activeSessions(rootEmail)

			wantRedirect(t, tc.signIn(t, s), tc.want)
			if s.v.cookie == nil || s.v.cookie.Value == old.Value {
				t.Fatal("the second sign-in set no new cookie")
			}
			if n := e.activeSessions(rootEmail); n != before {
				t.Errorf("%d sessions after signing in again over a live cookie, want %d: the replaced one lives on", n, before)
			}
			wantSignedOut(t, e, &old)
			wantPage(t, s.v.get("/account/"), http.StatusOK, "My account")
		})
	}
}

// What is not a sign-in that replaces the cookie ends nothing: a wrong
// password, and a non-admin's sign-in at the console, which is refused
// and sets no cookie.
func TestConsole_a_refused_sign_in_keeps_the_session(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser(rootEmail, true)
	e.addUser("ada@example.com", false)

	v := e.signedInUser(rootEmail)
	wantPage(t, v.signIn("/admin/", rootEmail, "not the password"), http.StatusUnauthorized, "Sign in")
	wantPage(t, v.get("/admin/users"), http.StatusOK, "Users")

	ada := e.signedInUser("ada@example.com")
	wantPage(t, ada.signIn("/admin/", "ada@example.com", custPassword), http.StatusForbidden, "Administrators only")
	wantPage(t, ada.get("/account/"), http.StatusOK, "My account")
	for _, email := range []string{rootEmail, "ada@example.com"} {
		if n := e.activeSessions(email); n != 1 {
			t.Errorf("%s: %d sessions, want the one signed in", email, n)
		}
	}
}
