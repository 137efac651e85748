package oidcprovider_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/oidcprovider"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

const authorizeQuery = "client_id=" + publicID + "&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&response_type=code" +
	"&scope=openid+email&state=st&nonce=n0&code_challenge=ch&code_challenge_method=S256&prompt=login+consent&max_age=600&acr_values=aal2&login_hint=a%40b.c"

func TestAuthorize(t *testing.T) {
	t.Parallel()
	refusal := &application.AuthorizeError{Location: "https://app.example/cb?error=access_denied&iss=x",
		Err: domain.NewOAuthError(domain.OAuthAccessDenied, "no")}
	tests := []struct {
		name     string
		req      req
		err      error
		status   int
		location string
		// called: whether Provider.Authorize was asked; malformed, what
		// its input's Malformed names.
		called    bool
		malformed string
	}{
		{name: "get", req: req{method: "GET", target: "/oauth2/authorize?" + authorizeQuery},
			status: 303, location: "/oauth2/authorize/continue?request=req-1", called: true},
		{name: "post", req: req{method: "POST", target: "/oauth2/authorize", form: authorizeQuery},
			status: 303, location: "/oauth2/authorize/continue?request=req-1", called: true},
		{name: "refused_goes_back_to_client", req: req{method: "GET", target: "/oauth2/authorize?" + authorizeQuery},
			err: refusal, status: 303, location: refusal.Location, called: true},
		{name: "unknown_client_never_redirects", req: req{method: "GET", target: "/oauth2/authorize?" + authorizeQuery},
			err: domain.ErrOAuthClientNotFound, status: 400, called: true},
		{name: "unregistered_redirect_never_redirects", req: req{method: "GET", target: "/oauth2/authorize?" + authorizeQuery},
			err: fmt.Errorf("authorize: %w", domain.ErrRedirectURINotRegistered), status: 400, called: true},
		{name: "internal_error", req: req{method: "GET", target: "/oauth2/authorize?" + authorizeQuery},
			err: errors.New("boom"), status: 500, called: true},
		{name: "missing_client_id", req: req{method: "GET", target: "/oauth2/authorize?redirect_uri=https%3A%2F%2Fapp.example%2Fcb"}, status: 400},
		{name: "malformed_client_id", req: req{method: "GET", target: "/oauth2/authorize?client_id=x&redirect_uri=https%3A%2F%2Fapp.example%2Fcb"}, status: 400},
		{name: "missing_redirect_uri", req: req{method: "GET", target: "/oauth2/authorize?client_id=" + publicID}, status: 400},
		{name: "relative_redirect_uri", req: req{method: "GET", target: "/oauth2/authorize?client_id=" + publicID + "&redirect_uri=%2Fcb"}, status: 400},
		{name: "duplicate_redirect_uri", req: req{method: "GET", target: "/oauth2/authorize?" + authorizeQuery + "&redirect_uri=https%3A%2F%2Fevil.example%2Fcb"}, status: 400},
		// A parameter other than the two that name the client and its
		// redirect, sent twice or malformed, is the application's to
		// refuse with a redirect (AuthorizeInput.Malformed).
		{name: "duplicate_state", req: req{method: "GET", target: "/oauth2/authorize?" + authorizeQuery + "&state=again"},
			status: 303, location: "/oauth2/authorize/continue?request=req-1", called: true, malformed: "state"},
		{name: "duplicate_in_post", req: req{method: "POST", target: "/oauth2/authorize", form: authorizeQuery + "&client_id=" + confidentialID}, status: 400},
		{name: "malformed_query", req: req{method: "GET", target: "/oauth2/authorize?" + authorizeQuery + "&x=%zz"}, status: 400},
		{name: "malformed_max_age", req: req{method: "GET", target: "/oauth2/authorize?" + strings.Replace(authorizeQuery, "max_age=600", "max_age=soon", 1)},
			status: 303, location: "/oauth2/authorize/continue?request=req-1", called: true, malformed: "max_age"},
		{name: "post_not_a_form", req: req{method: "POST", target: "/oauth2/authorize", form: authorizeQuery, headers: []string{"Content-Type", "application/json"}}, status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake()
			f.authorizeErr = tt.err
			h, page := newHandler(f)
			w := tt.req.do(t, h)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if got := w.Header().Get("Location"); got != tt.location {
				t.Errorf("Location %q, want %q", got, tt.location)
			}
			if f.authorize.Malformed != tt.malformed {
				t.Errorf("Malformed %q, want %q", f.authorize.Malformed, tt.malformed)
			}
			if called := len(f.called()) > 0; called != tt.called {
				t.Errorf("Authorize called: %v, want %v", called, tt.called)
			}
			if tt.status >= 400 {
				if page.status != tt.status || page.message == "" {
					t.Errorf("error page: %d %q", page.status, page.message)
				}
			} else if w.Body.Len() != 0 {
				t.Errorf("a redirect with a body: %q", w.Body)
			}
		})
	}
}

func TestAuthorize_input(t *testing.T) {
	t.Parallel()
	f := newFake()
	f.authorizeID = "a b&c"
	h, _ := newHandler(f)
	w := req{method: "GET", target: "/oauth2/authorize?" + authorizeQuery + "&request_uri=urn%3Ax"}.do(t, h)
	if loc := w.Header().Get("Location"); loc != "/oauth2/authorize/continue?request="+url.QueryEscape("a b&c") {
		t.Errorf("Location %q", loc)
	}
	in := f.authorize
	maxAge := 10 * time.Minute
	want := application.AuthorizeInput{ClientID: publicID, RedirectURI: "https://app.example/cb", ResponseType: "code",
		Scopes: []string{"openid", "email"}, State: "st", Nonce: "n0", CodeChallenge: "ch", CodeChallengeMethod: "S256",
		Prompt: []string{"login", "consent"}, MaxAge: &maxAge, ACRValues: []string{"aal2"}, LoginHint: "a@b.c", RequestObject: true}
	if in.MaxAge == nil || *in.MaxAge != *want.MaxAge {
		t.Errorf("MaxAge %v", in.MaxAge)
	}
	in.MaxAge, want.MaxAge = nil, nil
	if in.ClientID != want.ClientID || in.RedirectURI != want.RedirectURI || in.ResponseType != want.ResponseType ||
		!slices.Equal(in.Scopes, want.Scopes) || in.State != want.State || in.Nonce != want.Nonce ||
		in.CodeChallenge != want.CodeChallenge || in.CodeChallengeMethod != want.CodeChallengeMethod ||
		!slices.Equal(in.Prompt, want.Prompt) || !slices.Equal(in.ACRValues, want.ACRValues) ||
		in.LoginHint != want.LoginHint || in.RequestObject != want.RequestObject {
		t.Errorf("input %+v\nwant  %+v", in, want)
	}
}

// Without the pages' error page, a plain-text one says what went wrong.
func TestAuthorize_plain_error_page(t *testing.T) {
	t.Parallel()
	f := newFake()
	f.authorizeErr = domain.ErrOAuthClientNotFound
	h := oidcprovider.New(f, oidcprovider.Options{Issuer: issuer, ContinuePath: "/c"})
	w := req{method: "GET", target: "/oauth2/authorize?" + authorizeQuery}.do(t, h)
	if w.Code != http.StatusBadRequest || w.Header().Get("Location") != "" {
		t.Fatalf("%d, Location %q", w.Code, w.Header().Get("Location"))
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	if !strings.Contains(w.Body.String(), "no application known here") {
		t.Errorf("body %q", w.Body)
	}
}
