package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/webhook"
	"github.com/userd/userd/domain"
)

// hookAt is a claims hook that answers with answer, and checks every
// request's signature with the Standard Webhooks project's library.
func hookAt(t *testing.T, answer http.HandlerFunc) (*webhook.ClaimsHook, *[]map[string]any) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("signature: %v", err)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Errorf("body %s: %v", body, err)
		}
		bodies = append(bodies, m)
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	h, err := webhook.NewClaimsHook(webhook.HookOptions{URL: srv.URL, Secret: testSecret, Clock: clock.System{},
		Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return h, &bodies
}

func write(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

var clientRequest = domain.ClaimsRequest{ClientID: "cli_1", Scopes: []domain.OAuthScope{"read"},
	Grant: domain.ClaimsGrantClientCredentials}

func TestClaimsHook_request_is_signed_and_answer_read(t *testing.T) {
	t.Parallel()
	h, bodies := hookAt(t, write(http.StatusOK, `{"claims":{"tenant":"acme","n":1}}`))
	claims, err := h.Claims(context.Background(), clientRequest)
	if err != nil || string(claims.JSON()) != `{"n":1,"tenant":"acme"}` {
		t.Fatalf("Claims = %s, %v", claims.JSON(), err)
	}
	b := (*bodies)[0]
	data, _ := b["data"].(map[string]any)
	if b["type"] != "token.claims" || b["timestamp"] == nil || data["clientId"] != "cli_1" || data["grant"] != "client_credentials" {
		t.Errorf("body %v", b)
	}
	if _, ok := data["userId"]; ok {
		t.Errorf("client_credentials names a user: %v", data)
	}
}

func TestClaimsHook_answers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		answer  http.HandlerFunc
		want    error
		message string
	}{
		{"refused", write(http.StatusForbidden, `{"error":{"message":"  No\u202e entry\n`+strings.Repeat("!", 300)+`"}}`), nil,
			"No  entry " + strings.Repeat("!", 188)}, // 200 characters before the trim
		{"refused_without_message", write(http.StatusForbidden, `nope`), nil, domain.DefaultRefusalMessage},
		{"reserved", write(http.StatusOK, `{"claims":{"iss":"x","tenant":"a"}}`), domain.ErrHookFailed, ""},
		{"too_large", write(http.StatusOK, `{"claims":{"a":"`+strings.Repeat("x", domain.MaxHookClaimsSize)+`"}}`), domain.ErrHookFailed, ""},
		{"answer_over_64_kib", write(http.StatusOK, `{"claims":{},"pad":"`+strings.Repeat("x", 70<<10)+`"}`), domain.ErrHookFailed, ""},
		{"no_claims_member", write(http.StatusOK, `{}`), domain.ErrHookFailed, ""},
		{"other_status", write(http.StatusTeapot, `{"claims":{}}`), domain.ErrHookUnavailable, ""},
		{"redirect_not_followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}, domain.ErrHookUnavailable, ""},
		{"timeout", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, domain.ErrHookUnavailable, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, _ := hookAt(t, tt.answer)
			start := time.Now()
			claims, err := h.Claims(context.Background(), clientRequest)
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %s with a timeout of 300ms", took)
			}
			if !claims.Empty() {
				t.Errorf("claims %s", claims.JSON())
			}
			if tt.message != "" {
				refused, ok := errors.AsType[*domain.SignInRefusedError](err)
				if !ok || refused.Message != tt.message {
					t.Fatalf("err = %v, want a refusal %q", err, tt.message)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if errors.Is(err, domain.ErrHookUnavailable) && !errors.Is(err, domain.ErrUnavailable) {
				t.Error("unavailable hook is not ErrUnavailable")
			}
		})
	}
}

func TestCheckHookURL(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		"https://hooks.example.com/claims": true,
		"http://127.0.0.1:9000/claims":     true,
		"http://localhost:9000/claims":     true,
		"http://[::1]:9000/claims":         true,
		"http://hooks.example.com/claims":  false,
		"http://10.0.0.5/claims":           false,
		"https://169.254.169.254/":         false,
		"ftp://localhost/":                 false,
	} {
		if err := webhook.CheckHookURL(raw); (err == nil) != ok {
			t.Errorf("CheckHookURL(%q) = %v, want ok %v", raw, err, ok)
		}
	}
}
