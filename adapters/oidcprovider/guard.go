package oidcprovider

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// The guard runs before zitadel's handlers of the JSON endpoints and holds
// the rules they do not: a bounded body read as a strict form (RFC 6749
// §3.1: a parameter sent twice is invalid_request, where the library
// would take the first), parameters from the body only (never the query,
// where proxies log them), one way of client authentication, the grant
// types userd has, and on the way out the status and headers that RFC
// 6749 §5.2 and RFC 6750 §3 ask for whichever layer wrote the error.

// The parameters that authenticate a client in a form.
const (
	paramClientID     = "client_id"
	paramClientSecret = "client_secret"
)

// The grant types of the token endpoint.
var grantTypes = []string{"authorization_code", "refresh_token", "client_credentials"}

// clientEndpoint says what the guard checks of an endpoint that
// authenticates a client (token, introspection, revocation).
type clientEndpoint struct {
	// grant: the token endpoint, whose grant_type is checked first.
	grant bool
}

// guard wraps next, an endpoint that authenticates its client.
func guard(next http.Handler, e clientEndpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noStore(w)
		_, _, basic := r.BasicAuth()
		out := &answer{w: w, basic: basic || hasScheme(r, "Basic")}
		// Not deferred: a panic must reach the router's recovery with
		// nothing written, not as the empty 200 of a flush.
		e.serve(next, out, r, basic)
		out.flush()
	})
}

// serve checks the request and passes it to next, or writes the refusal.
func (e clientEndpoint) serve(next http.Handler, out *answer, r *http.Request, basic bool) {
	form, err := readForm(out.w, r, true)
	if err != nil {
		writeOAuthError(out, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if e.grant {
		switch gt := form.Get("grant_type"); {
		case gt == "":
			writeOAuthError(out, http.StatusBadRequest, "invalid_request", "grant_type is missing")
			return
		case !contains(grantTypes, gt):
			writeOAuthError(out, http.StatusBadRequest, "unsupported_grant_type",
				"the grant types are authorization_code, refresh_token and client_credentials")
			return
		}
	}
	if out.basic && !basic {
		// Client authentication that failed, not a malformed request
		// (RFC 6749 §5.2), so the client learns to fix its credentials.
		writeOAuthError(out, http.StatusUnauthorized, "invalid_client", "the Basic credentials cannot be read")
		return
	}
	if msg := clientAuthConflict(r, form); msg != "" {
		writeOAuthError(out, http.StatusBadRequest, "invalid_request", msg)
		return
	}
	if !out.basic && form.Get(paramClientID) == "" && form.Get("client_assertion") == "" {
		writeOAuthError(out, http.StatusUnauthorized, "invalid_client", "the client is not identified")
		return
	}
	useForm(r, form)
	next.ServeHTTP(out, r)
}

// clientAuthConflict names what is wrong when a request authenticates its
// client in more than one way (RFC 6749 §2.3): Basic and a secret in the
// form, or Basic and a form client_id naming another client. A form
// client_id equal to Basic's is the same credential, which some clients
// send.
func clientAuthConflict(r *http.Request, form url.Values) string {
	id, _, ok := r.BasicAuth()
	if !ok {
		return ""
	}
	if _, sent := form[paramClientSecret]; sent {
		return "the client authenticates with Basic and client_secret at once"
	}
	if formID, sent := form[paramClientID]; sent {
		if basicID, err := url.QueryUnescape(id); err != nil || basicID != formID[0] {
			return "client_id differs from the client of the Basic credentials"
		}
	}
	return ""
}

// guardUserInfo wraps the userinfo endpoint: the access token comes from
// the Authorization header or, on a POST, from the form's access_token,
// never from both nor from the query (RFC 6750 §2).
func guardUserInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noStore(w)
		bearer := hasScheme(r, "Bearer")
		out := &answer{w: w, bearer: true}
		serveUserInfo(next, out, r, bearer)
		out.flush()
	})
}

// serveUserInfo checks the request and passes it to next, or writes the
// refusal.
func serveUserInfo(next http.Handler, out *answer, r *http.Request, bearer bool) {
	form := url.Values{}
	if r.Method == http.MethodPost && !bodyless(r) {
		var err error
		if form, err = readForm(out.w, r, false); err != nil {
			writeOAuthError(out, http.StatusBadRequest, "invalid_request", err.Error())
			return
		}
	}
	if _, inForm := form["access_token"]; inForm && bearer {
		writeOAuthError(out, http.StatusBadRequest, "invalid_request",
			"the access token is sent in the header and the form at once")
		return
	}
	out.tokenSent = bearer && strings.TrimSpace(r.Header.Get("Authorization")[len("Bearer"):]) != "" ||
		form.Get("access_token") != ""
	useForm(r, form)
	next.ServeHTTP(out, r)
}

// errForm is a form that cannot be read; its message says why, and is
// the error_description.
type errForm string

func (e errForm) Error() string { return string(e) }

// readBody reads r's body as a form: at most MaxBodyBytes of
// application/x-www-form-urlencoded (required when requireType).
func readBody(w http.ResponseWriter, r *http.Request, requireType bool) (url.Values, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "application/x-www-form-urlencoded" && (requireType || !bodyless(r)) {
		return nil, errForm("the body must be application/x-www-form-urlencoded")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, errForm("the body is larger than 64 KiB")
		}
		return nil, errForm("the body cannot be read")
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, errForm("the form cannot be parsed")
	}
	return form, nil
}

// readForm is readBody's form with each parameter once (RFC 6749 §3.1:
// a parameter sent twice is invalid_request).
func readForm(w http.ResponseWriter, r *http.Request, requireType bool) (url.Values, error) {
	form, err := readBody(w, r, requireType)
	if err != nil {
		return nil, err
	}
	for name, values := range form {
		if len(values) > 1 {
			return nil, errForm("a parameter is sent more than once: " + safeName(name))
		}
	}
	return form, nil
}

// useForm makes form the request's parameters, as the library reads
// them (ParseForm leaves a parsed form alone): the body's, and nothing of
// the query.
func useForm(r *http.Request, form url.Values) {
	r.PostForm = form
	r.Form = url.Values{}
	for k, v := range form {
		r.Form[k] = v
	}
	r.Body = http.NoBody
}

// safeName returns a parameter's name for an error message, when it is
// one of the few a client may send; another name could carry anything.
func safeName(name string) string {
	known := []string{"grant_type", "code", "redirect_uri", "code_verifier", "refresh_token", "scope",
		paramClientID, paramClientSecret, "token", "token_type_hint", "access_token",
		"client_assertion", "client_assertion_type"}
	if contains(known, name) {
		return name
	}
	return "(an unknown parameter)"
}

func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

// hasScheme reports whether the Authorization header uses scheme.
func hasScheme(r *http.Request, scheme string) bool {
	v := r.Header.Get("Authorization")
	return len(v) >= len(scheme) && strings.EqualFold(v[:len(scheme)], scheme) &&
		(len(v) == len(scheme) || v[len(scheme)] == ' ')
}

func bodyless(r *http.Request) bool {
	return r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 && len(r.TransferEncoding) == 0
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// oauthErrorBody is an error of RFC 6749 §5.2.
type oauthErrorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// writeOAuthError writes an RFC 6749 §5.2 error.
func writeOAuthError(w http.ResponseWriter, status int, code, description string) {
	writeJSON(w, status, oauthErrorBody{Error: code, Description: description})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"server_error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// answer holds the response of an endpoint until it is complete, so that
// its status and headers can follow the contract whoever wrote it: an
// invalid_client is a 401 (the library writes 400 when it refuses one
// itself), with the Basic challenge when Basic was used; a 401 of the
// userinfo endpoint carries the Bearer challenge (RFC 6750 §3). An
// empty body has no Content-Type.
type answer struct {
	w      http.ResponseWriter
	status int
	body   bytes.Buffer
	// basic: the client used (or tried) Basic; bearer: the userinfo
	// endpoint, where tokenSent says whether an access token came.
	basic, bearer, tokenSent bool
}

func (a *answer) Header() http.Header { return a.w.Header() }

func (a *answer) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
}

func (a *answer) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.body.Write(b)
}

// flush writes the response held.
func (a *answer) flush() {
	status, h := a.status, a.w.Header()
	if status == 0 {
		status = http.StatusOK
	}
	var e oauthErrorBody
	if status >= 400 && json.Unmarshal(a.body.Bytes(), &e) == nil {
		if e.Error == "invalid_client" {
			status = http.StatusUnauthorized
		}
		// The library may add state or a parent error; an error of
		// these endpoints is the two members of §5.2.
		body, _ := json.Marshal(e)
		a.body.Reset()
		a.body.Write(body)
	}
	if status == http.StatusUnauthorized {
		switch {
		case a.bearer && a.tokenSent:
			h.Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		case a.bearer:
			h.Set("WWW-Authenticate", `Bearer realm="userd"`)
		case a.basic:
			h.Set("WWW-Authenticate", `Basic realm="userd"`)
		}
	}
	if a.body.Len() == 0 {
		h.Del("Content-Type")
	}
	a.w.WriteHeader(status)
	_, _ = a.w.Write(a.body.Bytes())
}
