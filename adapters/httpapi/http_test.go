package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

func TestRouting(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()

	for _, tt := range []struct {
		method, path string
		status       int
		code         string
		allow        string
	}{
		{"GET", "/nope", http.StatusNotFound, "not_found", ""},
		{"GET", "/api/nope", http.StatusNotFound, "not_found", ""},
		{"GET", "/api/users/", http.StatusNotFound, "not_found", ""}, // no redirect to /api/users
		{"GET", "/api/users/me/", http.StatusNotFound, "not_found", ""},
		{"GET", "/API/USERS", http.StatusNotFound, "not_found", ""}, // no case-fixing redirect
		{"GET", "/auth/login", http.StatusMethodNotAllowed, "method_not_allowed", "POST"},
		{"DELETE", "/api/users", http.StatusMethodNotAllowed, "method_not_allowed", "GET, POST"},
		{"PATCH", "/api/users/" + missingID, http.StatusMethodNotAllowed, "method_not_allowed", "GET, PUT, DELETE"},
		{"POST", "/healthz", http.StatusMethodNotAllowed, "method_not_allowed", "GET"},
		{"PUT", "/api/users/me", http.StatusMethodNotAllowed, "method_not_allowed", "GET"},
		{"DELETE", "/api/users/me", http.StatusMethodNotAllowed, "method_not_allowed", "GET"},
		{"POST", "/api/users/me", http.StatusMethodNotAllowed, "method_not_allowed", "GET"},
		{"PATCH", "/api/users/me", http.StatusMethodNotAllowed, "method_not_allowed", "GET"},
		{"HEAD", "/api/users/me", http.StatusMethodNotAllowed, "method_not_allowed", "GET"},
		{"PROPFIND", "/api/users/me", http.StatusMethodNotAllowed, "method_not_allowed", "GET"},
	} {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			res := s.do(tt.method, tt.path, nil, withToken(admin))
			if tt.method == "HEAD" {
				// A HEAD answer has no body to check.
				if res.Status != tt.status || res.Header.Get("Allow") != tt.allow {
					t.Errorf("HEAD: %d, Allow %q", res.Status, res.Header.Get("Allow"))
				}
				return
			}
			p := wantProblem(t, res, tt.status, tt.code)
			if got := res.Header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
			if p.Instance != tt.path {
				t.Errorf("instance = %q", p.Instance)
			}
		})
	}
	// The 405 on /api/users/me wins over header checks and authentication.
	res := s.do("PUT", "/api/users/me", "x", withHeader("Content-Type", "text/plain"), withHeader("Accept", "text/html"))
	wantProblem(t, res, http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestHealth(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	var body map[string]string
	wantJSON(t, s.do("GET", "/healthz", nil), http.StatusOK, &body)
	if body["status"] != "ok" {
		t.Errorf("healthz = %v", body)
	}
	wantJSON(t, s.do("GET", "/readyz", nil), http.StatusOK, &body)
	if body["status"] != "ready" {
		t.Errorf("readyz = %v", body)
	}

	down := newTestServer(t, withHealth(pingFunc(func(context.Context) error {
		return fmt.Errorf("ping: %w", domain.ErrUnavailable)
	})))
	res := down.do("GET", "/readyz", nil)
	wantProblem(t, res, http.StatusServiceUnavailable, "unavailable")
	if res.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After on 503")
	}
	// Liveness does not depend on the store.
	wantJSON(t, down.do("GET", "/healthz", nil), http.StatusOK, nil)

	broken := newTestServer(t, withHealth(pingFunc(func(context.Context) error {
		return errors.New("dial tcp 10.1.2.3:5432: connection refused")
	})))
	res = broken.do("GET", "/readyz", nil)
	wantProblem(t, res, http.StatusServiceUnavailable, "unavailable")
	if strings.Contains(string(res.Body), "10.1.2.3") {
		t.Errorf("internals leaked: %s", res.Body)
	}
}

type pingFunc func(context.Context) error

func (f pingFunc) Ping(ctx context.Context) error { return f(ctx) }

func TestMalformedJSON(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	valid := `{"name":"Ada","email":"ada@example.com","password":"` + custPassword + `"}`
	for _, tt := range []struct {
		name, body, code string
	}{
		{"syntax", `{"name":"Ada",}`, "malformed_json"},
		{"unterminated", `{"name":"Ada"`, "malformed_json"},
		{"trailing_object", valid + `{}`, "malformed_json"},
		{"trailing_garbage", valid + ` x`, "malformed_json"},
		{"trailing_value", valid + ` 1`, "malformed_json"},
		{"wrong_type_string", `{"name":["Ada"],"email":"ada@example.com","password":"` + custPassword + `"}`, "malformed_json"},
		{"wrong_type_profiles_element", `{"name":"Ada","email":"ada@example.com","password":"` + custPassword + `","profiles":[1]}`, "malformed_json"},
		{"array", `[` + valid + `]`, "malformed_json"},
		{"string", `"hello"`, "malformed_json"},
		{"number", `42`, "malformed_json"},
		{"null", `null`, "malformed_json"},
		{"empty", ``, "malformed_json"},
		{"whitespace", " \n\t ", "malformed_json"},
		{"duplicate_key", `{"name":"Ada","name":"Eve","email":"ada@example.com","password":"` + custPassword + `"}`, "malformed_json"},
		{"unknown_field", `{"name":"Ada","email":"ada@example.com","password":"` + custPassword + `","admin":true}`, "unknown_field"},
		{"unknown_field_first", `{"admin":true,"name":"Ada"}`, "unknown_field"},
		{"case_variant_of_known_field", `{"NAME":"Ada","email":"ada@example.com","password":"` + custPassword + `"}`, "unknown_field"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := wantProblem(t, s.do("POST", "/api/users", tt.body), http.StatusBadRequest, tt.code)
			if tt.code == "unknown_field" && !regexp.MustCompile(`"(admin|NAME)"`).MatchString(p.Detail) {
				t.Errorf("detail %q does not name the field", p.Detail)
			}
			if tt.name == "wrong_type_string" && !strings.Contains(p.Detail, `"name"`) {
				t.Errorf("detail %q does not name the field", p.Detail)
			}
		})
	}
	// The JSON was the only thing wrong: the valid body works, once.
	wantJSON(t, s.do("POST", "/api/users", valid), http.StatusCreated, nil)
}

func TestHeaders_accept(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	tok := s.adminToken()
	for _, tt := range []struct {
		accept string
		ok     bool
	}{
		{"", true},
		{"*/*", true},
		{"application/*", true},
		{"application/json", true},
		{"Application/JSON", true},
		{"application/json; charset=utf-8", true},
		{"application/problem+json", true},
		{"text/html, application/json;q=0.9", true},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", true}, // a browser
		{"text/html", false},
		{"text/plain, text/html", false},
		{"application/xml", false},
		{"application/json;q=0", false},
		{"application/json;q=0, text/html", false},
	} {
		t.Run(tt.accept, func(t *testing.T) {
			opt := withHeader("Accept", tt.accept)
			if tt.accept == "" {
				opt = withoutHeader("Accept")
			}
			for _, r := range []struct{ method, path string }{{"GET", "/api/users/me"}, {"POST", "/auth/logout"}} {
				var body any
				if r.method == "POST" {
					body = map[string]string{"refreshToken": "3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70"}
				}
				res := s.do(r.method, r.path, body, withToken(tok), opt)
				if tt.ok {
					if res.Status >= 400 {
						t.Errorf("%s %s: %d %s", r.method, r.path, res.Status, res.Body)
					}
					continue
				}
				wantProblem(t, res, http.StatusNotAcceptable, "not_acceptable")
			}
		})
	}
	// 406 comes before authentication: it is about the request's form.
	wantProblem(t, s.do("GET", "/api/users/me", nil, withHeader("Accept", "text/html")), http.StatusNotAcceptable, "not_acceptable")
	// Operational routes are not API routes.
	wantJSON(t, s.do("GET", "/healthz", nil, withHeader("Accept", "text/html")), http.StatusOK, nil)
}

func TestHeaders_contentType(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	tok := s.adminToken()
	body := `{"refreshToken":"3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70"}`
	for _, tt := range []struct {
		contentType string
		ok          bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON; Charset=UTF-8", true},
		{"application/merge-patch+json", true},
		{"text/plain", false},
		{"application/x-www-form-urlencoded", false},
		{"multipart/form-data; boundary=x", false},
		{"application/jsonx", false},
		{"json", false},
		{"", false},
	} {
		t.Run(tt.contentType, func(t *testing.T) {
			opt := withHeader("Content-Type", tt.contentType)
			if tt.contentType == "" {
				opt = withoutHeader("Content-Type")
			}
			res := s.do("POST", "/auth/logout", body, opt)
			if tt.ok {
				if res.Status != http.StatusNoContent {
					t.Errorf("%d %s", res.Status, res.Body)
				}
				return
			}
			wantProblem(t, res, http.StatusUnsupportedMediaType, "unsupported_media_type")
			wantProblem(t, s.do("POST", "/api/users", body, opt), http.StatusUnsupportedMediaType, "unsupported_media_type")
			wantProblem(t, s.do("PUT", "/api/users/"+missingID, `{}`, opt, withToken(tok)), http.StatusUnsupportedMediaType, "unsupported_media_type")
		})
	}
	// GET and DELETE carry no body: their Content-Type does not matter.
	wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(tok), withHeader("Content-Type", "text/plain")), http.StatusOK, nil)
}

func TestHeaders_bodyTooLarge(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	tok := s.adminToken()
	big := `{"name":"` + strings.Repeat("a", 64<<10) + `"}`

	// Declared length: refused before reading.
	wantProblem(t, s.do("POST", "/api/users", big), http.StatusRequestEntityTooLarge, "payload_too_large")
	wantProblem(t, s.do("PUT", "/api/users/"+missingID, big, withToken(tok)), http.StatusRequestEntityTooLarge, "payload_too_large")
	wantProblem(t, s.do("POST", "/auth/login", big), http.StatusRequestEntityTooLarge, "payload_too_large")
	// The declared length is judged with the other header checks, before
	// authentication.
	wantProblem(t, s.do("PUT", "/api/users/"+missingID, big), http.StatusRequestEntityTooLarge, "payload_too_large")
	// Unknown length (chunked): cut off while reading.
	res := s.do("POST", "/api/users", io.MultiReader(strings.NewReader(big)))
	wantProblem(t, res, http.StatusRequestEntityTooLarge, "payload_too_large")
	// Just under the limit is read (and then judged on its content).
	under := `{"name":"` + strings.Repeat("a", 64<<10-12) + `"}`
	if len(under) != 64<<10-1 {
		t.Fatalf("len = %d", len(under))
	}
	wantProblem(t, s.do("POST", "/api/users", io.MultiReader(strings.NewReader(under))), http.StatusBadRequest, "validation_failed")

	small := newTestServer(t, withMaxBody(16))
	wantProblem(t, small.do("POST", "/auth/login", `{"email":"a@example.com","password":"x"}`), http.StatusRequestEntityTooLarge, "payload_too_large")
}

func TestHeaders_requestID(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	generated := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for _, tt := range []struct {
		name, sent string
		echoed     bool
	}{
		{"sane", "abc-123.DEF_x", true},
		{"max_length", strings.Repeat("a", 64), true},
		{"absent", "", false},
		{"too_long", strings.Repeat("a", 65), false},
		{"uuid", "3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70", true},
		{"slash", "a/b", false},
		{"non_ascii", "ümlaut", false},
		{"spaces", "bad id", false},
		{"markup", "<script>", false},
		{"newline_escape", "a%0Ab", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/healthz", "/api/users/me", "/nope"} {
				var opts []reqOption
				if tt.sent != "" {
					opts = append(opts, withHeader("X-Request-Id", tt.sent))
				}
				res := s.do("GET", path, nil, opts...)
				got := res.Header.Get("X-Request-Id")
				if tt.echoed && got != tt.sent {
					t.Errorf("%s: X-Request-Id = %q, want %q", path, got, tt.sent)
				}
				if !tt.echoed && !generated.MatchString(got) {
					t.Errorf("%s: X-Request-Id = %q, want a generated id", path, got)
				}
			}
		})
	}
	a := s.do("GET", "/healthz", nil).Header.Get("X-Request-Id")
	b := s.do("GET", "/healthz", nil).Header.Get("X-Request-Id")
	if a == b {
		t.Errorf("two requests share the generated id %q", a)
	}
}

// faultyUsers fails or panics on chosen calls of the real repository.
type faultyUsers struct {
	ports.UserRepository
	listErr error
	byIDErr error
	panicOn string
}

func (f *faultyUsers) List(ctx context.Context, q ports.UserListQuery) ([]domain.User, error) {
	if f.panicOn == "List" {
		panic("repository exploded")
	}
	if f.listErr != nil {
		return nil, f.listErr
	}
	return f.UserRepository.List(ctx, q)
}

func (f *faultyUsers) ByID(ctx context.Context, id domain.UserID) (domain.User, error) {
	if f.byIDErr != nil {
		return domain.User{}, f.byIDErr
	}
	return f.UserRepository.ByID(ctx, id)
}

func TestUnexpectedErrors(t *testing.T) {
	t.Parallel()
	faulty := &faultyUsers{}
	s := newTestServer(t, withoutAccountCache(), withUserRepo(func(r ports.UserRepository) ports.UserRepository {
		faulty.UserRepository = r
		return faulty
	}))
	tok := s.adminToken()

	t.Run("internal", func(t *testing.T) {
		faulty.listErr = errors.New("pq: relation users_secret_table does not exist")
		defer func() { faulty.listErr = nil }()
		res := s.do("GET", "/api/users", nil, withToken(tok), withHeader("X-Request-Id", "trace-500"))
		p := wantProblem(t, res, http.StatusInternalServerError, "internal")
		if strings.Contains(string(res.Body), "users_secret_table") || strings.Contains(p.Detail, "pq") {
			t.Errorf("500 body leaks internals: %s", res.Body)
		}
		logs := s.logs.String()
		if !strings.Contains(logs, "users_secret_table") || !strings.Contains(logs, "trace-500") {
			t.Errorf("the error is not logged with its request id:\n%s", logs)
		}
	})
	t.Run("unavailable", func(t *testing.T) {
		faulty.byIDErr = fmt.Errorf("user by id: %w", domain.ErrUnavailable)
		defer func() { faulty.byIDErr = nil }()
		res := s.do("GET", "/api/users/me", nil, withToken(tok))
		wantProblem(t, res, http.StatusServiceUnavailable, "unavailable")
		if got := res.Header.Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After = %q", got)
		}
	})
	t.Run("panic", func(t *testing.T) {
		faulty.panicOn = "List"
		defer func() { faulty.panicOn = "" }()
		res := s.do("GET", "/api/users", nil, withToken(tok), withHeader("X-Request-Id", "trace-panic"))
		wantProblem(t, res, http.StatusInternalServerError, "internal")
		if strings.Contains(string(res.Body), "exploded") {
			t.Errorf("500 body leaks the panic: %s", res.Body)
		}
		if logs := s.logs.String(); !strings.Contains(logs, "repository exploded") {
			t.Errorf("panic not logged")
		}
		// The server keeps serving.
		faulty.panicOn = ""
		wantJSON(t, s.do("GET", "/api/users", nil, withToken(tok)), http.StatusOK, nil)
	})
}

// TestServeHTTP runs one request through a real listener, to catch what a
// recorder forgives (a status written twice, a body on a 204).
func TestServeHTTP(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	srv := httptest.NewServer(s.handler)
	defer srv.Close()

	req, _ := http.NewRequest("POST", srv.URL+"/auth/logout", strings.NewReader(`{"refreshToken":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != http.StatusNoContent || len(body) != 0 || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("logout: %d %q %v", res.StatusCode, body, res.Header)
	}

	big := strings.NewReader(`{"email":"` + strings.Repeat("a", 70<<10) + `"}`)
	req, _ = http.NewRequest("POST", srv.URL+"/auth/login", io.NopCloser(big)) // unknown length: chunked
	req.Header.Set("Content-Type", "application/json")
	res, err = srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("chunked large body: %d %v", res.StatusCode, res.Header)
	}
}

// hangingUsers is a store that went away: every read waits until the
// request gives up.
type hangingUsers struct {
	ports.UserRepository
	hang atomic.Bool
}

func (h *hangingUsers) ByID(ctx context.Context, id domain.UserID) (domain.User, error) {
	if h.hang.Load() {
		<-ctx.Done()
		return domain.User{}, fmt.Errorf("user by id: %w", ctx.Err())
	}
	return h.UserRepository.ByID(ctx, id)
}

func TestRequestTimeout_answers_503_instead_of_hanging(t *testing.T) {
	t.Parallel()
	hanging := &hangingUsers{}
	s := newTestServer(t, withRequestTimeout(50*time.Millisecond), withUserRepo(func(r ports.UserRepository) ports.UserRepository {
		hanging.UserRepository = r
		return hanging
	}))
	tok := s.adminToken()
	hanging.hang.Store(true)
	res := s.do("GET", "/api/users/me", nil, withToken(tok))
	wantProblem(t, res, http.StatusServiceUnavailable, "unavailable")
	if res.Header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	if logs := s.logs.String(); !strings.Contains(logs, "request failed: unavailable") {
		t.Error("the timeout is not logged")
	}
}
