package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/webhook"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/softauthn"
)

// hookSecret is the claims hook's Standard Webhooks secret (32 bytes).
var hookSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("claims-hook-secret-0123456789abc"))

// hookReceiver is a claims hook on loopback: it checks each request's
// signature with the Standard Webhooks project's own library, keeps its
// data, and answers as answer says (a tenant claim by default).
type hookReceiver struct {
	t   *testing.T
	srv *httptest.Server
	mu  sync.Mutex
	// answer writes the answer to a request of data.
	answer func(w http.ResponseWriter, r *http.Request, data map[string]any)
	calls  []map[string]any
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(hookSecret)
	if err != nil {
		t.Fatal(err)
	}
	h := &hookReceiver{t: t, answer: answerClaims(`{"claims":{"tenant":"acme"}}`)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("claims hook request: signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var req struct {
			Type      string         `json:"type"`
			Timestamp string         `json:"timestamp"`
			Data      map[string]any `json:"data"`
		}
		if err := json.Unmarshal(body, &req); err != nil || req.Type != "token.claims" || req.Timestamp == "" {
			t.Errorf("claims hook request: %s (%v)", body, err)
		}
		h.mu.Lock()
		h.calls = append(h.calls, req.Data)
		answer := h.answer
		h.mu.Unlock()
		answer(w, r, req.Data)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// answerClaims answers 200 with body.
func answerClaims(body string) func(http.ResponseWriter, *http.Request, map[string]any) {
	return func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

// answerStatus answers status with body.
func answerStatus(status int, body string) func(http.ResponseWriter, *http.Request, map[string]any) {
	return func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// hang answers only once the caller has given up.
func hang(_ http.ResponseWriter, r *http.Request, _ map[string]any) { <-r.Context().Done() }

func (h *hookReceiver) set(answer func(http.ResponseWriter, *http.Request, map[string]any)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answer = answer
}

// last is the data of the last request.
func (h *hookReceiver) last() map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.calls) == 0 {
		h.t.Fatal("the claims hook was not called")
	}
	return h.calls[len(h.calls)-1]
}

func (h *hookReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.calls)
}

// withClaimsHook asks h, with the real client of adapters/webhook, within
// timeout; failOpen is USERD_CLAIMS_HOOK_FAIL=open.
func withClaimsHook(h *hookReceiver, timeout time.Duration, failOpen bool) serverOption {
	return func(c *serverConfig) {
		hook, err := webhook.NewClaimsHook(webhook.HookOptions{URL: h.srv.URL, Secret: hookSecret, Timeout: timeout,
			Clock: clock.System{}})
		if err != nil {
			h.t.Fatal(err)
		}
		c.hook, c.app.ClaimsHookFailOpen = hook, failOpen
	}
}

// tenantOf is the tenant claim of a token, "" without one.
func tenantOf(t *testing.T, token string) string {
	t.Helper()
	var c struct {
		Tenant string `json:"tenant"`
	}
	kit.DecodePart(t, token, 1, &c)
	return c.Tenant
}

func TestClaimsHook_claims_reach_every_kind_of_sign_in(t *testing.T) {
	t.Parallel()
	h := newHookReceiver(t)
	s := newTestServer(t, withClaimsHook(h, 0, false))
	u, tb := s.customer("Ada", "ada@example.com")
	if got := tenantOf(t, tb.AccessToken); got != "acme" {
		t.Fatalf("password sign-in: tenant %q", got)
	}
	data := h.last()
	user, _ := data["user"].(map[string]any)
	if data["grant"] != "sign_in" || data["userId"] != u.ID || data["sessionId"] != claimsOf(t, tb.AccessToken).Sid ||
		data["acr"] != "aal1" || user["email"] != "ada@example.com" || user["id"] != u.ID {
		t.Errorf("request data %v", data)
	}
	if _, ok := data["clientId"]; ok {
		t.Errorf("userd's own token names a client: %v", data)
	}
	// The token still serves: the verifier ignores a claim it does not
	// know.
	if me := s.me(tb.AccessToken); me.ID != u.ID {
		t.Errorf("me = %+v", me)
	}

	t.Run("refresh asks again", func(t *testing.T) {
		h.set(answerClaims(`{"claims":{"tenant":"globex"}}`))
		defer h.set(answerClaims(`{"claims":{"tenant":"acme"}}`))
		before := h.count()
		next := s.refreshOK(tb.RefreshToken)
		if got := tenantOf(t, next.AccessToken); got != "globex" || h.count() != before+1 || h.last()["grant"] != "refresh" {
			t.Errorf("refreshed tenant %q, %d calls, data %v", got, h.count()-before, h.last())
		}
	})
	t.Run("second step", func(t *testing.T) {
		_, _, secret, _ := s.totpCustomer("Grace", "grace@example.com")
		got := s.loginTOTP("grace@example.com", secret)
		if tenantOf(t, got.AccessToken) != "acme" {
			t.Errorf("totp sign-in claims %s", got.AccessToken)
		}
	})
	t.Run("email code", func(t *testing.T) {
		code, _ := s.emailCode("ada@example.com")
		var got tokenBody
		wantJSON(t, s.do("POST", "/auth/email-code/verify", map[string]string{"email": "ada@example.com", "code": code}),
			http.StatusOK, &got)
		if tenantOf(t, got.AccessToken) != "acme" {
			t.Errorf("email code sign-in: no tenant")
		}
	})
	t.Run("passkey", func(t *testing.T) {
		_, _, a, _ := s.passkeyCustomer("Linus", "linus@example.com")
		var got tokenBody
		wantJSON(t, s.passkeyLogin(a, softauthn.Faults{}), http.StatusOK, &got)
		if tenantOf(t, got.AccessToken) != "acme" {
			t.Errorf("passkey sign-in: no tenant")
		}
	})
}

func TestClaimsHook_refusals_and_failures(t *testing.T) {
	t.Parallel()
	big := `{"claims":{"blob":"` + strings.Repeat("x", 4100) + `"}}`
	for _, tt := range []struct {
		name     string
		answer   func(http.ResponseWriter, *http.Request, map[string]any)
		failOpen bool
		status   int
		code     string
	}{
		{"refused_with_message", answerStatus(http.StatusForbidden, `{"error":{"message":"Your plan has ended.\u0007"}}`), false, 403, "sign_in_refused"},
		{"reserved_claim", answerClaims(`{"claims":{"sub":"someone-else"}}`), false, 502, "hook_failed"},
		{"profiles_claim", answerClaims(`{"claims":{"profiles":["ROLE_ADMIN"]}}`), false, 502, "hook_failed"},
		{"over_4_kib", answerClaims(big), false, 502, "hook_failed"},
		{"not_json", answerClaims(`claims: yes`), false, 502, "hook_failed"},
		{"claims_not_an_object", answerClaims(`{"claims":["a"]}`), false, 502, "hook_failed"},
		{"server_error_closed", answerStatus(http.StatusInternalServerError, `{}`), false, 503, "unavailable"},
		{"redirect_closed", answerStatus(http.StatusFound, ``), false, 503, "unavailable"},
		{"timeout_closed", hang, false, 503, "unavailable"},
		{"timeout_open", hang, true, 200, ""},
		{"server_error_open", answerStatus(http.StatusInternalServerError, `{}`), true, 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHookReceiver(t)
			s := newTestServer(t, withClaimsHook(h, 300*time.Millisecond, tt.failOpen))
			u, tb := s.customer("Ada", "ada@example.com")
			sessions := len(s.sessions("/api/users/"+u.ID+"/sessions", tb.AccessToken))
			h.set(tt.answer)
			start := time.Now()
			res := s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": custPassword})
			// A hook that hangs costs its timeout (300 ms), not more: the
			// bound is generous, for a loaded machine.
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("the login took %s", took)
			}
			refreshed := s.do("POST", "/auth/refresh-token", map[string]string{"refreshToken": tb.RefreshToken})
			h.set(answerClaims(`{"claims":{"tenant":"acme"}}`))
			if tt.status == http.StatusOK {
				var got tokenBody
				wantJSON(t, res, http.StatusOK, &got)
				if tenantOf(t, got.AccessToken) != "" {
					t.Errorf("failed open with claims: %s", got.AccessToken)
				}
				wantJSON(t, refreshed, http.StatusOK, &got)
				return
			}
			p := wantProblem(t, res, tt.status, tt.code)
			if tt.code == "sign_in_refused" && p.Detail != "Your plan has ended." {
				t.Errorf("refusal detail %q", p.Detail)
			}
			if tt.status == http.StatusServiceUnavailable && res.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			// The refused sign-in opened no session.
			if got := len(s.sessions("/api/users/"+u.ID+"/sessions", tb.AccessToken)); got != sessions {
				t.Errorf("sessions %d after the refused sign-in, want %d", got, sessions)
			}
			// The refused refresh left the token usable: it refreshes
			// once the hook answers again.
			wantProblem(t, refreshed, tt.status, tt.code)
			if got := tenantOf(t, s.refreshOK(tb.RefreshToken).AccessToken); got != "acme" {
				t.Errorf("refresh after the hook came back: tenant %q", got)
			}
		})
	}
}

// The pages' sign-in shows the hook's refusal (403, its message), and
// its failures as the pages show errors.
func TestClaimsHook_pages_sign_in(t *testing.T) {
	t.Parallel()
	h := newHookReceiver(t)
	s := newTestServer(t, withClaimsHook(h, 300*time.Millisecond, false))
	s.customer("Ada", "ada@example.com")
	form := url.Values{"email": {"ada@example.com"}, "password": {custPassword}}

	h.set(answerStatus(http.StatusForbidden, `{"error":{"message":"Your <b>plan</b> has ended."}}`))
	res := s.submit("/account/login", form)
	wantHTML(t, res, http.StatusForbidden, "Sign in")
	if !strings.Contains(string(res.Body), "Your &lt;b&gt;plan&lt;/b&gt; has ended.") {
		t.Errorf("the refusal's message is not shown, escaped:\n%s", res.Body)
	}
	if res.Header.Get("Set-Cookie") != "" {
		t.Errorf("a refused sign-in set a cookie: %s", res.Header.Get("Set-Cookie"))
	}

	h.set(answerClaims(`{"claims":{"iss":"me"}}`))
	res = s.submit("/account/login", form)
	if res.Status != http.StatusBadGateway || mediaType(res.Header) != "text/html" {
		t.Errorf("hook_failed page: %d %s", res.Status, res.Header.Get("Content-Type"))
	}
	h.set(answerStatus(http.StatusInternalServerError, `{}`))
	if res = s.submit("/account/login", form); res.Status != http.StatusServiceUnavailable {
		t.Errorf("unavailable page: %d", res.Status)
	}
}
