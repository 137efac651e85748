package oidcprovider_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

func TestMetadata(t *testing.T) {
	t.Parallel()
	h, _ := newHandler(newFake())
	oidc := req{method: "GET", target: "/.well-known/openid-configuration"}.do(t, h)
	oauth := req{method: "GET", target: "/.well-known/oauth-authorization-server"}.do(t, h)
	for _, w := range []interface{ Header() http.Header }{oidc, oauth} {
		if got := w.Header().Get("Cache-Control"); got != "public, max-age=300" {
			t.Errorf("Cache-Control %q", got)
		}
		if got := w.Header().Get("Content-Type"); got != "application/json" {
			t.Errorf("Content-Type %q", got)
		}
	}
	if oidc.Code != 200 || oauth.Code != 200 || oidc.Body.String() != oauth.Body.String() {
		t.Fatalf("%d %d, differ:\n%s\n%s", oidc.Code, oauth.Code, oidc.Body, oauth.Body)
	}
	var got map[string]any
	if err := json.Unmarshal(oidc.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	list := func(s ...string) []any {
		out := make([]any, len(s))
		for i, v := range s {
			out[i] = v
		}
		return out
	}
	want := map[string]any{
		"issuer":                 issuer,
		"authorization_endpoint": issuer + "/oauth2/authorize",
		"token_endpoint":         issuer + "/oauth2/token",
		"userinfo_endpoint":      issuer + "/oauth2/userinfo",
		"jwks_uri":               issuer + "/.well-known/jwks.json",
		"revocation_endpoint":    issuer + "/oauth2/revoke",
		"introspection_endpoint": issuer + "/oauth2/introspect",
		"end_session_endpoint":   issuer + "/oauth2/end_session",
		"scopes_supported":       list("openid", "profile", "email", "profiles", "offline_access"),
		"claims_supported": list("iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "acr", "amr", "sid", "at_hash",
			"name", "updated_at", "email", "email_verified", "profiles"),
		"response_types_supported":                       list("code"),
		"response_modes_supported":                       list("query"),
		"grant_types_supported":                          list("authorization_code", "refresh_token", "client_credentials"),
		"subject_types_supported":                        list("public"),
		"id_token_signing_alg_values_supported":          list("RS256", "EdDSA"),
		"token_endpoint_auth_methods_supported":          list("client_secret_basic", "client_secret_post", "none"),
		"revocation_endpoint_auth_methods_supported":     list("client_secret_basic", "client_secret_post", "none"),
		"introspection_endpoint_auth_methods_supported":  list("client_secret_basic", "client_secret_post"),
		"code_challenge_methods_supported":               list("S256"),
		"authorization_response_iss_parameter_supported": true,
		"request_parameter_supported":                    false,
		"request_uri_parameter_supported":                false,
		"claims_parameter_supported":                     false,
	}
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected member %s", k)
		}
	}
}

func TestUserInfo(t *testing.T) {
	t.Parallel()
	name, email, verified := "Ada", "ada@example.com", true
	updated := time.Unix(1700000000, 0)
	full := application.UserInfo{Subject: "0123456789abcdef01234567", Claims: domain.UserClaims{
		Name: &name, UpdatedAt: &updated, Email: &email, EmailVerified: &verified, Profiles: []string{}}}
	tests := []struct {
		name      string
		req       req
		info      application.UserInfo
		err       error
		status    int
		challenge string
		body      map[string]any
	}{
		{name: "get_bearer", req: req{method: "GET", headers: []string{"Authorization", "Bearer tok"}}, info: full, status: 200,
			body: map[string]any{"sub": "0123456789abcdef01234567", "name": "Ada", "updated_at": 1700000000.0,
				"email": "ada@example.com", "email_verified": true, "profiles": []any{}}},
		{name: "post_form_token", req: req{method: "POST", form: "access_token=tok"},
			info: application.UserInfo{Subject: "0123456789abcdef01234567"}, status: 200,
			body: map[string]any{"sub": "0123456789abcdef01234567"}},
		{name: "post_bearer_no_body", req: req{method: "POST", headers: []string{"Authorization", "Bearer tok"}}, info: full, status: 200},
		{name: "no_token", req: req{method: "GET"}, status: 401, challenge: `Bearer realm="userd"`},
		{name: "query_token_ignored", req: req{method: "GET", target: "/oauth2/userinfo?access_token=tok"}, status: 401, challenge: `Bearer realm="userd"`},
		{name: "basic_is_no_token", req: req{method: "GET", headers: []string{"Authorization", basic("a", "b")}}, status: 401, challenge: `Bearer realm="userd"`},
		{name: "invalid_token", req: req{method: "GET", headers: []string{"Authorization", "Bearer bad"}}, err: domain.ErrInvalidToken,
			status: 401, challenge: `Bearer error="invalid_token"`},
		{name: "invalid_form_token", req: req{method: "POST", form: "access_token=bad"}, err: domain.ErrInvalidToken,
			status: 401, challenge: `Bearer error="invalid_token"`},
		{name: "header_and_form", req: req{method: "POST", form: "access_token=tok", headers: []string{"Authorization", "Bearer tok"}}, status: 400},
		{name: "duplicate_form_token", req: req{method: "POST", form: "access_token=a&access_token=b"}, status: 400},
		{name: "internal_error", req: req{method: "GET", headers: []string{"Authorization", "Bearer tok"}}, err: errBoom, status: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake()
			f.userInfo, f.userInfoErr = tt.info, tt.err
			h, _ := newHandler(f)
			if tt.req.target == "" {
				tt.req.target = "/oauth2/userinfo"
			}
			w := tt.req.do(t, h)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tt.challenge)
			}
			if got := w.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q", got)
			}
			if tt.body != nil {
				var got map[string]any
				if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.body) {
					t.Errorf("body %v\nwant %v", got, tt.body)
				}
			}
		})
	}
}

func TestIntrospect(t *testing.T) {
	t.Parallel()
	live := application.Introspection{Active: true, Subject: "u1", ClientID: publicID,
		Scopes: []domain.OAuthScope{domain.ScopeOpenID}, IssuedAt: time.Unix(100, 0), ExpiresAt: time.Unix(1000, 0),
		TokenType: application.TokenTypeAccess, SessionID: "s1"}
	tests := []struct {
		name      string
		req       req
		result    application.Introspection
		status    int
		challenge string
		body      string
	}{
		{name: "active", req: req{form: "token=t", headers: []string{"Authorization", basic(confidentialID, confidentialSecret)}}, result: live, status: 200,
			body: `{"active":true,"sub":"u1","client_id":"` + publicID + `","scope":"openid","exp":1000,"iat":100,"token_type":"Bearer","sid":"s1"}`},
		{name: "inactive_says_nothing_else", req: req{form: "token=t&client_id=" + confidentialID + "&client_secret=" + "s3cr%25t%2B%2F%3Ax"},
			result: application.Introspection{Active: false, Subject: "leak"}, status: 200, body: `{"active":false}`},
		{name: "public_client", req: req{form: "token=t&client_id=" + publicID}, status: 401},
		{name: "wrong_secret_basic", req: req{form: "token=t", headers: []string{"Authorization", basic(confidentialID, "x")}},
			status: 401, challenge: `Basic realm="userd"`},
		{name: "missing_token", req: req{form: "client_id=" + confidentialID + "&client_secret=s3cr%25t%2B%2F%3Ax"}, status: 400},
		{name: "duplicate_token", req: req{form: "token=a&token=b", headers: []string{"Authorization", basic(confidentialID, confidentialSecret)}}, status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake()
			f.introspected = tt.result
			h, _ := newHandler(f)
			tt.req.method, tt.req.target = "POST", "/oauth2/introspect"
			w := tt.req.do(t, h)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tt.challenge)
			}
			if got := w.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q", got)
			}
			if tt.body != "" && w.Body.String() != tt.body+"\n" {
				t.Errorf("body %s\nwant %s", w.Body, tt.body)
			}
		})
	}
}

func TestRevoke(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		req    req
		err    error
		status int
		calls  []string
	}{
		{name: "confidential", req: req{form: "token=t1&token_type_hint=refresh_token", headers: []string{"Authorization", basic(confidentialID, confidentialSecret)}},
			status: 200, calls: []string{"ClientForToken " + confidentialID, "Revoke " + confidentialID + " t1"}},
		{name: "public_by_id", req: req{form: "token=t1&client_id=" + publicID}, status: 200,
			calls: []string{"ClientForToken " + publicID, "Revoke " + publicID + " t1"}},
		{name: "wrong_secret", req: req{form: "token=t1&client_id=" + confidentialID + "&client_secret=x"}, status: 401,
			calls: []string{"ClientForToken " + confidentialID}},
		{name: "missing_token", req: req{form: "client_id=" + publicID}, status: 400, calls: []string{"ClientForToken " + publicID}},
		{name: "internal_error", req: req{form: "token=t1&client_id=" + publicID}, err: errBoom, status: 500,
			calls: []string{"ClientForToken " + publicID, "Revoke " + publicID + " t1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake()
			f.revokeErr = tt.err
			h, _ := newHandler(f)
			tt.req.method, tt.req.target = "POST", "/oauth2/revoke"
			w := tt.req.do(t, h)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if got := f.called(); !reflect.DeepEqual(got, tt.calls) {
				t.Errorf("calls %q, want %q", got, tt.calls)
			}
			if tt.status == 200 && (w.Body.Len() != 0 || w.Header().Get("Content-Type") != "") {
				t.Errorf("a body: %q (%s)", w.Body, w.Header().Get("Content-Type"))
			}
			if got := w.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q", got)
			}
		})
	}
}
