package oidcflow

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/userd/userd/test/chromium"
	"github.com/userd/userd/test/kit"
)

// rpResult is what rp.mjs reports of a code flow.
type rpResult struct {
	TokenType         string         `json:"tokenType"`
	Scope             string         `json:"scope"`
	ExpiresIn         int            `json:"expiresIn"`
	HasRefreshToken   bool           `json:"hasRefreshToken"`
	IDTokenHeader     map[string]any `json:"idTokenHeader"`
	AccessTokenHeader map[string]any `json:"accessTokenHeader"`
	Claims            map[string]any `json:"claims"`
	UserInfo          map[string]any `json:"userinfo"`
	Introspection     map[string]any `json:"introspection"`
	Refresh           struct {
		Scope          string         `json:"scope"`
		Rotated        bool           `json:"rotated"`
		NewAccessToken bool           `json:"newAccessToken"`
		Claims         map[string]any `json:"claims"`
		UserInfo       attempt        `json:"userinfo"`
	} `json:"refresh"`
	AfterRevocation struct {
		Refresh       attempt        `json:"refresh"`
		UserInfo      attempt        `json:"userinfo"`
		Introspection map[string]any `json:"introspection"`
	} `json:"afterRevocation"`
}

// attempt is a call of the script that may have thrown: the library's
// error name and code, and the server's OAuth error and status.
type attempt struct {
	OK      bool            `json:"ok"`
	Value   json.RawMessage `json:"value"`
	Name    string          `json:"name"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Error   string          `json:"error"`
	Status  int             `json:"status"`
	// Challenge is the scheme of a WWW-Authenticate challenge.
	Challenge string `json:"challenge"`
}

// The pages the browser meets on its way through a flow.
const (
	pageSignIn   = "sign-in"
	pageConsent  = "consent"
	pageRedirect = "redirect"
	// pageApp is the client's own page (newCallback's "Back at the
	// app"): the flow is over, though its listener's hit may not have
	// been read yet.
	pageApp   = "app"
	pageOther = "other"
)

// whichPage names the provider's page the tab shows.
const whichPage = `document.querySelector("#consent-allow") ? "consent"
  : document.querySelector("form #password") ? "sign-in"
  : document.querySelector("a#continue") ? "redirect"
  : document.title === "Back at the app" ? "app" : "other"`

// browserFlow opens authURL in the tab and goes through the provider's
// pages as a person would (the sign-in page with email and password, the
// consent page's Allow) until the provider sends the browser to the
// client's listener, and returns that URL and the pages met on the way.
func browserFlow(t *testing.T, b *chromium.Browser, cb *callback, authURL, email string) (string, []string) {
	t.Helper()
	b.Navigate(t, authURL)
	var seen []string
	for range 6 {
		if u := cb.wait(100 * time.Millisecond); u != "" {
			return u, seen
		}
		page := chromium.Evaluate[string](t, b, whichPage)
		if page != pageRedirect && page != pageApp { // whether it is seen before it goes on is a race
			seen = append(seen, page)
		}
		switch page {
		case pageSignIn:
			b.Do(t, chromedp.SendKeys("#email", email), chromedp.SendKeys("#password", userPassword))
			b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
		case pageConsent:
			b.Submit(t, chromedp.Click("#consent-allow"), http.StatusOK)
		case pageRedirect, pageApp:
			// The page goes on by itself (meta refresh), or is there.
			if u := cb.wait(chromium.StepTimeout); u != "" {
				return u, seen
			}
			t.Fatalf("the page that goes on to the app did not: %s", b.Eval(t, "document.body.innerText"))
		default:
			if u := cb.wait(time.Second); u != "" {
				return u, seen
			}
			t.Fatalf("the flow stopped at %s: %s", b.Eval(t, "location.href"), b.Eval(t, "document.body.innerText"))
		}
	}
	t.Fatalf("the flow did not reach the client after the pages %v", seen)
	return "", nil
}

// TestOpenIDClient_code_flow_in_chromium: openid-client 6, a certified
// relying party library, through the code flow with PKCE, nonce and
// state against the real binary, a person in headless Chromium signing in
// and consenting on userd's pages: a confidential client (RS256,
// client_secret_basic), a public one (EdDSA, no secret), and the first
// again (client_secret_post) with fewer scopes, which the remembered
// consent lets through without a page. The library checks the ID token
// and the authorization response itself; the test checks what it
// reports: the claims of each scope, userinfo, introspection, the
// refresh's rotation, and that a revoked refresh token ends its
// session's tokens.
func TestOpenIDClient_code_flow_in_chromium(t *testing.T) {
	t.Parallel()
	nodeModules(t, "openid-client")
	b := chromium.Start(t)
	p := startProvider(t)
	const email = "ada@example.com"
	userID := p.register(t, "Ada Lovelace", email)
	cb := newCallback(t)
	signedOut := strings.TrimSuffix(cb.uri, "/cb") + "/signed-out"
	web := p.newClient(t, "Analytical Engine", map[string]any{"postLogoutRedirectUris": []string{signedOut}})
	spa := p.newClient(t, "Difference Engine", map[string]any{"type": "public", "idTokenSigningAlg": "EdDSA"})

	cases := []struct {
		name       string
		client     client
		clientAuth string
		alg        string
		scope      string
		pages      []string
		// signOut ends with RP-Initiated Logout.
		signOut bool
	}{
		{"confidential_RS256_basic", web, "basic", "RS256", "openid profile email offline_access", []string{pageSignIn, pageConsent}, false},
		{"public_EdDSA", spa, "", "EdDSA", "openid profile email profiles offline_access", []string{pageConsent}, false},
		{"confidential_post_consent_remembered_then_signed_out", web, "post", "RS256", "openid email offline_access", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			settings := map[string]string{
				"issuer": p.issuer, "clientId": c.client.ID, "clientSecret": c.client.Secret, "clientAuth": c.clientAuth,
				"alg": c.alg, "redirectUri": cb.uri, "scope": c.scope,
			}
			if c.signOut {
				settings["postLogoutRedirectUri"] = signedOut
			}
			s := startScript(t, "rp.mjs", settings, "openid-client")
			var start struct {
				URL string `json:"url"`
			}
			s.recv("authorize", &start)
			back, pages := browserFlow(t, b, cb, start.URL, email)
			if !slices.Equal(pages, c.pages) {
				t.Errorf("the browser met the pages %v, want %v", pages, c.pages)
			}
			if q := query(t, back); q.Get("iss") != p.issuer {
				t.Errorf("the authorization response's iss is %q, want %q (RFC 9207)", q.Get("iss"), p.issuer)
			}
			s.send(map[string]string{"callback": back})
			var r rpResult
			s.recv("result", &r)
			checkCodeFlow(t, p, c.client, c.alg, c.scope, person{userID, "Ada Lovelace", email}, r)
			if c.signOut {
				signOutAndBack(t, p, b, cb, s, c.client, signedOut)
			}
			// No page on the way was refused anything by its
			// Content-Security-Policy, nor failed to load.
			b.CheckConsole(t)
		})
	}

	// The account page's "Apps with access": removing the public
	// client's access ends its refresh tokens at once, and the next
	// sign-in to it asks for the consent again.
	t.Run("access_removed_on_account_page", func(t *testing.T) {
		a := p.signIn(t, email)
		tok := p.signedInTokens(t, a, spa, cb.uri, nil) // consent remembered: no page
		b.Open(t, p.issuer+"/account/apps", http.StatusOK)
		if chromium.Evaluate[string](t, b, whichPage) == pageSignIn {
			b.Do(t, chromedp.SendKeys("#email", email), chromedp.SendKeys("#password", userPassword))
			b.Submit(t, chromedp.KeyEvent(kb.Enter), http.StatusOK)
		}
		b.WantHeading(t, "Apps with access")
		if apps := b.Text(t, "#apps"); !strings.Contains(apps, "Difference Engine") || !strings.Contains(apps, "Analytical Engine") {
			t.Errorf("the apps with access: %q, want both engines", apps)
		}
		b.Submit(t, chromedp.Click("#revoke-"+spa.ID), http.StatusOK)
		if apps := b.Eval(t, `document.body.innerText`); strings.Contains(apps, "Difference Engine") {
			t.Errorf("the public client is still listed after its access was removed:\n%s", apps)
		}
		wantOAuthError(t, "the refresh token of an app whose access was removed", p.refresh(t, spa, tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
		p.wantUserInfoRefused(t, "the access token of an app whose access was removed", tok.AccessToken)
		if _, r, err := a.authorize(t, p.authRequest(spa, cb.uri, newPKCE(), map[string]string{"prompt": "none", "state": "again"})); err != nil {
			t.Errorf("prompt=none after the access was removed: %v (%d)", err, r.Status)
		} else if loc := r.Header.Get("Location"); !strings.Contains(loc, "error=consent_required") {
			t.Errorf("prompt=none after the access was removed went to %q, want consent_required", loc)
		}
		b.CheckConsole(t)
	})
}

// signOutAndBack follows the script's RP-Initiated Logout in the
// browser: the provider ends the browser's session at once (the hint is
// the app's ID token) and sends it back to the post-logout redirect URI
// with the state; then the app's prompt=none finds no session
// (login_required) and its plain request meets the sign-in page again.
func signOutAndBack(t *testing.T, p provider, b *chromium.Browser, cb *callback, s *script, c client, signedOut string) {
	t.Helper()
	var end struct {
		URL string `json:"url"`
	}
	s.recv("end_session", &end)
	b.Navigate(t, end.URL)
	back := cb.wait(chromium.StepTimeout)
	if q := query(t, back); !strings.HasPrefix(back, signedOut+"?") || q.Get("state") != "signed-out" {
		t.Fatalf("after end_session the browser is at %q, want %s with the state", back, signedOut)
	}
	b.Navigate(t, p.authRequest(c, cb.uri, newPKCE(), map[string]string{"prompt": "none", "state": "after"}))
	if loc := cb.wait(chromium.StepTimeout); loc == "" {
		t.Errorf("prompt=none after the sign-out did not come back to the app")
	} else {
		p.wantRedirectError(t, "prompt=none after the sign-out", loc, cb.uri, "login_required", "after")
	}
	b.Navigate(t, p.authRequest(c, cb.uri, newPKCE(), nil))
	if page := chromium.Evaluate[string](t, b, whichPage); page != pageSignIn {
		t.Errorf("the app's request after the sign-out shows the page %q, want the sign-in page", page)
	}
}

// person is a user as the claims name them.
type person struct{ id, name, email string }

// checkCodeFlow checks what rp.mjs reports of a code flow of client for
// the user, with the scopes asked.
func checkCodeFlow(t *testing.T, p provider, c client, alg, scope string, user person, r rpResult) {
	t.Helper()
	userID := user.id
	if !strings.EqualFold(r.TokenType, "Bearer") || r.ExpiresIn <= 0 || !r.HasRefreshToken {
		t.Errorf("token answer: token_type %q, expires_in %d, refresh token %v; want Bearer, > 0, one", r.TokenType, r.ExpiresIn, r.HasRefreshToken)
	}
	if !sameScopes(r.Scope, scope) {
		t.Errorf("scope %q, want %q", r.Scope, scope)
	}
	if r.IDTokenHeader["alg"] != alg || r.IDTokenHeader["kid"] == "" || r.IDTokenHeader["kid"] == nil {
		t.Errorf("the ID token's header %v, want alg %s and a kid", r.IDTokenHeader, alg)
	}
	if r.AccessTokenHeader["typ"] != "at+jwt" {
		t.Errorf("the access token's header %v, want typ at+jwt (RFC 9068)", r.AccessTokenHeader)
	}
	claims := r.Claims
	if claims["iss"] != p.issuer || claims["sub"] != userID || !audienceIs(claims["aud"], c.ID) {
		t.Errorf("ID token iss %v sub %v aud %v, want %s %s %s", claims["iss"], claims["sub"], claims["aud"], p.issuer, userID, c.ID)
	}
	for _, name := range []string{"exp", "iat", "auth_time", "nonce", "acr", "amr", "sid", "at_hash"} {
		if claims[name] == nil {
			t.Errorf("the ID token has no %s: %v", name, claims)
		}
	}
	scopes := strings.Fields(scope)
	wantScopeClaims(t, "the ID token", claims, scopes, user)
	if r.UserInfo["sub"] != userID {
		t.Errorf("userinfo's sub %v, want %s", r.UserInfo["sub"], userID)
	}
	wantScopeClaims(t, "userinfo", r.UserInfo, scopes, user)
	if c.Secret != "" {
		in := r.Introspection
		if in["active"] != true || in["sub"] != userID || in["client_id"] != c.ID || !sameScopes(in["scope"], scope) {
			t.Errorf("introspection of the access token: %v, want active, sub %s, client_id %s, scope %q", in, userID, c.ID, scope)
		}
		wantBearer(t, in)
	}
	if !r.Refresh.Rotated || !r.Refresh.NewAccessToken || !r.Refresh.UserInfo.OK {
		t.Errorf("refresh: rotated %v, new access token %v, its userinfo %+v; want a new pair that serves", r.Refresh.Rotated, r.Refresh.NewAccessToken, r.Refresh.UserInfo)
	}
	if rc := r.Refresh.Claims; rc != nil && (rc["sub"] != userID || !audienceIs(rc["aud"], c.ID)) {
		t.Errorf("the refresh's ID token: %v, want sub %s aud %s", rc, userID, c.ID)
	}
	if a := r.AfterRevocation.Refresh; a.OK || a.Error != "invalid_grant" {
		t.Errorf("a revoked refresh token used: %+v, want invalid_grant", a)
	}
	if a := r.AfterRevocation.UserInfo; a.OK || a.Status != http.StatusUnauthorized {
		t.Errorf("userinfo with the access token of a revoked session: %+v, want 401", a)
	}
	if in := r.AfterRevocation.Introspection; c.Secret != "" && (in["active"] != false || len(in) != 1) {
		t.Errorf("introspection of the access token of a revoked session: %v, want {\"active\":false} alone", in)
	}
}

// wantScopeClaims checks the claims of the scopes asked in what claims
// holds (an ID token, userinfo): profile's name and updated_at, email's
// email and email_verified, profiles' profiles; and none of a scope not
// asked.
func wantScopeClaims(t *testing.T, what string, claims map[string]any, scopes []string, user person) {
	t.Helper()
	has := func(name string) bool { _, ok := claims[name]; return ok }
	if slices.Contains(scopes, "profile") != (claims["name"] == user.name && has("updated_at")) {
		t.Errorf("%s: name %v, updated_at %v, with the scopes %v", what, claims["name"], claims["updated_at"], scopes)
	}
	if slices.Contains(scopes, "email") != (claims["email"] == user.email && has("email_verified")) {
		t.Errorf("%s: email %v, email_verified %v, with the scopes %v", what, claims["email"], claims["email_verified"], scopes)
	}
	if slices.Contains(scopes, "profiles") != has("profiles") {
		t.Errorf("%s: profiles %v, with the scopes %v", what, claims["profiles"], scopes)
	}
}

// sameScopes tells whether a space-separated list of scopes (a string,
// or anything else, which is not) holds the same scopes as want.
func sameScopes(got any, want string) bool {
	s, ok := got.(string)
	if !ok {
		return false
	}
	g, w := strings.Fields(s), strings.Fields(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

// audienceIs tells whether aud, a string or an array of them, is the
// client id alone.
func audienceIs(aud any, id string) bool {
	switch a := aud.(type) {
	case string:
		return a == id
	case []any:
		return len(a) == 1 && a[0] == id
	}
	return false
}

// wantBearer checks the token_type of an introspection of an access
// token: RFC 7662 (section 2.2) takes it from RFC 6749's section 5.1,
// the type a token answer names, which is Bearer here.
func wantBearer(t *testing.T, in map[string]any) {
	t.Helper()
	if tt, _ := in["token_type"].(string); !strings.EqualFold(tt, "Bearer") {
		t.Errorf("introspection's token_type is %v, want Bearer (RFC 7662 2.2, RFC 6749 5.1)", in["token_type"])
	}
}

// TestOpenIDClient_dynamic_registration: with
// USERD_OIDC_DYNAMIC_REGISTRATION=true the metadata lists
// registration_endpoint, and openid-client registers a public client
// there itself (RFC 7591) and goes through the code flow with it, the
// plain-HTTP agent as the browser (its consent page: a registered client
// is never first party). With the default, false, the metadata lists no
// registration_endpoint and POST /oauth2/register is 404.
func TestOpenIDClient_dynamic_registration(t *testing.T) {
	t.Parallel()
	nodeModules(t, "openid-client")
	closed := startProvider(t)
	var meta map[string]any
	kit.Want(t, "discovery", kit.Send(t, http.MethodGet, closed.node.Base+"/.well-known/openid-configuration", nil, ""), http.StatusOK, &meta)
	if meta["registration_endpoint"] != nil {
		t.Errorf("registration closed, but the metadata lists registration_endpoint %v", meta["registration_endpoint"])
	}
	if r := kit.Send(t, http.MethodPost, closed.node.Base+"/oauth2/register", map[string]any{"redirect_uris": []string{registeredRedirect}}, ""); r.Status != http.StatusNotFound {
		t.Errorf("POST /oauth2/register while closed: %s, want 404", r)
	}

	p := startProvider(t, map[string]string{"USERD_OIDC_DYNAMIC_REGISTRATION": "true"})
	userID := p.register(t, "Margaret Hamilton", "margaret@example.com")
	a := p.signIn(t, "margaret@example.com")
	const redirect = "http://127.0.0.1:9/cb"
	s := startScript(t, "rp.mjs", map[string]string{
		"issuer": p.issuer, "register": "Apollo guidance", "redirectUri": redirect, "scope": "openid profile email offline_access",
	}, "openid-client")
	var reg struct {
		ClientID string         `json:"clientId"`
		Metadata map[string]any `json:"metadata"`
	}
	s.recv("registered", &reg)
	if reg.ClientID == "" || reg.Metadata["client_secret"] != nil {
		t.Errorf("the registration: %+v, want a client id and no secret", reg)
	}
	var start struct {
		URL string `json:"url"`
	}
	s.recv("authorize", &start)
	back, r, err := a.authorize(t, start.URL)
	if err != nil {
		t.Fatalf("the flow of the registered client: %v: %d %.300s", err, r.Status, r.Body)
	}
	s.send(map[string]string{"callback": back})
	var res rpResult
	s.recv("result", &res)
	checkCodeFlow(t, p, client{ID: reg.ClientID, Type: "public"}, "RS256", "openid profile email offline_access",
		person{userID, "Margaret Hamilton", "margaret@example.com"}, res)
}
