package kit_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
)

// server answers as userd does on the paths the kit's helpers call, and
// records what it was sent.
func server(t *testing.T) (*httptest.Server, *http.Request, *[]byte) {
	t.Helper()
	var (
		last http.Request
		body []byte
	)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		last = *r.Clone(r.Context())
		body, _ = io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/api/users":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"u1","email":"ada@example.com","emailVerified":false,"name":"Ada"}`)
		case "/auth/login":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"accessToken":"a","refreshToken":"r","user":{"id":"u1"}}`)
		case "/problem":
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"type":"about:blank","title":"Bad Request","status":400,"detail":"no",`+
				`"instance":"/problem","code":"validation_failed","errors":[{"field":"email","message":"bad"}]}`)
		case "/metrics":
			_, _ = io.WriteString(w, "# HELP x y\nuserd_outbox_backlog 3\n"+
				`userd_outbox_messages_total{kind="mail",result="delivered"} 7`+"\n")
		case "/moved":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &last, &body
}

func TestSend_request_and_reply(t *testing.T) {
	srv, last, body := server(t)
	r := kit.Send(t, http.MethodPost, srv.URL+"/problem", map[string]string{"a": "b"}, "tok", "X-Forwarded-For", "203.0.113.1")
	if string(*body) != `{"a":"b"}` || last.Header.Get("Content-Type") != "application/json" ||
		last.Header.Get("Authorization") != "Bearer tok" || last.Header.Get("Accept") != "application/json" ||
		last.Header.Get("X-Forwarded-For") != "203.0.113.1" {
		t.Errorf("sent %s with %v", *body, last.Header)
	}
	if r.Status != http.StatusBadRequest || r.Code() != "validation_failed" || !strings.HasPrefix(r.String(), "400 {") {
		t.Errorf("reply %s, code %q", r, r.Code())
	}
	p := kit.WantProblem(t, r, http.StatusBadRequest, "validation_failed")
	if !slices.Equal(p.Fields(), []string{"email"}) {
		t.Errorf("fields %v", p.Fields())
	}
	kit.Expect(t, "the problem", r, http.StatusBadRequest, "validation_failed")

	// No body: no Content-Type; a redirect is an answer, not followed.
	moved := kit.Send(t, http.MethodGet, srv.URL+"/moved", nil, "")
	if last.Header.Get("Content-Type") != "" || last.Header.Get("Authorization") != "" || moved.Status != http.StatusFound {
		t.Errorf("GET without body or token: %v; redirect answered %d", last.Header, moved.Status)
	}
	if moved.Code() != "" {
		t.Errorf("a body that is no problem has code %q", moved.Code())
	}
}

func TestRegister_login_and_want(t *testing.T) {
	srv, _, body := server(t)
	u := kit.Register(t, srv.URL, "Ada", "ada@example.com", "pw", "X-Request-Id", "r1")
	if u.ID != "u1" || u.Email != "ada@example.com" {
		t.Errorf("user %+v", u)
	}
	var sent map[string]string
	if err := json.Unmarshal(*body, &sent); err != nil || sent["name"] != "Ada" || sent["password"] != "pw" {
		t.Errorf("registration sent %s", *body)
	}
	if tok := kit.Login(t, srv.URL, "ada@example.com", "pw"); tok.AccessToken != "a" || tok.RefreshToken != "r" || tok.User.ID != "u1" {
		t.Errorf("tokens %+v", tok)
	}
	var strict struct {
		AccessToken  string `json:"accessToken"`
		RefreshToken string `json:"refreshToken"`
		User         struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	kit.WantJSON(t, kit.Send(t, http.MethodPost, srv.URL+"/auth/login", nil, ""), http.StatusOK, &strict)
}

func TestClaimsOf(t *testing.T) {
	part := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	jwt := part(map[string]string{"alg": "EdDSA", "kid": "k1"}) + "." +
		part(map[string]any{"sub": "u1", "sid": "s1", "auth_time": 1700000000, "amr": []string{"pwd"}, "acr": "aal1"}) + ".c2ln"
	c := kit.ClaimsOf(t, jwt)
	if c.Sub != "u1" || c.SID != "s1" || c.AuthTime != 1700000000 || !slices.Equal(c.AMR, []string{"pwd"}) || c.ACR != "aal1" {
		t.Errorf("claims %+v", c)
	}
	var header map[string]string
	kit.DecodePart(t, jwt, 0, &header)
	if header["kid"] != "k1" {
		t.Errorf("header %v", header)
	}
}

func TestMetric(t *testing.T) {
	srv, _, _ := server(t)
	if v, ok := kit.Metric(t, srv.URL, "userd_outbox_backlog"); !ok || v != 3 {
		t.Errorf("backlog %v %v", v, ok)
	}
	if v, ok := kit.Metric(t, srv.URL, "userd_outbox_messages_total", "kind", "mail", "result", "delivered"); !ok || v != 7 {
		t.Errorf("delivered %v %v", v, ok)
	}
	if _, ok := kit.Metric(t, srv.URL, "userd_outbox_messages_total", "result", "retried"); ok {
		t.Error("a series with other labels was found")
	}
}

func TestRace_and_Eventually(t *testing.T) {
	var n atomic.Int64
	replies := kit.Race(8, func(i int) kit.Reply {
		n.Add(1)
		return kit.Reply{Status: 200 + i}
	})
	for i, r := range replies {
		if r.Status != 200+i {
			t.Errorf("reply %d: %d", i, r.Status)
		}
	}
	kit.Eventually(t, time.Second, "all eight sent", func() bool { return n.Load() == 8 })
}
