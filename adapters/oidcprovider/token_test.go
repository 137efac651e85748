package oidcprovider_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

// basic is client_secret_basic: id and secret form-encoded, then Base64
// (RFC 6749 §2.3.1).
func basic(id, secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))
}

const codeForm = "grant_type=authorization_code&code=c0de&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&code_verifier=v3r"

// wantOAuthError checks an RFC 6749 §5.2 answer: the status, and a body
// of error and error_description, nothing else.
func wantOAuthError(t *testing.T, w interface {
	Result() *http.Response
}, status int, code string) {
	t.Helper()
	res := w.Result()
	if res.StatusCode != status {
		t.Fatalf("status %d, want %d", res.StatusCode, status)
	}
	var body map[string]any
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("body: %v", err)
	}
	if body["error"] != code {
		t.Errorf("error %v, want %s", body["error"], code)
	}
	for k := range body {
		if k != "error" && k != "error_description" {
			t.Errorf("member %q in an error", k)
		}
	}
}

func TestToken(t *testing.T) {
	t.Parallel()
	secretForm := "&client_id=" + confidentialID + "&client_secret=" + url.QueryEscape(confidentialSecret)
	tests := []struct {
		name  string
		req   req
		setup func(*fakeProvider)
		// status and code: the answer; code "" is a success.
		status    int
		code      string
		challenge string // WWW-Authenticate
		calls     []string
	}{
		{name: "code_with_basic", req: req{form: codeForm, headers: []string{"Authorization", basic(confidentialID, confidentialSecret)}},
			status: 200, calls: []string{"ClientForToken " + confidentialID, "ExchangeCode " + confidentialID + " c0de https://app.example/cb v3r"}},
		{name: "code_with_post", req: req{form: codeForm + secretForm}, status: 200},
		{name: "code_public_client_by_id", req: req{form: codeForm + "&client_id=" + publicID}, status: 200,
			calls: []string{"ClientForToken " + publicID, "ExchangeCode " + publicID + " c0de https://app.example/cb v3r"}},
		{name: "basic_and_same_form_client_id", req: req{form: codeForm + "&client_id=" + confidentialID,
			headers: []string{"Authorization", basic(confidentialID, confidentialSecret)}}, status: 200},
		{name: "wrong_secret_basic", req: req{form: codeForm, headers: []string{"Authorization", basic(confidentialID, "nope")}},
			status: 401, code: "invalid_client", challenge: `Basic realm="userd"`},
		{name: "wrong_secret_post", req: req{form: codeForm + "&client_id=" + confidentialID + "&client_secret=nope"},
			status: 401, code: "invalid_client"},
		{name: "confidential_without_secret", req: req{form: codeForm + "&client_id=" + confidentialID}, status: 401, code: "invalid_client"},
		{name: "unknown_client", req: req{form: codeForm + "&client_id=dddddddddddddddddddddddd"}, status: 401, code: "invalid_client"},
		{name: "no_client", req: req{form: codeForm}, status: 401, code: "invalid_client", calls: []string{}},
		{name: "malformed_basic", req: req{form: codeForm, headers: []string{"Authorization", "Basic !!!"}},
			status: 401, code: "invalid_client", challenge: `Basic realm="userd"`, calls: []string{}},
		{name: "basic_not_form_encoded", req: req{form: codeForm, headers: []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(confidentialID+":%zz"))}},
			status: 401, code: "invalid_client", challenge: `Basic realm="userd"`, calls: []string{}},
		{name: "public_client_empty_form_secret", req: req{form: codeForm + "&client_id=" + publicID + "&client_secret="}, status: 200},
		{name: "public_client_with_basic_secret", req: req{form: codeForm, headers: []string{"Authorization", basic(publicID, "x")}},
			status: 401, code: "invalid_client", challenge: `Basic realm="userd"`},
		{name: "basic_and_form_secret", req: req{form: codeForm + secretForm, headers: []string{"Authorization", basic(confidentialID, confidentialSecret)}},
			status: 400, code: "invalid_request", calls: []string{}},
		{name: "basic_and_other_form_client", req: req{form: codeForm + "&client_id=" + publicID,
			headers: []string{"Authorization", basic(confidentialID, confidentialSecret)}}, status: 400, code: "invalid_request", calls: []string{}},
		{name: "duplicate_parameter", req: req{form: codeForm + "&code=other" + secretForm}, status: 400, code: "invalid_request", calls: []string{}},
		{name: "json_body", req: req{form: codeForm + secretForm, headers: []string{"Content-Type", "application/json"}},
			status: 400, code: "invalid_request", calls: []string{}},
		{name: "parameters_in_query_ignored", req: req{target: "/oauth2/token?" + codeForm, form: "client_id=" + publicID},
			status: 400, code: "invalid_request", calls: []string{}},
		{name: "missing_grant_type", req: req{form: "code=x" + secretForm}, status: 400, code: "invalid_request", calls: []string{}},
		{name: "unsupported_grant_type", req: req{form: "grant_type=password&username=a&password=b" + secretForm},
			status: 400, code: "unsupported_grant_type", calls: []string{}},
		{name: "device_code_unsupported", req: req{form: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Adevice_code" + secretForm},
			status: 400, code: "unsupported_grant_type", calls: []string{}},
		{name: "client_lacks_grant", req: req{form: codeForm, headers: []string{"Authorization", basic(grantlessID, grantlessSecret)}},
			status: 400, code: "unauthorized_client"},
		{name: "invalid_grant", req: req{form: codeForm + secretForm},
			setup: func(f *fakeProvider) {
				f.tokenErr = domain.NewOAuthError(domain.OAuthInvalidGrant, "the code is unknown, used or expired")
			}, status: 400, code: "invalid_grant"},
		{name: "application_invalid_client_is_401", req: req{form: codeForm + secretForm},
			setup:  func(f *fakeProvider) { f.tokenErr = domain.NewOAuthError(domain.OAuthInvalidClient, "deleted") },
			status: 401, code: "invalid_client"},
		{name: "internal_error", req: req{form: codeForm + secretForm}, setup: func(f *fakeProvider) { f.tokenErr = errBoom },
			status: 500, code: "server_error"},
		{name: "refresh", req: req{form: "grant_type=refresh_token&refresh_token=rt1&scope=openid+email&client_id=" + publicID},
			status: 200, calls: []string{"ClientForToken " + publicID, "Refresh " + publicID + " rt1"}},
		{name: "refresh_without_token", req: req{form: "grant_type=refresh_token&client_id=" + publicID}, status: 400, code: "invalid_request"},
		{name: "client_credentials", req: req{form: "grant_type=client_credentials&scope=openid", headers: []string{"Authorization", basic(confidentialID, confidentialSecret)}},
			status: 200, calls: []string{"ClientForToken " + confidentialID, "ClientCredentials " + confidentialID}},
		// A public client never has the grant (domain.OAuthClient).
		{name: "client_credentials_public_client", req: req{form: "grant_type=client_credentials&client_id=" + publicID},
			status: 400, code: "unauthorized_client"},
		{name: "body_too_large", req: req{form: codeForm + secretForm + "&pad=" + strings.Repeat("a", 70<<10)},
			status: 400, code: "invalid_request", calls: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake()
			if tt.setup != nil {
				tt.setup(f)
			}
			h, _ := newHandler(f)
			tt.req.method = http.MethodPost
			if tt.req.target == "" {
				tt.req.target = "/oauth2/token"
			}
			w := tt.req.do(t, h)
			if got := w.Header().Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q", got)
			}
			if got := w.Header().Get("Pragma"); got != "no-cache" {
				t.Errorf("Pragma %q", got)
			}
			if got := w.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tt.challenge)
			}
			if tt.calls != nil && !slices.Equal(f.called(), tt.calls) {
				t.Errorf("calls %q, want %q", f.called(), tt.calls)
			}
			if tt.code != "" {
				wantOAuthError(t, w, tt.status, tt.code)
				return
			}
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			var body map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"access_token": "at", "token_type": "Bearer", "expires_in": 900.0,
				"scope": "openid email", "id_token": "idt", "refresh_token": "rt"}
			if !reflect.DeepEqual(body, want) {
				t.Errorf("body %v, want %v", body, want)
			}
		})
	}
}

func TestToken_refresh_scopes_and_bare_tokens(t *testing.T) {
	t.Parallel()
	f := newFake()
	f.tokens.IDToken, f.tokens.RefreshToken = "", ""
	h, _ := newHandler(f)
	w := req{method: "POST", target: "/oauth2/token", form: "grant_type=refresh_token&refresh_token=rt1&scope=openid+email&client_id=" + publicID}.do(t, h)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if !slices.Equal(f.scopes, []string{"openid", "email"}) {
		t.Errorf("scopes %q", f.scopes)
	}
	if strings.Contains(w.Body.String(), "id_token") || strings.Contains(w.Body.String(), "refresh_token") {
		t.Errorf("empty tokens are written: %s", w.Body)
	}
}

func TestToken_methods(t *testing.T) {
	t.Parallel()
	h, _ := newHandler(newFake())
	if w := (req{method: "GET", target: "/oauth2/token"}).do(t, h); w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", w.Code)
	}
	if w := (req{method: "GET", target: "/oauth2/other"}).do(t, h); w.Code != http.StatusNotFound {
		t.Errorf("unknown path: %d", w.Code)
	}
}
