// Package githubstub is a stand-in for GitHub's OAuth 2 endpoints and the
// two API calls a sign-in with GitHub makes (GET /user, GET /user/emails),
// for tests that sign in through GitHub without the internet.
//
// Its authorize endpoint approves at once, as if the person had clicked
// "Authorize": it checks the client id and that a redirect URI is given,
// remembers the state and the PKCE challenge, and redirects back with a
// code. Its token endpoint checks the client secret, the code and the
// verifier against the S256 challenge, and answers an access token that
// the API endpoints then require. A refused redemption is answered as
// GitHub does: 200 with an "error" field.
package githubstub

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// User is the person at GitHub, as GET /user shows them.
type User struct {
	ID    int64
	Login string
	Name  string
}

// Email is one address of GET /user/emails.
type Email struct {
	Email    string
	Primary  bool
	Verified bool
}

// Options are the OAuth app the stub knows and the person who approves.
type Options struct {
	ClientID     string
	ClientSecret string
	User         User
	Emails       []Email
	// APIPrefix is the path of the API on the server: "" as on
	// api.github.com, "/api/v3" as on GitHub Enterprise Server.
	APIPrefix string
	// APIStatus, when set, is the status every API call answers (401: a
	// token GitHub no longer honours; 500: GitHub failing).
	APIStatus int
}

// Server is a running stand-in; Start stops it at the test's end.
type Server struct {
	srv  *httptest.Server
	opts Options

	mu sync.Mutex
	// grants are the codes given and not yet redeemed.
	grants map[string]grant
	// tokens are the access tokens issued.
	tokens map[string]bool
	// states are the states of the authorization requests, in order.
	states []string
}

// grant is what an approved authorization request leaves for its code.
type grant struct {
	redirectURI string
	challenge   string
}

// Start runs a stand-in for opts until the end of t.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{opts: opts, grants: map[string]grant{}, tokens: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/oauth/authorize", s.authorize)
	mux.HandleFunc("POST /login/oauth/access_token", s.token)
	mux.HandleFunc("GET "+opts.APIPrefix+"/user", s.user)
	mux.HandleFunc("GET "+opts.APIPrefix+"/user/emails", s.emails)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// AuthURL is the authorize endpoint (a provider's authUrl).
func (s *Server) AuthURL() string { return s.srv.URL + "/login/oauth/authorize" }

// TokenURL is the token endpoint (a provider's tokenUrl).
func (s *Server) TokenURL() string { return s.srv.URL + "/login/oauth/access_token" }

// APIURL is the API's root (a provider's apiUrl).
func (s *Server) APIURL() string { return s.srv.URL + s.opts.APIPrefix }

// States are the states of the authorization requests the stub
// approved, in order.
func (s *Server) States() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.states...)
}

// Approve follows an authorization URL as a browser would, up to the
// redirect back, and returns the redirect's query (code and state): for
// tests that drive the flow without a browser.
func (s *Server) Approve(t testing.TB, authCodeURL string) url.Values {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(authCodeURL)
	if err != nil {
		t.Fatalf("githubstub: authorize: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("githubstub: authorize answered %d, want 302", resp.StatusCode)
	}
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatalf("githubstub: authorize's redirect: %v", err)
	}
	return back.Query()
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != s.opts.ClientID {
		http.Error(w, "unknown client_id", http.StatusNotFound)
		return
	}
	redirectURI := q.Get("redirect_uri")
	back, err := url.Parse(redirectURI)
	if redirectURI == "" || err != nil || !back.IsAbs() {
		http.Error(w, "redirect_uri is required", http.StatusBadRequest)
		return
	}
	challenge := q.Get("code_challenge")
	if challenge != "" && q.Get("code_challenge_method") != "S256" {
		http.Error(w, "code_challenge_method must be S256", http.StatusBadRequest)
		return
	}
	code := randomString()
	s.mu.Lock()
	s.grants[code] = grant{redirectURI: redirectURI, challenge: challenge}
	s.states = append(s.states, q.Get("state"))
	s.mu.Unlock()

	answer := back.Query()
	answer.Set("code", code)
	if state := q.Get("state"); state != "" {
		answer.Set("state", state)
	}
	back.RawQuery = answer.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound) //nolint:gosec // G710: a test's stand-in sends the browser back wherever the test's client asks

}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	clientID, secret, basic := r.BasicAuth()
	if !basic {
		clientID, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if clientID != s.opts.ClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(s.opts.ClientSecret)) != 1 {
		refuse(w, "incorrect_client_credentials")
		return
	}
	code := r.PostForm.Get("code")
	s.mu.Lock()
	g, ok := s.grants[code]
	delete(s.grants, code)
	s.mu.Unlock()
	if !ok {
		refuse(w, "bad_verification_code")
		return
	}
	if uri := r.PostForm.Get("redirect_uri"); uri != "" && uri != g.redirectURI {
		refuse(w, "redirect_uri_mismatch")
		return
	}
	if g.challenge != "" && s256(r.PostForm.Get("code_verifier")) != g.challenge {
		refuse(w, "bad_verification_code")
		return
	}
	access := "gho_" + randomString()
	s.mu.Lock()
	s.tokens[access] = true
	s.mu.Unlock()
	writeJSON(w, map[string]string{"access_token": access, "token_type": "bearer", "scope": "read:user,user:email"})
}

// authorized reports whether r bears a token the stub issued, and answers
// it as GitHub would when not (or when Options.APIStatus says so).
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.APIStatus != 0 {
		w.WriteHeader(s.opts.APIStatus)
		return false
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	known := ok && s.tokens[token]
	s.mu.Unlock()
	if !known {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`))
		return false
	}
	return true
}

func (s *Server) user(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	u := s.opts.User
	var name any
	if u.Name != "" {
		name = u.Name
	}
	writeJSON(w, map[string]any{"id": u.ID, "login": u.Login, "name": name, "type": "User"})
}

func (s *Server) emails(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	list := []map[string]any{}
	for _, e := range s.opts.Emails {
		list = append(list, map[string]any{"email": e.Email, "primary": e.Primary, "verified": e.Verified, "visibility": nil})
	}
	writeJSON(w, list)
}

// refuse answers a refused redemption as GitHub does: 200, and the error
// in the body.
func refuse(w http.ResponseWriter, code string) {
	writeJSON(w, map[string]string{"error": code, "error_description": "refused by githubstub"})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

// s256 is the S256 challenge of a PKCE verifier (RFC 7636 §4.2).
func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func randomString() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
