package web_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/application"
)

// pagesSessionID is the id of the session the pages opened for the
// account of email: the one listed besides a fresh one of the API.
func (e *env) pagesSessionID(email string) string {
	e.t.Helper()
	return e.pagesSessionIDWith(email, custPassword)
}

// pagesSessionIDWith is pagesSessionID for an account whose password is
// password.
func (e *env) pagesSessionIDWith(email, password string) string {
	e.t.Helper()
	ctx := context.Background()
	res, err := e.svc.Auth.Login(ctx, application.LoginInput{Email: email, Password: password})
	if err != nil || res.Tokens == nil {
		e.t.Fatalf("login %s: %v", email, err)
	}
	p, err := e.svc.Auth.Authenticate(ctx, res.Tokens.Access.Token)
	if err != nil {
		e.t.Fatal(err)
	}
	list, err := e.svc.Sessions.List(ctx, p, string(p.UserID))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range list {
		if s.ID != p.Session.ID {
			return s.ID
		}
	}
	e.t.Fatal("the pages opened no session")
	return ""
}

func TestSSO_every_sign_in_sets_the_providers_cookie(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{web.AccountPrefix, web.AdminPrefix} {
		t.Run(prefix, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			f := e.withFakeProvider()
			u := e.addUser("root@example.com", true)
			v := e.visitor()
			res := v.signIn(prefix, "root@example.com", custPassword)
			c := cookieOf(res, web.SSOCookie)
			if c == nil {
				t.Fatalf("no %s cookie: %v", web.SSOCookie, res.Header)
			}
			if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Domain != "" ||
				c.MaxAge != int(web.ConsoleIdleTimeout/time.Second) {
				t.Errorf("the cookie's attributes: %+v", c)
			}
			// The provider's pages read it: who, and which session.
			f.step = application.AuthorizeStep{Location: "https://app.example/cb?code=x"}
			wantRedirect(t, v.get(continuePath), "https://app.example/cb?code=x")
			b := f.lastContinue(t).browser
			if b == nil || b.UserID != u.ID || b.SessionID != e.pagesSessionID("root@example.com") {
				t.Errorf("the browser session: %+v", b)
			}
		})
	}
}

func TestSSO_cookie_is_sealed_for_its_purpose(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.withFakeProvider()
	e.addUser("ada@example.com", false)
	v := e.visitor()
	v.signIn(web.AccountPrefix, "ada@example.com", custPassword)
	f.step = application.AuthorizeStep{SignIn: true}
	good := v.sso.Value

	// The console cookie's value under the provider's name, the same
	// session's fields sealed for another purpose, a value changed by one
	// character, and garbage: none is a browser session, and each is
	// cleared.
	plain := []byte(`{"u":"x","s":"y","i":` + itoa(e.clock.Now().Unix()) + `,"t":` + itoa(e.clock.Now().Unix()) + `}`)
	otherAD, err := e.box.Seal(plain, []byte("userd console session v1"))
	if err != nil {
		t.Fatal(err)
	}
	flipped := []byte(good)
	flipped[len(flipped)/2] ^= 1
	for _, value := range []string{v.cookie.Value, base64.RawURLEncoding.EncodeToString(otherAD), string(flipped), "garbage"} {
		res := e.get(continuePath, func(r *http.Request) { r.Header.Set("Cookie", web.SSOCookie+"="+value) })
		if b := f.lastContinue(t).browser; b != nil {
			t.Errorf("%.20s… is a browser session: %+v", value, b)
		}
		wantCleared(t, res, web.SSOCookie)
	}
	// The console cookie alone is no browser session for the provider.
	e.get(continuePath, func(r *http.Request) { r.AddCookie(v.cookie) })
	if b := f.lastContinue(t).browser; b != nil {
		t.Errorf("the console cookie is a browser session: %+v", b)
	}
}

func TestSSO_cookie_times_out_as_the_consoles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.withFakeProvider()
	e.addUser("ada@example.com", false)
	f.step = application.AuthorizeStep{SignIn: true}
	v := e.visitor()
	v.signIn(web.AccountPrefix, "ada@example.com", custPassword)

	// Read every 20 minutes, it lives on: its idle time is renewed.
	for range 3 {
		e.clock.Advance(20 * time.Minute)
		res := v.get(continuePath)
		if f.lastContinue(t).browser == nil {
			t.Fatal("a browser session read within its idle time is gone")
		}
		if c := cookieOf(res, web.SSOCookie); c == nil || c.MaxAge != int(web.ConsoleIdleTimeout/time.Second) {
			t.Fatalf("the read does not renew the cookie: %v", c)
		}
	}
	// 31 minutes without a read: gone, and cleared.
	e.clock.Advance(31 * time.Minute)
	res := v.get(continuePath)
	if f.lastContinue(t).browser != nil {
		t.Error("an idle browser session still serves")
	}
	wantCleared(t, res, web.SSOCookie)

	// However busy, it ends 8 hours after the sign-in; the cookie's
	// Max-Age says what is left of them.
	w := e.visitor()
	w.signIn(web.AccountPrefix, "ada@example.com", custPassword)
	for range 15 {
		e.clock.Advance(29 * time.Minute)
		w.get(continuePath)
	}
	e.clock.Advance(29 * time.Minute)
	res = w.get(continuePath)
	left := web.ConsoleAbsoluteTimeout - 16*29*time.Minute
	if c := cookieOf(res, web.SSOCookie); f.lastContinue(t).browser == nil || c == nil || c.MaxAge != int(left/time.Second) {
		t.Fatalf("at 8 h less %v: %v", left, c)
	}
	e.clock.Advance(left)
	res = w.get(continuePath)
	if f.lastContinue(t).browser != nil {
		t.Error("a browser session past 8 hours still serves")
	}
	wantCleared(t, res, web.SSOCookie)
}

func TestSSO_signing_out_clears_both_cookies(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{web.AccountPrefix, web.AdminPrefix} {
		t.Run(prefix, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.withFakeProvider()
			e.addUser("root@example.com", true)
			v := e.visitor()
			v.signIn(prefix, "root@example.com", custPassword)
			before := *v
			res := v.post(prefix+"logout", url.Values{})
			wantCleared(t, res, web.ConsoleCookie)
			wantCleared(t, res, web.SSOCookie)
			if e.canUseSession(&before) {
				t.Error("the session lives on after the sign-out")
			}
		})
	}
}

func TestSSO_not_set_while_the_provider_is_off(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	res := e.visitor().signIn(web.AccountPrefix, "ada@example.com", custPassword)
	if c := cookieOf(res, web.SSOCookie); c != nil {
		t.Errorf("the provider is off, and the sign-in sets %v", c)
	}
	for _, path := range []string{continuePath, web.EndSessionPath} {
		wantPage(t, e.get(path), http.StatusNotFound, "Page not found")
	}
	wantPage(t, e.post(web.ConsentPath, url.Values{"request": {requestID}}), http.StatusNotFound, "Page not found")
}

// canUseSession reports whether the console session of v still serves
// the account page.
func (e *env) canUseSession(v *visitorSession) bool {
	e.t.Helper()
	if v.cookie == nil {
		return false
	}
	res := e.get(web.AccountPrefix, func(r *http.Request) { r.AddCookie(v.cookie) })
	return res.Status == http.StatusOK
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestSSO_cleared_when_the_session_ends_by_a_change: a change that ends
// every session of the account (the password here) leaves the browser
// with neither cookie, and signing out this browser's own session from
// the sessions page does too.
func TestSSO_cleared_when_the_session_ends_by_a_change(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withFakeProvider()
	e.addUser("ada@example.com", false)
	v := e.visitor()
	v.signIn(web.AccountPrefix, "ada@example.com", custPassword)
	res := v.post("/account/password", url.Values{"currentPassword": {custPassword}, "password": {newPassword},
		"confirm": {newPassword}})
	wantRedirect(t, res, "/account/login?done=password-changed")
	wantCleared(t, res, web.ConsoleCookie)
	wantCleared(t, res, web.SSOCookie)

	w := e.visitor()
	w.signIn(web.AccountPrefix, "ada@example.com", newPassword)
	sid := e.pagesSessionIDWith("ada@example.com", newPassword)
	res = w.post("/account/sessions/"+sid+"/sign-out", url.Values{})
	wantCleared(t, res, web.ConsoleCookie)
	wantCleared(t, res, web.SSOCookie)
}
