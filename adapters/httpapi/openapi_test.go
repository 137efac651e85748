package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gin-gonic/gin"
	"gopkg.in/yaml.v3"

	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/domain"
)

// The OpenAPI document is held to the code from both sides: every response
// that the tests of this package receive through testServer.do is checked
// against it (checkOpenAPI), and the routes of the gin engine must be
// exactly the operations of the document (TestOpenAPI_routes_are_the_engines).
// TestMain fails the run when an operation of the document was never
// exercised, so every route is covered by the response validation.

func init() {
	// The non-JSON bodies of the document (the /docs page and its files,
	// the metrics) are plain text to the validator.
	openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/javascript", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("text/css", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/openmetrics-text", openapi3filter.PlainBodyDecoder)
}

func TestMain(m *testing.M) {
	code := m.Run()
	// Only a run of the whole package exercises every operation.
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "" {
		if missing := unexercisedOperations(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "FAIL: no test response was validated for these operations of openapi.yaml:\n\t%s\n",
				strings.Join(missing, "\n\t"))
			code = 1
		}
	}
	os.Exit(code)
}

// docValidator is the document loaded by kin-openapi, with a router that
// finds the operation of a request.
type docValidator struct {
	doc    *openapi3.T
	router routers.Router
}

var loadDocValidator = sync.OnceValues(func() (*docValidator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(httpapi.OpenAPI())
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return &docValidator{doc: doc, router: router}, nil
})

func docValidatorFor(t testing.TB) *docValidator {
	t.Helper()
	v, err := loadDocValidator()
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	return v
}

// exercised records, per operation ("GET /api/users/{id}"), the statuses
// validated through testServer.do.
var exercised = struct {
	sync.Mutex
	ops map[string]map[int]bool
}{ops: map[string]map[int]bool{}}

func unexercisedOperations() []string {
	v, err := loadDocValidator()
	if err != nil {
		return []string{err.Error()}
	}
	exercised.Lock()
	defer exercised.Unlock()
	var missing []string
	for _, op := range v.operations() {
		if len(exercised.ops[op]) == 0 {
			missing = append(missing, op)
		}
	}
	return missing
}

// operations lists "METHOD /path" for every operation of the document.
func (v *docValidator) operations() []string {
	var out []string
	for path, item := range v.doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, method+" "+path)
		}
	}
	sort.Strings(out)
	return out
}

// checkOpenAPI fails t unless res, the answer to req, is documented. reqBody
// is the body sent, nil when unknown.
func checkOpenAPI(t testing.TB, req *http.Request, reqBody []byte, res response) {
	t.Helper()
	if consolePage(req.Method, req.URL.Path) {
		return
	}
	v := docValidatorFor(t)
	op, err := v.check(req, reqBody, res)
	if err != nil {
		t.Errorf("%s %s → %d does not match openapi.yaml: %v\nbody: %.500s", req.Method, req.URL.Path, res.Status, err, res.Body)
	}
	if op != "" {
		exercised.Lock()
		if exercised.ops[op] == nil {
			exercised.ops[op] = map[int]bool{}
		}
		exercised.ops[op][res.Status] = true
		exercised.Unlock()
	}
}

// documentedPages are the pages under /account/ that the document
// describes: those the links of userd's messages open, and their
// stylesheet.
var documentedPages = []string{"GET /account/verify-email", "POST /account/verify-email",
	"GET /account/reset-password", "POST /account/reset-password", "GET /account/assets/style.css"}

// consolePage reports a GET or POST of the admin console or the account
// page (or one of the pages' handler's own 404 and 405 pages): HTML for
// people, routed by prefix to the pages' handler and documented in
// docs/console.md, not in the API's document. adapters/web tests them.
func consolePage(method, path string) bool {
	if method != http.MethodGet && method != http.MethodPost {
		return false
	}
	return strings.HasPrefix(path, "/admin/") ||
		strings.HasPrefix(path, "/account/") && !slices.Contains(documentedPages, method+" "+path)
}

// alwaysAllowedHeaders describe the body; the document describes the rest.
var alwaysAllowedHeaders = []string{"Content-Type", "Content-Length"}

// check validates res against the operation that req resolves to, and
// returns that operation ("" for a request no operation matches, whose
// answer must be the documented 404 or 405). The response's status, every
// header it carries, and its body must be documented; so must the body of
// a request the server accepted (2xx). Requests the server refused are not
// validated: many tests send malformed ones on purpose.
func (v *docValidator) check(req *http.Request, reqBody []byte, res response) (string, error) {
	route, params, err := v.router.FindRoute(req)
	op := ""
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		route = v.unrouted(req, http.StatusNotFound, "NotFound")
	case errors.Is(err, routers.ErrMethodNotAllowed):
		route = v.unrouted(req, http.StatusMethodNotAllowed, "MethodNotAllowed")
	case err != nil:
		return "", fmt.Errorf("find route: %w", err)
	default:
		op = route.Method + " " + route.Path
	}
	where := "the answer to a request that matches no operation"
	if op != "" {
		where = op
	}

	ref := route.Operation.Responses.Status(res.Status)
	if ref == nil || ref.Value == nil {
		return op, fmt.Errorf("status %d is not documented for %s", res.Status, where)
	}
	documented := ref.Value
	for name := range res.Header {
		if slices.Contains(alwaysAllowedHeaders, name) {
			continue
		}
		if !hasHeader(documented.Headers, name) {
			return op, fmt.Errorf("header %s is not documented for %d of %s", name, res.Status, where)
		}
	}
	if len(documented.Content) == 0 && len(res.Body) > 0 {
		return op, fmt.Errorf("%d of %s is documented without a body, but has one", res.Status, where)
	}

	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 res.Status,
		Header:                 res.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(res.Body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		return op, err
	}

	if op != "" && res.Status < 300 && reqBody != nil && route.Operation.RequestBody != nil {
		// The server accepted this body, so the document must accept it.
		// Its Content-Type was JSON to the server, whatever its spelling;
		// a page's form is a form.
		r := req.Clone(context.Background())
		r.Body = http.NoBody
		if len(reqBody) > 0 {
			r.Body = httpNopCloser{bytes.NewReader(reqBody)}
		}
		if mediaType(r.Header) != formContentType {
			r.Header.Set("Content-Type", "application/json")
		}
		err := openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
			Request: r, PathParams: params, Route: route,
			Options: &openapi3filter.Options{
				ExcludeRequestQueryParams: true, // empty ones count as absent; the list tests cover them
				AuthenticationFunc:        openapi3filter.NoopAuthenticationFunc,
				MultiError:                true,
			},
		})
		if err != nil {
			return op, fmt.Errorf("the server accepted a request body the document refuses: %w", err)
		}
	}
	return op, nil
}

type httpNopCloser struct{ *bytes.Reader }

func (httpNopCloser) Close() error { return nil }

// unrouted is a route for a request that matches no operation: the only
// documented answer is the component response named name, with status.
func (v *docValidator) unrouted(req *http.Request, status int, name string) *routers.Route {
	return &routers.Route{
		Spec:   v.doc,
		Path:   req.URL.Path,
		Method: req.Method,
		Operation: &openapi3.Operation{
			Responses: openapi3.NewResponses(openapi3.WithStatus(status, v.doc.Components.Responses[name])),
		},
	}
}

func hasHeader(headers openapi3.Headers, name string) bool {
	for k := range headers {
		if http.CanonicalHeaderKey(k) == http.CanonicalHeaderKey(name) {
			return true
		}
	}
	return false
}

func TestOpenAPI_document_is_valid_and_served(t *testing.T) {
	t.Parallel()
	v := docValidatorFor(t) // loads and validates the document
	if got := v.doc.OpenAPI; got != "3.1.0" {
		t.Errorf("openapi = %q", got)
	}

	s := newTestServer(t)
	res := s.do("GET", "/openapi.json", nil)
	if res.Status != http.StatusOK || mediaType(res.Header) != "application/json" {
		t.Fatalf("GET /openapi.json: %d %s", res.Status, res.Header.Get("Content-Type"))
	}
	if !bytes.Equal(res.Body, httpapi.OpenAPI()) {
		t.Error("the served document differs from httpapi.OpenAPI()")
	}
	if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age") {
		t.Errorf("Cache-Control = %q, want a cacheable answer", cc)
	}

	// The JSON is the YAML source, nothing lost or changed.
	src, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var fromYAML, fromJSON any
	if err := yaml.Unmarshal(src, &fromYAML); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(res.Body, &fromJSON); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(fromYAML)
	b, _ := json.Marshal(fromJSON)
	if !bytes.Equal(a, b) {
		t.Error("the served JSON is not the YAML source")
	}
	// The conversion keeps the order of the source, which the reference
	// page follows.
	if i, j := bytes.Index(res.Body, []byte(`"/api/users"`)), bytes.Index(res.Body, []byte(`"/.well-known/jwks.json"`)); i < 0 || j < 0 || i > j {
		t.Error("paths are not in the order of openapi.yaml")
	}

	// A cache revalidates with the ETag.
	etag := res.Header.Get("ETag")
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		res := s.do("GET", "/openapi.json", nil, withHeader("If-None-Match", inm))
		if res.Status != http.StatusNotModified || len(res.Body) != 0 {
			t.Errorf("If-None-Match %s: %d, %d bytes", inm, res.Status, len(res.Body))
		}
	}
	if res := s.do("GET", "/openapi.json", nil, withHeader("If-None-Match", `"stale"`)); res.Status != http.StatusOK {
		t.Errorf("stale ETag: %d", res.Status)
	}
}

// TestOpenAPI_routes_are_the_engines compares the routes of the gin engine
// with the operations of the document, both ways. The pages are routed by
// prefix (/account/*path, /admin/*path) to their own handler: the
// document's operations under /account/ (the pages of the links userd
// mails) are served by that route, and the admin console, HTML for
// people, is documented in docs/console.md rather than here.
func TestOpenAPI_routes_are_the_engines(t *testing.T) {
	t.Parallel()
	v := docValidatorFor(t)
	// Every optional route on: the audit trail, /metrics and the OpenID
	// provider with its dynamic registration.
	engine, ok := newTestServer(t, withAudit(), withMetrics(), withProviderEndpoints(), withDynamicRegistration()).handler.(*gin.Engine)
	if !ok {
		t.Fatal("the handler is not a *gin.Engine")
	}
	param := regexp.MustCompile(`:([A-Za-z0-9_]+)`)
	var routes []string
	for _, r := range engine.Routes() {
		if strings.HasSuffix(r.Handler, ".meNotAllowed-fm") {
			// The explicit 405 answers of /api/users/me: documented as
			// the MethodNotAllowed response, not as operations.
			if r.Path != "/api/users/me" || r.Method == http.MethodGet {
				t.Errorf("meNotAllowed on %s %s", r.Method, r.Path)
			}
			continue
		}
		if r.Path == "/account/*path" || r.Path == "/admin/*path" {
			continue
		}
		routes = append(routes, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
	}
	sort.Strings(routes)
	ops := v.operations()
	for _, r := range routes {
		if !slices.Contains(ops, r) {
			t.Errorf("route %s is not in openapi.yaml", r)
		}
	}
	for _, op := range ops {
		if method, path, _ := strings.Cut(op, " "); strings.HasPrefix(path, "/account/") &&
			(method == http.MethodGet || method == http.MethodPost) {
			continue
		}
		if !slices.Contains(routes, op) {
			t.Errorf("openapi.yaml documents %s, which the engine does not route", op)
		}
	}
}

// TestOpenAPI_problem_codes checks that the code enum of the Problem schema
// is exactly the set of codes the adapter's source can answer with.
func TestOpenAPI_problem_codes(t *testing.T) {
	t.Parallel()
	v := docValidatorFor(t)
	var documented []string
	for _, c := range v.doc.Components.Schemas["Problem"].Value.Properties["code"].Value.Enum {
		documented = append(documented, c.(string))
	}
	sort.Strings(documented)

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	literal := regexp.MustCompile(`(?:Code:\s*|badRequest\()"([a-z_]+)"`)
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
			seen[m[1]] = true
		}
	}
	var inCode []string
	for c := range seen {
		inCode = append(inCode, c)
	}
	sort.Strings(inCode)
	if !slices.Equal(documented, inCode) {
		t.Errorf("problem codes\nin openapi.yaml: %v\nin the code:     %v", documented, inCode)
	}
}

// TestOpenAPI_validation_catches_drift feeds the validator answers that
// differ from the document in one way each, and expects each to be caught:
// the response validation of every test is only worth something if it
// fails on an undocumented field, status or header.
func TestOpenAPI_validation_catches_drift(t *testing.T) {
	t.Parallel()
	v := docValidatorFor(t)
	const id = "6740f1c2a1b2c3d4e5f60718"
	user := `{"id":"` + id + `","name":"Ada","email":"ada@example.com","profiles":["ROLE_CUSTOMER"],` +
		`"emailVerified":false,"mfaEnabled":false,"disabled":false,"metadata":{},"appMetadata":{},` +
		`"createdAt":"2026-11-21T10:00:00Z","updatedAt":"2026-11-21T10:00:00Z"}`
	withPasswordHash := strings.TrimSuffix(user, "}") + `,"passwordHash":"$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA"}`
	common := func(kv ...string) http.Header {
		h := http.Header{}
		h.Set("X-Request-Id", "test")
		h.Set("X-Content-Type-Options", "nosniff")
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	jsonNoStore := func(kv ...string) http.Header {
		return common(append([]string{"Content-Type", "application/json", "Cache-Control", "no-store"}, kv...)...)
	}
	problem := func(status int, code string) string {
		return fmt.Sprintf(`{"type":"about:blank","title":%q,"status":%d,"detail":"x","instance":"/x","code":%q}`,
			http.StatusText(status), status, code)
	}
	problemHeader := common("Content-Type", "application/problem+json")

	for _, tt := range []struct {
		name         string
		method, path string
		res          response
		ok           bool
	}{
		{"documented_user", "GET", "/api/users/me", response{200, jsonNoStore(), []byte(user)}, true},
		{"extra_field_in_user", "GET", "/api/users/me", response{200, jsonNoStore(), []byte(withPasswordHash)}, false},
		{"missing_field_in_user", "GET", "/api/users/" + id, response{200, jsonNoStore(), []byte(strings.Replace(user, `"name":"Ada",`, "", 1))}, false},
		{"wrong_type_in_list", "GET", "/api/users", response{200, jsonNoStore(), []byte(user)}, false},
		{"undocumented_status", "GET", "/api/users/me", response{http.StatusTeapot, problemHeader, []byte(problem(418, "internal"))}, false},
		{"undocumented_status_for_this_operation", "GET", "/healthz", response{404, problemHeader, []byte(problem(404, "not_found"))}, false},
		{"undocumented_header", "GET", "/healthz", response{200, jsonNoStore("X-Debug", "1"), []byte(`{"status":"ok"}`)}, false},
		{"missing_required_header", "POST", "/api/users", response{201, jsonNoStore(), []byte(user)}, false},
		{"documented_created", "POST", "/api/users", response{201, jsonNoStore("Location", "/api/users/"+id), []byte(user)}, true},
		{"wrong_header_value", "GET", "/.well-known/jwks.json", response{200, jsonNoStore(), []byte(`{"keys":[]}`)}, false},
		{"body_on_204", "DELETE", "/api/users/" + id, response{204, common("Cache-Control", "no-store"), []byte(`{}`)}, false},
		{"wrong_content_type", "GET", "/api/users/me", response{200, common("Content-Type", "text/plain", "Cache-Control", "no-store"), []byte(user)}, false},
		{"code_of_another_status", "GET", "/api/users/" + id, response{404, problemHeader, []byte(problem(404, "email_taken"))}, false},
		{"unknown_problem_code", "GET", "/api/users/" + id, response{400, problemHeader, []byte(problem(400, "bad_id"))}, false},
		{"extra_problem_member", "GET", "/api/users/" + id, response{400, problemHeader, []byte(strings.TrimSuffix(problem(400, "invalid_id"), "}") + `,"trace":"x"}`)}, false},
		{"documented_unknown_path", "GET", "/nope", response{404, problemHeader, []byte(problem(404, "not_found"))}, true},
		{"unknown_path_answered", "GET", "/nope", response{200, jsonNoStore(), []byte(`{}`)}, false},
		{"documented_wrong_method", "PATCH", "/api/users", response{405, common("Content-Type", "application/problem+json", "Allow", "GET, POST"), []byte(problem(405, "method_not_allowed"))}, true},
		{"wrong_method_without_allow", "PATCH", "/api/users", response{405, problemHeader, []byte(problem(405, "method_not_allowed"))}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			_, err := v.check(req, nil, tt.res)
			if tt.ok && err != nil {
				t.Errorf("a documented answer was refused: %v", err)
			}
			if !tt.ok && err == nil {
				t.Error("an undocumented answer passed validation")
			}
			if !tt.ok && err != nil {
				t.Logf("refused as it should be: %v", err)
			}
		})
	}

	// A body the server accepted (2xx) must be one the document accepts.
	req := httptest.NewRequest("POST", "/api/users", nil)
	created := response{201, jsonNoStore("Location", "/api/users/"+id), []byte(user)}
	if _, err := v.check(req, []byte(`{"name":"Ada","email":"ada@example.com","password":"analytical engine"}`), created); err != nil {
		t.Errorf("a documented request body was refused: %v", err)
	}
	if _, err := v.check(req, []byte(`{"name":"Ada","email":"ada@example.com","password":"analytical engine","admin":true}`), created); err == nil {
		t.Error("an accepted request with an undocumented field passed validation")
	}
}

// TestOpenAPI_optional_routes validates answers of the routes that only a
// fully wired handler serves (the audit trail, /metrics) through do, like
// every other answer.
func TestOpenAPI_optional_routes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit(), withMetrics())
	admin := s.adminToken()
	_, cust := s.customer("Ada", "ada@example.com")

	for _, q := range []string{"", "?limit=1", "?limit=200&after="} {
		wantJSON(t, s.do("GET", "/api/audit"+q, nil, withToken(admin)), http.StatusOK, nil)
	}
	if res := s.do("GET", "/api/audit?limit=1", nil, withToken(admin)); res.Header.Get("Link") == "" {
		t.Error("no Link on a partial page of the audit trail")
	}
	wantProblem(t, s.do("GET", "/api/audit", nil, withToken(cust.AccessToken)), http.StatusForbidden, "forbidden")
	wantProblem(t, s.do("GET", "/api/audit?after=x", nil, withToken(admin)), http.StatusBadRequest, "invalid_parameter")

	for _, opts := range [][]reqOption{
		{withoutHeader("Accept")},
		{withHeader("Accept", "application/openmetrics-text; version=1.0.0")},
		{withHeader("Accept-Encoding", "gzip")},
	} {
		if res := s.do("GET", "/metrics", nil, opts...); res.Status != http.StatusOK {
			t.Errorf("GET /metrics: %d", res.Status)
		}
	}
}

// TestOpenAPI_audit_event_types checks that the type enum of AuditEvent,
// and of the type filter, is exactly the domain's list of event types, in
// its order.
func TestOpenAPI_audit_event_types(t *testing.T) {
	t.Parallel()
	v := docValidatorFor(t)
	var documented []string
	for _, c := range v.doc.Components.Schemas["AuditEvent"].Value.Properties["type"].Value.Enum {
		documented = append(documented, c.(string))
	}
	var known []string
	for _, typ := range domain.AuditEventTypes {
		known = append(known, string(typ))
	}
	if !slices.Equal(documented, known) {
		t.Errorf("AuditEvent.type enum\n  %q\nwant domain.AuditEventTypes\n  %q", documented, known)
	}
	// The filter of GET /api/audit takes the same list.
	var filter []string
	for _, c := range v.doc.Components.Parameters["auditType"].Value.Schema.Value.Enum {
		filter = append(filter, c.(string))
	}
	if !slices.Equal(filter, known) {
		t.Errorf("the type parameter's enum\n  %q\nwant domain.AuditEventTypes\n  %q", filter, known)
	}
}
