package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/softauthn"
	"github.com/userd/userd/test/totpgen"
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
					"code": {totpgen.MustCode(t, s.secret, s.e.clock.Now())}})
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

// refreshTokenOf is the refresh token that a console cookie holds, read
// as the pages read it (the secret box, the cookie's purpose, its JSON):
// what a stolen or forgotten cookie would still refresh.
func (e *env) refreshTokenOf(c *http.Cookie) string {
	e.t.Helper()
	sealed, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		e.t.Fatal(err)
	}
	plain, err := e.box.Open(sealed, []byte("userd console session v1"))
	if err != nil {
		e.t.Fatal(err)
	}
	var st struct {
		Refresh string `json:"r"`
	}
	if err := json.Unmarshal(plain, &st); err != nil || st.Refresh == "" {
		e.t.Fatalf("the cookie holds no refresh token: %v", err)
	}
	return st.Refresh
}

// sessionList lists the account's live sessions, as its owner's GET
// /api/users/me/sessions and the account page do.
func (e *env) sessionList(email string) []application.SessionView {
	e.t.Helper()
	u := e.user(email)
	list, err := e.svc.Sessions.List(context.Background(), &domain.Principal{UserID: u.ID, Profiles: u.Profiles}, string(u.ID))
	if err != nil {
		e.t.Fatal(err)
	}
	return list
}

// wantLapsed checks that the session of refresh is over without its
// cookie coming back: not listed, and its refresh token refused.
func (e *env) wantLapsed(email, refresh string) {
	e.t.Helper()
	if list := e.sessionList(email); len(list) != 0 {
		e.t.Errorf("a lapsed console session is listed: %d sessions, expiresAt %s", len(list), list[0].ExpiresAt)
	}
	if _, err := e.svc.Auth.Refresh(context.Background(), refresh); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
		e.t.Errorf("the refresh token of a lapsed console session: %v, want ErrRefreshTokenInvalid", err)
	}
}

// A session of the pages carries the console's limits in the store: the
// list says its real end (8 h after the sign-in), and a session left
// alone ends there on its own, with no request of its cookie: after 30
// minutes without a request (the store sees the refreshes only, which
// the pages make at least once per access-token lifetime in use: it
// counts that lifetime and the verifier's leeway on top), and 8 hours
// after the sign-in however busy. A session of the API keeps the
// deployment's lifetime.
func TestConsole_a_lapsed_session_ends_without_its_cookie(t *testing.T) {
	t.Parallel()
	// The store's idle limit: the pages' idle timeout, an access token's
	// lifetime and the verifier's leeway (the env has no reuse grace).
	storeIdle := web.ConsoleIdleTimeout + application.DefaultEndedSessionKeep

	t.Run("listed_with_its_real_end", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.addUser(rootEmail, true)
		signedIn := e.clock.Now()
		e.signedInUser(rootEmail)
		if _, err := e.svc.Auth.Login(context.Background(), application.LoginInput{Email: rootEmail, Password: custPassword}); err != nil {
			t.Fatal(err)
		}
		ends := map[time.Duration]int{}
		for _, s := range e.sessionList(rootEmail) {
			ends[s.ExpiresAt.Sub(signedIn)]++
		}
		if len(ends) != 2 || ends[web.ConsoleAbsoluteTimeout] != 1 || ends[90*24*time.Hour] != 1 {
			t.Errorf("sessions end after %v, want one after %v (the pages') and one after 90 days (the API's)", ends,
				web.ConsoleAbsoluteTimeout)
		}
	})

	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.addUser(rootEmail, true)
		v := e.signedInUser(rootEmail)
		// In use for a while: the pages refresh the access token.
		e.clock.Advance(20 * time.Minute)
		wantPage(t, v.get("/account/"), http.StatusOK, "My account")
		refresh := e.refreshTokenOf(v.cookie)

		// Then left alone, the cookie never sent again.
		e.clock.Advance(storeIdle - time.Second)
		if n := len(e.sessionList(rootEmail)); n != 1 {
			t.Fatalf("%d sessions within the store's idle limit, want 1", n)
		}
		e.clock.Advance(time.Second)
		e.wantLapsed(rootEmail, refresh)
	})

	t.Run("absolute", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.addUser(rootEmail, true)
		signedIn := e.clock.Now()
		v := e.signedInUser(rootEmail)
		// Busy all day, up to the last request before its end.
		for e.clock.Now().Add(25 * time.Minute).Before(signedIn.Add(web.ConsoleAbsoluteTimeout)) {
			e.clock.Advance(25 * time.Minute)
			wantPage(t, v.get("/account/"), http.StatusOK, "My account")
		}
		refresh := e.refreshTokenOf(v.cookie)
		e.clock.Set(signedIn.Add(web.ConsoleAbsoluteTimeout - time.Second))
		if n := len(e.sessionList(rootEmail)); n != 1 {
			t.Fatalf("%d sessions a second before the end, want 1", n)
		}
		e.clock.Set(signedIn.Add(web.ConsoleAbsoluteTimeout))
		e.wantLapsed(rootEmail, refresh)
	})

	// Housekeeping deletes a session of the pages with the expired ones,
	// once past its 8 hours (and the margins every session gets), not 90
	// days later.
	t.Run("purged", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, withPurger)
		e.addUser(rootEmail, true)
		signedIn := e.clock.Now()
		refresh := e.refreshTokenOf(e.signedInUser(rootEmail).cookie)
		e.clock.Set(signedIn.Add(web.ConsoleAbsoluteTimeout + application.DefaultEndedSessionKeep + domain.PurgeMargin + time.Second))
		if _, err := e.svc.Housekeeping.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.store.RefreshTokens().Lookup(context.Background(), e.refreshHash(refresh)); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
			t.Errorf("the session's token after housekeeping: %v, want it purged (ErrRefreshTokenInvalid)", err)
		}
	})
}

// refreshHash is what the store keeps of a refresh token.
func (e *env) refreshHash(token string) string { return e.codec.Hash(token) }
