package main

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// fakeProvider plays the provider's side of a flow for the loader: the
// authorization request, its continuation for the cookie "good" (which
// it renews as "renewed"), and the code's exchange checked against the
// challenge. wrongState sends another state back.
func fakeProvider(t *testing.T, wrongState bool) *httptest.Server {
	t.Helper()
	var challenge, state string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /oauth2/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		challenge, state = q.Get("code_challenge"), q.Get("state")
		if q.Get("code_challenge_method") != "S256" || q.Get("redirect_uri") != oidcRedirectURI || q.Get("client_id") != "pub" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		// An absolute Location on the issuer's host, as USERD_PUBLIC_URL may make it.
		http.Redirect(w, r, "http://localhost:8080/oauth2/authorize/continue?request=r1", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /oauth2/authorize/continue", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(ssoCookie)
		if err != nil || (c.Value != "good" && c.Value != "renewed") || r.URL.Query().Get("request") != "r1" {
			http.Redirect(w, r, "/account/login", http.StatusSeeOther)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: "renewed", Path: "/", Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: 1800})
		st := state
		if wrongState {
			st = "other"
		}
		http.Redirect(w, r, oidcRedirectURI+"?"+url.Values{"code": {"c1"}, "state": {st}, "iss": {"http://localhost:8080"}}.Encode(), http.StatusSeeOther)
	})
	mux.HandleFunc("POST /oauth2/token", func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
		if r.PostFormValue("code") != "c1" || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge || r.PostFormValue("client_id") != "pub" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"a","token_type":"Bearer","expires_in":900,"refresh_token":"r","id_token":"i"}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// fakeTarget is a target of srv with the provider's state newOIDC would
// make, and one browser holding the cookie "good".
func fakeTarget(t *testing.T, srv *httptest.Server) *target {
	t.Helper()
	tg, err := newTarget(newHTTPClient(1, 5*time.Second), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	redirect, _ := url.Parse(oidcRedirectURI)
	tg.oidc = &oidcState{
		noFollow: &http.Client{Transport: tg.hc.Transport, Timeout: tg.hc.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		issuer: "http://localhost:8080", publicID: "pub",
		authorizeURL: tg.ref("/oauth2/authorize"), tokenURL: tg.ref("/oauth2/token"), redirect: redirect,
		browsers: []string{ssoCookie + "=good"}, public: []byte("&client_id=pub"),
	}
	return tg
}

// TestOIDCFlow: the loader's flow follows the authorization request to
// the target itself (not to the issuer's host), sends the cookie by hand
// and takes its renewal, and exchanges the code with its verifier.
func TestOIDCFlow(t *testing.T) {
	t.Parallel()
	tg := fakeTarget(t, fakeProvider(t, false))
	for range 2 {
		tr, err := tg.oidcFlow(0)
		if err != nil {
			t.Fatal(err)
		}
		if tr.AccessToken != "a" || tr.RefreshToken != "r" {
			t.Errorf("tokens %+v", tr)
		}
		if got := tg.oidc.browsers[0]; got != ssoCookie+"=renewed" {
			t.Errorf("browser cookie %q, want the renewed one", got)
		}
	}
}

// TestOIDCFlowRefusals: a redirect with another state, or to the sign-in
// page (no cookie that serves), is an error of the step.
func TestOIDCFlowRefusals(t *testing.T) {
	t.Parallel()
	tg := fakeTarget(t, fakeProvider(t, true))
	if _, err := tg.oidcFlow(0); err == nil || !strings.Contains(err.Error(), "state") {
		t.Errorf("another state: %v", err)
	}
	tg = fakeTarget(t, fakeProvider(t, false))
	tg.oidc.browsers[0] = ssoCookie + "=stale"
	if _, err := tg.oidcFlow(0); err == nil || !strings.Contains(err.Error(), "signed out") {
		t.Errorf("no session: %v", err)
	}
}
