package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"google.golang.org/protobuf/proto"

	"github.com/userd/userd/adapters/tracing"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/logbuf"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it accepts POST /v1/traces
// in protobuf and decodes each export with the protocol's own definitions
// (go.opentelemetry.io/proto/otlp), as a collector does.
type otlpReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
	headers  []http.Header
	errs     []string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		r.errs = append(r.errs, fmt.Sprintf("%s %s %q", req.Method, req.URL.Path, req.Header.Get("Content-Type")))
		http.Error(w, "not an OTLP/HTTP protobuf export of traces", http.StatusBadRequest)
		return
	}
	export := &coltracepb.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(body, export)
	}
	if err != nil {
		r.errs = append(r.errs, "decode: "+err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.requests = append(r.requests, export)
	r.headers = append(r.headers, req.Header.Clone())
	answer, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(answer)
}

// exported is one span as received, with its resource.
type exported struct {
	span     *tracepb.Span
	resource map[string]string
}

func (r *otlpReceiver) spans() []exported {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []exported
	for _, req := range r.requests {
		for _, rs := range req.GetResourceSpans() {
			res := attrMap(rs.GetResource().GetAttributes())
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					all = append(all, exported{span: s, resource: res})
				}
			}
		}
	}
	return all
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[kv.GetKey()] = anyValue(kv.GetValue())
	}
	return m
}

// anyValue is an attribute's value as text, whatever its type.
func anyValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BytesValue:
		return string(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, anyValue(e))
		}
		return strings.Join(parts, ",")
	case *commonpb.AnyValue_KvlistValue:
		var parts []string
		for k, e := range attrMap(x.KvlistValue.GetValues()) {
			parts = append(parts, k+"="+e)
		}
		return strings.Join(parts, ",")
	}
	return ""
}

// A caller's trace id and span id, sent as its traceparent.
const (
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID  = "00f067aa0ba902b7"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set, `userd serve` exports its spans
// to a real OTLP/HTTP receiver: each request by its route, under the
// caller's traceparent; the database's statements under the request's
// span; the webhook's delivery, whose request carried its traceparent;
// the trace id in the request's log lines; and not one secret, token,
// password, email or query string in any exported value.
func TestServer_exports_traces(t *testing.T) {
	receiver := newOTLPReceiver(t)
	var hookMu sync.Mutex
	var hookTraceparents []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookMu.Lock()
		hookTraceparents = append(hookTraceparents, r.Header.Get("Traceparent"))
		hookMu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hook.Close()
	// The claims hook, asked before each token is signed: its call is a
	// span of the sign-in's trace, and carries that span's traceparent.
	var claimsTraceparents []string
	claims := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookMu.Lock()
		claimsTraceparents = append(claimsTraceparents, r.Header.Get("Traceparent"))
		hookMu.Unlock()
		_, _ = io.WriteString(w, `{"claims":{"tenant":"acme"}}`)
	}))
	defer claims.Close()

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-collector-tenant=userd-tests")
	t.Setenv("OTEL_SERVICE_NAME", "userd-traced")
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")

	const (
		password   = "Tr4ce-secret-password!"
		email      = "traced.person@example.com"
		queryToken = "query-secret-5f2b9c"
	)
	webhookSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("webhook-secret-of-32-bytes-long!"))
	addr := freeAddr(t)
	env := map[string]string{
		"USERD_DB_DRIVER":          "sqlite",
		"USERD_DB_DSN":             filepath.Join(t.TempDir(), "userd.db"),
		"USERD_HTTP_ADDR":          addr,
		"USERD_WEBHOOK_URL":        hook.URL + "/events?token=" + queryToken,
		"USERD_WEBHOOK_SECRET":     webhookSecret,
		"USERD_CLAIMS_HOOK_URL":    claims.URL + "/claims",
		"USERD_CLAIMS_HOOK_SECRET": webhookSecret,
		// Cheap hashing: the test is about traces.
		"USERD_ARGON2_MEMORY_KIB": "64", "USERD_ARGON2_ITERATIONS": "1",
	}
	logs := &logbuf.Buffer{}
	var tr *tracing.Tracing
	app := fxtest.New(t, serverOptions(testConfig(t, env), logs), fx.Populate(&tr))
	app.RequireStart()
	defer app.RequireStop()
	if !tr.On() {
		t.Fatal("traces are off with OTEL_EXPORTER_OTLP_ENDPOINT set")
	}
	base := "http://" + addr

	traceparent := "00-" + callerTraceID + "-" + callerSpanID + "-01"
	u := kit.Register(t, base, "Traced Person", email, password, "Traceparent", traceparent)
	tok := kit.Login(t, base, email, password)
	kit.Want(t, "read me", kit.Send(t, http.MethodGet, base+"/api/users/me", nil, tok.AccessToken), http.StatusOK, nil)
	kit.Want(t, "read by id", kit.Send(t, http.MethodGet, base+"/api/users/"+u.ID, nil, tok.AccessToken), http.StatusOK, nil)
	var refreshed kit.Tokens
	kit.Want(t, "refresh", kit.Send(t, http.MethodPost, base+"/auth/refresh-token",
		map[string]string{"refreshToken": tok.RefreshToken}, ""), http.StatusOK, &refreshed)
	kit.Expect(t, "wrong password", kit.Send(t, http.MethodPost, base+"/auth/login",
		map[string]string{"email": email, "password": password + "x"}, ""), http.StatusUnauthorized, "invalid_credentials")
	kit.Send(t, http.MethodGet, base+"/api/users?email="+email, nil, tok.AccessToken)

	kit.Eventually(t, 15*time.Second, "the user.created webhook", func() bool {
		hookMu.Lock()
		defer hookMu.Unlock()
		return len(hookTraceparents) > 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tr.ForceFlush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	spans := receiver.spans()
	t.Logf("%d spans exported: %v", len(spans), names(spans))
	receiver.mu.Lock()
	if len(receiver.errs) > 0 {
		t.Errorf("the receiver refused exports: %v", receiver.errs)
	}
	if len(receiver.headers) == 0 || receiver.headers[0].Get("X-Collector-Tenant") != "userd-tests" {
		t.Errorf("OTEL_EXPORTER_OTLP_HEADERS not sent: %v", receiver.headers)
	}
	receiver.mu.Unlock()
	if len(spans) == 0 {
		t.Fatal("no span exported")
	}
	byName := map[string][]exported{}
	byID := map[string]exported{}
	for _, s := range spans {
		byName[s.span.GetName()] = append(byName[s.span.GetName()], s)
		byID[hex.EncodeToString(s.span.GetSpanId())] = s
		if got := s.resource["service.name"]; got != "userd-traced" {
			t.Errorf("span %q of service %q, want OTEL_SERVICE_NAME's", s.span.GetName(), got)
		}
	}

	// The route template names the span, never the path with its id; a
	// caller's traceparent is the parent.
	register := one(t, byName, "POST /api/users")
	if got := hex.EncodeToString(register.span.GetTraceId()); got != callerTraceID {
		t.Errorf("register's trace id %s, want the caller's %s", got, callerTraceID)
	}
	if got := hex.EncodeToString(register.span.GetParentSpanId()); got != callerSpanID {
		t.Errorf("register's parent %s, want the caller's span %s", got, callerSpanID)
	}
	readByID := one(t, byName, "GET /api/users/:id")
	if a := attrMap(readByID.span.GetAttributes()); a["http.route"] != "/api/users/:id" || a["http.response.status_code"] != "200" {
		t.Errorf("read by id's attributes %v", a)
	}
	for _, s := range spans {
		if strings.Contains(s.span.GetName(), u.ID) {
			t.Errorf("span named by the path with its id: %q", s.span.GetName())
		}
	}

	// The database's statements are children of the request's span.
	readMe := one(t, byName, "GET /api/users/me")
	var statements []exported
	for _, s := range spans {
		if string(s.span.GetParentSpanId()) == string(readMe.span.GetSpanId()) {
			statements = append(statements, s)
		}
	}
	if len(statements) == 0 {
		t.Fatalf("no statement span under GET /api/users/me; spans: %v", names(spans))
	}
	for _, s := range statements {
		a := attrMap(s.span.GetAttributes())
		if a["db.system"] != "sqlite" || !strings.Contains(a["db.query.text"], "?") {
			t.Errorf("statement span %q: %v, want db.system sqlite and the SQL with its placeholders", s.span.GetName(), a)
		}
	}

	// The webhook's delivery is a span of the sign-up's trace, the
	// child of the request that queued the event (issue 30: the caller's
	// traceparent passed on to webhooks), and its POST carried a
	// traceparent of that trace.
	// Other events of the test (the login's) may be delivered before the
	// flush too, each in its own request's trace: the sign-up's is the
	// one in the caller's trace.
	var delivery exported
	for _, s := range byName["outbox deliver webhook"] {
		if hex.EncodeToString(s.span.GetTraceId()) == callerTraceID {
			delivery = s
		}
	}
	if delivery.span == nil {
		t.Fatalf("no webhook delivery in the caller's trace %s; spans: %v", callerTraceID, keys(byName))
	}
	if string(delivery.span.GetParentSpanId()) != string(register.span.GetSpanId()) {
		t.Errorf("the webhook's delivery under span %x, want the sign-up's %x", delivery.span.GetParentSpanId(), register.span.GetSpanId())
	}
	var post exported
	for _, s := range byName["POST"] {
		if string(s.span.GetParentSpanId()) == string(delivery.span.GetSpanId()) {
			post = s
		}
	}
	if post.span == nil {
		t.Fatalf("no outgoing POST under the delivery span; spans: %v", names(spans))
	}
	want := "00-" + hex.EncodeToString(post.span.GetTraceId()) + "-" + hex.EncodeToString(post.span.GetSpanId()) + "-01"
	hookMu.Lock()
	if !slices.Contains(hookTraceparents, want) || !strings.HasPrefix(want, "00-"+callerTraceID+"-") {
		t.Errorf("the webhook's receiver got traceparents %q, want %q, in the caller's trace", hookTraceparents, want)
	}
	hookMu.Unlock()

	// The claims hook's call is a client span under the login's span,
	// and the hook got that span's traceparent.
	var claimsCall exported
	for _, login := range byName["POST /auth/login"] { // the right password's
		for _, s := range byName["POST"] {
			if string(s.span.GetParentSpanId()) == string(login.span.GetSpanId()) {
				claimsCall = s
			}
		}
	}
	if claimsCall.span == nil {
		t.Fatalf("no outgoing POST (the claims hook) under POST /auth/login; spans: %v", names(spans))
	}
	want = "00-" + hex.EncodeToString(claimsCall.span.GetTraceId()) + "-" + hex.EncodeToString(claimsCall.span.GetSpanId()) + "-01"
	hookMu.Lock()
	if !slices.Contains(claimsTraceparents, want) {
		t.Errorf("the claims hook got traceparents %q, want one of them %q", claimsTraceparents, want)
	}
	hookMu.Unlock()

	// The request's log lines carry its trace id.
	var logged bool
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"route":"/api/users"`) && strings.Contains(line, `"method":"POST"`) {
			logged = strings.Contains(line, `"trace_id":"`+callerTraceID+`"`) &&
				strings.Contains(line, `"span_id":"`+hex.EncodeToString(register.span.GetSpanId())+`"`)
		}
	}
	if !logged {
		t.Errorf("no access line of the register with its trace and span id; log:\n%s", logs)
	}

	// No secret anywhere in what was exported.
	secrets := map[string]string{
		"password": password, "email": email, "access token": tok.AccessToken, "refresh token": tok.RefreshToken,
		"refreshed access token": refreshed.AccessToken, "refreshed refresh token": refreshed.RefreshToken,
		"webhook secret": webhookSecret, "query token": queryToken, "query string": "?email=", "local part": "traced.person",
	}
	for _, s := range spans {
		values := []string{s.span.GetName(), s.span.GetStatus().GetMessage()}
		for _, v := range attrMap(s.span.GetAttributes()) {
			values = append(values, v)
		}
		for _, ev := range s.span.GetEvents() {
			values = append(values, ev.GetName())
			for _, v := range attrMap(ev.GetAttributes()) {
				values = append(values, v)
			}
		}
		for _, v := range s.resource {
			values = append(values, v)
		}
		for _, v := range values {
			for what, secret := range secrets {
				if secret != "" && strings.Contains(v, secret) {
					t.Errorf("span %q exports the %s: %q", s.span.GetName(), what, v)
				}
			}
		}
	}
}

// one returns the one span named name.
func one(t *testing.T, byName map[string][]exported, name string) exported {
	t.Helper()
	if len(byName[name]) != 1 {
		t.Fatalf("%d spans named %q, want 1; spans: %v", len(byName[name]), name, keys(byName))
	}
	return byName[name][0]
}

func keys(m map[string][]exported) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s×%d", k, len(v)))
	}
	return out
}

func names(spans []exported) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.span.GetName())
	}
	return out
}
