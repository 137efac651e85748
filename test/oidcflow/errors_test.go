package oidcflow

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
)

// wantRedirectError fails t unless loc, where the provider sent the
// browser, is the redirect URI with the error code, an
// error_description, the state of the request and the issuer (RFC 6749
// 4.1.2.1, RFC 9207), and no code.
func (p provider) wantRedirectError(t *testing.T, what, loc, redirect, code, state string) {
	t.Helper()
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	q := u.Query()
	if base := u.Scheme + "://" + u.Host + u.Path; base != redirect {
		t.Errorf("%s: sent to %s, want the redirect URI %s", what, loc, redirect)
	}
	if q.Get("error") != code || q.Get("error_description") == "" || q.Get("state") != state || q.Get("iss") != p.issuer || q.Has("code") {
		t.Errorf("%s: the redirect's query %v, want error %q with a description, state %q, iss %q, no code", what, q, code, state, p.issuer)
	}
}

// TestAuthorize_errors: the errors of /oauth2/authorize, through plain
// HTTP. An unknown client or a redirect URI it did not register is an
// error page (400) that never redirects; every other error goes back to
// the redirect URI with its code, the state and iss.
func TestAuthorize_errors(t *testing.T) {
	t.Parallel()
	p := startProvider(t)
	p.register(t, "Mary Jackson", "mary@example.com")
	signedIn := p.signIn(t, "mary@example.com")
	app := p.newClient(t, "Wind tunnel", nil)
	const redirect = "http://127.0.0.1:9/cb"

	t.Run("no_redirect", func(t *testing.T) {
		for name, set := range map[string]map[string]string{
			"unknown_client":             {"client_id": "0123456789abcdef01234567"},
			"malformed_client":           {"client_id": "../admin"},
			"no_client":                  {"client_id": ""},
			"redirect_of_another_site":   {"redirect_uri": "https://attacker.example/cb"},
			"redirect_of_another_path":   {"redirect_uri": "http://127.0.0.1:9/cb/more"},
			"redirect_of_another_host":   {"redirect_uri": "http://localhost:9/cb"},
			"redirect_with_a_fragment":   {"redirect_uri": redirect + "#x"},
			"redirect_missing":           {"redirect_uri": ""},
			"unknown_client_and_no_pkce": {"client_id": "0123456789abcdef01234567", "code_challenge": ""},
		} {
			for _, a := range []*agent{{p: p}, signedIn} {
				r := a.send(t, http.MethodGet, p.authRequest(app, redirect, newPKCE(), set), nil)
				if r.Status != http.StatusBadRequest || r.Header.Get("Location") != "" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
					t.Errorf("%s (signed in: %v): %d, Location %q, Content-Type %q; want a 400 page and no redirect",
						name, a.sso != "", r.Status, r.Header.Get("Location"), r.Header.Get("Content-Type"))
				}
			}
		}
	})

	t.Run("redirected", func(t *testing.T) {
		for _, c := range []struct {
			name string
			set  map[string]string
			code string
		}{
			{"pkce_missing", map[string]string{"code_challenge": "", "code_challenge_method": ""}, "invalid_request"},
			{"pkce_method_missing", map[string]string{"code_challenge_method": ""}, "invalid_request"},
			{"pkce_plain", map[string]string{"code_challenge_method": "plain", "code_challenge": strings.Repeat("a", 43)}, "invalid_request"},
			{"pkce_not_s256", map[string]string{"code_challenge": "short"}, "invalid_request"},
			{"response_type_token", map[string]string{"response_type": "token"}, "unsupported_response_type"},
			{"unknown_scope", map[string]string{"scope": "openid admin"}, "invalid_scope"},
			{"prompt_none_and_login", map[string]string{"prompt": "none login"}, "invalid_request"},
		} {
			t.Run(c.name, func(t *testing.T) {
				state := "state-" + c.name
				c.set["state"] = state
				loc, r, err := signedIn.authorize(t, p.authRequest(app, redirect, newPKCE(), c.set))
				if err != nil {
					t.Fatalf("no redirect to the client: %s", r)
				}
				p.wantRedirectError(t, c.name, loc, redirect, c.code, state)
			})
		}
	})

	t.Run("prompt_none_without_session", func(t *testing.T) {
		loc, r, err := (&agent{p: p}).authorize(t, p.authRequest(app, redirect, newPKCE(), map[string]string{"prompt": "none", "state": "s1"}))
		if err != nil {
			t.Fatalf("no redirect to the client: %s", r)
		}
		p.wantRedirectError(t, "prompt=none without a session", loc, redirect, "login_required", "s1")
	})

	t.Run("prompt_none_without_consent", func(t *testing.T) {
		loc, r, err := signedIn.authorize(t, p.authRequest(app, redirect, newPKCE(), map[string]string{"prompt": "none", "state": "s2"}))
		if err != nil {
			t.Fatalf("no redirect to the client: %s", r)
		}
		p.wantRedirectError(t, "prompt=none before any consent", loc, redirect, "consent_required", "s2")
	})

	t.Run("consent_denied", func(t *testing.T) {
		denier := &agent{p: p, sso: signedIn.sso, deny: true}
		loc, r, err := denier.authorize(t, p.authRequest(app, redirect, newPKCE(), map[string]string{"state": "s3"}))
		if err != nil {
			t.Fatalf("no redirect to the client: %s", r)
		}
		p.wantRedirectError(t, "Deny on the consent page", loc, redirect, "access_denied", "s3")
	})

	t.Run("prompt_login_and_max_age_sign_in_again", func(t *testing.T) {
		first := &agent{p: p, sso: signedIn.sso, email: "mary@example.com"}
		first.code(t, p.authRequest(app, redirect, newPKCE(), nil)) // the consent, once
		// max_age=0 asks for a sign-in at once, as prompt=login does
		// (OpenID Connect Core 3.1.2.1); the sign-in it asked for
		// satisfies it.
		for _, c := range []struct {
			set     map[string]string
			signIns int
		}{
			{map[string]string{"prompt": "login"}, 1},
			{map[string]string{"max_age": "0"}, 1},
			{map[string]string{"max_age": "3600"}, 0},
			{nil, 0},
		} {
			a := &agent{p: p, sso: signedIn.sso, email: "mary@example.com"}
			loc, r, err := a.authorize(t, p.authRequest(app, redirect, newPKCE(), c.set))
			if err != nil {
				t.Errorf("%v: %v (%d)", c.set, err, r.Status)
				continue
			}
			if !query(t, loc).Has("code") || a.signIns != c.signIns {
				t.Errorf("%v: back at the app with %s after %d sign-in pages, want a code after %d", c.set, loc, a.signIns, c.signIns)
			}
		}
	})

	// A disabled account, or a client deleted meanwhile, cannot finish a
	// flow: the consent page is shown, then the account or the client
	// goes, then Allow gives no code.
	t.Run("gone_while_consenting", func(t *testing.T) {
		for _, c := range []struct {
			name string
			gone func(t *testing.T, c client, userID string)
		}{
			{"client_deleted", func(t *testing.T, c client, _ string) {
				kit.Want(t, "delete the client", p.api(t, http.MethodDelete, "/api/oauth-clients/"+c.ID, nil, p.admin), http.StatusNoContent, nil)
			}},
			{"user_disabled", func(t *testing.T, _ client, userID string) {
				kit.Want(t, "disable the user", p.api(t, http.MethodPut, "/api/users/"+userID, map[string]any{"disabled": true}, p.admin), http.StatusOK, nil)
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				email := strings.ReplaceAll(c.name, "_", "-") + "@example.com"
				userID := p.register(t, "Consenting", email)
				b := p.signIn(t, email)
				app := p.newClient(t, "Meanwhile "+c.name, nil)
				r := b.send(t, http.MethodGet, p.authRequest(app, redirect, newPKCE(), map[string]string{"state": "gone"}), nil)
				r = b.send(t, http.MethodGet, p.node.Base+r.Header.Get("Location"), nil)
				m := consentRequest.FindSubmatch(r.Body)
				if r.Status != http.StatusOK || m == nil {
					t.Fatalf("no consent page: %d %.300s", r.Status, r.Body)
				}
				c.gone(t, app, userID)
				r = b.send(t, http.MethodPost, p.node.Base+"/oauth2/consent", url.Values{"request": {html.UnescapeString(string(m[1]))}, "decision": {"allow"}})
				if link := continueLink.FindSubmatch(r.Body); link != nil && query(t, html.UnescapeString(string(link[1]))).Has("code") {
					t.Errorf("Allow after the %s gave a code: %s", strings.ReplaceAll(c.name, "_", " "), link[1])
				} else if loc := r.Header.Get("Location"); loc != "" && query(t, loc).Has("code") {
					t.Errorf("Allow after the %s gave a code: %s", strings.ReplaceAll(c.name, "_", " "), loc)
				}
			})
		}
	})

	// The state comes back unchanged, however it is spelled, and a
	// redirect URI's own query stays with the code added to it.
	t.Run("state_and_redirect_query_kept", func(t *testing.T) {
		const state = "a b&c=d+é/?%20#x"
		withQuery := p.newClient(t, "Tenant app", map[string]any{"firstParty": true, "redirectUris": []string{"http://127.0.0.1/cb?tenant=a%20b"}})
		for _, c := range []struct {
			client   client
			redirect string
		}{{app, redirect}, {withQuery, "http://127.0.0.1:9/cb?tenant=a%20b"}} {
			loc, r, err := signedIn.authorize(t, p.authRequest(c.client, c.redirect, newPKCE(), map[string]string{"state": state}))
			if err != nil {
				t.Fatalf("authorize: %v: %s", err, r)
			}
			q := query(t, loc)
			if q.Get("state") != state || !q.Has("code") || (c.client.ID == withQuery.ID && q.Get("tenant") != "a b") {
				t.Errorf("back at %s: %v, want the code, the state %q and the redirect URI's own query", c.redirect, q, state)
			}
		}
		loc, _, _ := signedIn.authorize(t, p.authRequest(withQuery, "http://127.0.0.1:9/cb?tenant=a%20b", newPKCE(), map[string]string{"state": state, "code_challenge": ""}))
		if q := query(t, loc); q.Get("tenant") != "a b" || q.Get("error") != "invalid_request" || q.Get("state") != state {
			t.Errorf("an error back at a redirect URI with a query: %s", loc)
		}
	})

	// Signing out anywhere ends the provider's browser session: here the
	// browser's session ended through the sessions API.
	t.Run("browser_session_revoked", func(t *testing.T) {
		email := "signed-out@example.com"
		userID := p.register(t, "Signed Out", email)
		b := p.signIn(t, email)
		b.email = ""                                            // no sign-in on the way
		b.code(t, p.authRequest(app, redirect, newPKCE(), nil)) // a consent, while signed in
		var sessions []struct {
			ID       string `json:"id"`
			ClientID string `json:"clientId"`
		}
		kit.Want(t, "the user's sessions", p.api(t, http.MethodGet, "/api/users/"+userID+"/sessions", nil, p.admin), http.StatusOK, &sessions)
		for _, s := range sessions {
			if s.ClientID == "" { // the browser's, not the app's
				kit.Want(t, "end the browser's session", p.api(t, http.MethodDelete, "/api/users/"+userID+"/sessions/"+s.ID, nil, p.admin), http.StatusNoContent, nil)
			}
		}
		loc, r, err := b.authorize(t, p.authRequest(app, redirect, newPKCE(), map[string]string{"prompt": "none", "state": "ended"}))
		if err != nil {
			t.Fatalf("prompt=none after the browser's session ended: %v: %s", err, r)
		}
		p.wantRedirectError(t, "prompt=none after the browser's session ended", loc, redirect, "login_required", "ended")
	})

	t.Run("signed_out_browser_goes_to_sign_in", func(t *testing.T) {
		r := (&agent{p: p}).send(t, http.MethodGet, p.authRequest(app, redirect, newPKCE(), nil), nil)
		loc := r.Header.Get("Location")
		if r.Status != http.StatusSeeOther || !strings.Contains(loc, "/oauth2/authorize/continue?request=") {
			t.Fatalf("a browser without a session: %d to %q, want 303 to the flow's page", r.Status, loc)
		}
		r = (&agent{p: p}).send(t, http.MethodGet, p.node.Base+loc, nil)
		if next := r.Header.Get("Location"); r.Status != http.StatusSeeOther || !strings.HasPrefix(next, "/account/login?") {
			t.Errorf("the flow's page without a session: %d to %q, want 303 to the sign-in page", r.Status, next)
		}
	})
}

// TestToken_errors: the token endpoint's refusals of codes and refresh
// tokens (RFC 6749 5.2), and what each ends: a code used twice ends the
// tokens of its first use, a refresh token used again past the grace
// (none here) ends its session, a deleted client's and a disabled user's
// tokens end.
func TestToken_errors(t *testing.T) {
	t.Parallel()
	p := startProvider(t)
	userID := p.register(t, "Dorothy Vaughan", "dorothy@example.com")
	a := p.signIn(t, "dorothy@example.com")
	app := p.newClient(t, "FORTRAN", map[string]any{"firstParty": true})
	spa := p.newClient(t, "IBM 7090", map[string]any{"firstParty": true, "type": "public"})
	const redirect = "http://127.0.0.1:9/cb"

	t.Run("wrong_verifier", func(t *testing.T) {
		for _, c := range []client{app, spa} {
			code := a.code(t, p.authRequest(c, redirect, newPKCE(), nil))
			wantOAuthError(t, "a wrong code_verifier", p.token(t, c, url.Values{"grant_type": {"authorization_code"}, "code": {code},
				"redirect_uri": {redirect}, "code_verifier": {newPKCE().verifier}}), http.StatusBadRequest, "invalid_grant")
		}
	})

	t.Run("code_bound_to_client_and_redirect", func(t *testing.T) {
		pk := newPKCE()
		code := a.code(t, p.authRequest(app, redirect, pk, nil))
		wantOAuthError(t, "another client's code", p.token(t, spa, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {redirect}, "code_verifier": {pk.verifier}}), http.StatusBadRequest, "invalid_grant")
		pk = newPKCE()
		code = a.code(t, p.authRequest(app, redirect, pk, nil))
		wantOAuthError(t, "another redirect_uri", p.token(t, app, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {"http://127.0.0.1:10/cb"}, "code_verifier": {pk.verifier}}), http.StatusBadRequest, "invalid_grant")
	})

	t.Run("code_replay_ends_first_tokens", func(t *testing.T) {
		pk := newPKCE()
		code := a.code(t, p.authRequest(app, redirect, pk, nil))
		first := p.exchange(t, app, code, redirect, pk.verifier)
		p.wantUserInfo(t, "the first use's access token", first.AccessToken)
		wantOAuthError(t, "the code again", p.token(t, app, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {redirect}, "code_verifier": {pk.verifier}}), http.StatusBadRequest, "invalid_grant")
		p.wantUserInfoRefused(t, "the first use's access token after the replay", first.AccessToken)
		wantOAuthError(t, "the first use's refresh token after the replay", p.refresh(t, app, first.RefreshToken), http.StatusBadRequest, "invalid_grant")
	})

	t.Run("code_raced", func(t *testing.T) {
		// Ten exchanges of one code at once: one at most wins; the
		// others are invalid_grant, and as second uses they end the
		// winner's tokens (or the winner's answer, when they came while
		// it was being made).
		pk := newPKCE()
		code := a.code(t, p.authRequest(app, redirect, pk, nil))
		won := raceExchange(t, []provider{p}, app, code, redirect, pk.verifier)
		if len(won) > 1 {
			t.Fatalf("%d of 10 concurrent exchanges of one code got tokens, want 1 at most", len(won))
		}
		for _, w := range won {
			p.wantUserInfoRefused(t, "the winner's access token after the other uses", w.AccessToken)
			wantOAuthError(t, "the winner's refresh token after the other uses", p.refresh(t, app, w.RefreshToken), http.StatusBadRequest, "invalid_grant")
		}
	})

	t.Run("code_expired", func(t *testing.T) {
		// The binary has no clock to move: a code's 60 s pass for real,
		// beside the other cases (this one waits in parallel with them).
		t.Parallel()
		pk := newPKCE()
		code := a.code(t, p.authRequest(app, redirect, pk, nil))
		time.Sleep(61 * time.Second)
		wantOAuthError(t, "a code after 61 s", p.token(t, app, url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {redirect}, "code_verifier": {pk.verifier}}), http.StatusBadRequest, "invalid_grant")
	})

	t.Run("refresh_reuse_ends_session", func(t *testing.T) {
		first := p.signedInTokens(t, a, app, redirect, nil)
		var second tokens
		kit.Want(t, "refresh", p.refresh(t, app, first.RefreshToken), http.StatusOK, &second)
		if second.RefreshToken == "" || second.RefreshToken == first.RefreshToken {
			t.Fatalf("the refresh did not rotate the refresh token")
		}
		wantOAuthError(t, "the spent refresh token again", p.refresh(t, app, first.RefreshToken), http.StatusBadRequest, "invalid_grant")
		wantOAuthError(t, "the new refresh token after the reuse", p.refresh(t, app, second.RefreshToken), http.StatusBadRequest, "invalid_grant")
		p.wantUserInfoRefused(t, "the new access token after the reuse", second.AccessToken)
	})

	t.Run("refresh_bound_to_client", func(t *testing.T) {
		first := p.signedInTokens(t, a, spa, redirect, nil)
		wantOAuthError(t, "a public client's refresh token by another client", p.refresh(t, app, first.RefreshToken), http.StatusBadRequest, "invalid_grant")
		// Another client's attempt spends nothing of the token's own.
		kit.Want(t, "the refresh by its own client afterwards", p.refresh(t, spa, first.RefreshToken), http.StatusOK, nil)
	})

	t.Run("refresh_narrows_never_widens", func(t *testing.T) {
		first := p.signedInTokens(t, a, app, redirect, nil) // openid email offline_access
		var narrower tokens
		kit.Want(t, "a refresh that narrows", p.token(t, app, url.Values{"grant_type": {"refresh_token"},
			"refresh_token": {first.RefreshToken}, "scope": {"openid offline_access"}}), http.StatusOK, &narrower)
		if !sameScopes(narrower.Scope, "openid offline_access") {
			t.Errorf("a narrowing refresh's scope: %q", narrower.Scope)
		}
		wantOAuthError(t, "a refresh that asks for profile too", p.token(t, app, url.Values{"grant_type": {"refresh_token"},
			"refresh_token": {narrower.RefreshToken}, "scope": {"openid email offline_access profile"}}), http.StatusBadRequest, "invalid_scope")
		// A refused refresh spends nothing: the token still serves.
		var again tokens
		kit.Want(t, "a refresh after a refused one", p.refresh(t, app, narrower.RefreshToken), http.StatusOK, &again)
	})

	t.Run("revoked_access_token_ends_session", func(t *testing.T) {
		tok := p.signedInTokens(t, a, app, redirect, nil)
		if r := p.revoke(t, app, tok.AccessToken); r.Status != http.StatusOK {
			t.Fatalf("revoke: %s", r)
		}
		p.wantUserInfoRefused(t, "a revoked access token", tok.AccessToken)
		wantOAuthError(t, "the refresh token of a revoked access token's session", p.refresh(t, app, tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
	})

	t.Run("provider_token_not_for_api", func(t *testing.T) {
		tok := p.signedInTokens(t, a, app, redirect, nil)
		r := p.api(t, http.MethodGet, "/api/users/me", nil, tok.AccessToken)
		if r.Status != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("the provider's access token on /api/users/me: %d (WWW-Authenticate %q), want 401 with error=\"invalid_token\"", r.Status, r.Header.Get("WWW-Authenticate"))
		}
	})

	t.Run("wrong_secret", func(t *testing.T) {
		bad := app
		bad.Secret = "x" + app.Secret
		r := p.refresh(t, bad, "whatever")
		wantOAuthError(t, "a wrong client secret with Basic", r, http.StatusUnauthorized, "invalid_client")
		if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("a wrong client secret with Basic: WWW-Authenticate %q, want Basic", r.Header.Get("WWW-Authenticate"))
		}
	})

	t.Run("disabled_user", func(t *testing.T) {
		other := p.register(t, "Christine Darden", "christine@example.com")
		b := p.signIn(t, "christine@example.com")
		tok := p.signedInTokens(t, b, app, redirect, nil)
		kit.Want(t, "disable the user", p.api(t, http.MethodPut, "/api/users/"+other, map[string]any{"disabled": true}, p.admin), http.StatusOK, nil)
		wantOAuthError(t, "a disabled user's refresh token", p.refresh(t, app, tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
		p.wantUserInfoRefused(t, "a disabled user's access token", tok.AccessToken)
		// Nor does the browser's session go on with a flow.
		if loc, _, err := b.authorize(t, p.authRequest(app, redirect, newPKCE(), map[string]string{"prompt": "none", "state": "s"})); err == nil && query(t, loc).Has("code") {
			t.Errorf("a disabled user's browser got a code: %s", loc)
		}
	})

	t.Run("deleted_client", func(t *testing.T) {
		gone := p.newClient(t, "Short-lived", map[string]any{"firstParty": true})
		tok := p.signedInTokens(t, a, gone, redirect, nil)
		p.wantUserInfo(t, "before the delete", tok.AccessToken)
		kit.Want(t, "delete the client", p.api(t, http.MethodDelete, "/api/oauth-clients/"+gone.ID, nil, p.admin), http.StatusNoContent, nil)
		p.wantUserInfoRefused(t, "a deleted client's access token", tok.AccessToken)
		wantOAuthError(t, "a deleted client's refresh", p.refresh(t, gone, tok.RefreshToken), http.StatusUnauthorized, "invalid_client")
		var sessions []struct {
			ClientID string `json:"clientId"`
		}
		kit.Want(t, "the user's sessions", p.api(t, http.MethodGet, "/api/users/"+userID+"/sessions", nil, p.admin), http.StatusOK, &sessions)
		for _, s := range sessions {
			if s.ClientID == gone.ID {
				t.Errorf("a session of the deleted client is still listed")
			}
		}
	})
}
