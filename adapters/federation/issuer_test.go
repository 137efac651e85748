package federation_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/userd/userd/adapters/clock"
)

// The OAuth client the fake issuer knows.
const (
	issuerClientID     = "userd-client"
	issuerClientSecret = "userd-client-secret"
	issuerKeyID        = "key-1"
	issuerAccessToken  = "at-of-the-fake-issuer"
)

// fakeIssuer is an OpenID provider as small as the adapter's checks
// need: discovery, a JWKS of one RSA key, a token endpoint that answers
// an ID token the test shapes, and userinfo. Its knobs are set between
// calls, under mu.
type fakeIssuer struct {
	t     *testing.T
	srv   *httptest.Server
	clock *clock.Manual
	key   *rsa.PrivateKey

	mu sync.Mutex
	// discoveryStatus and keysStatus, when set, are what discovery and
	// the JWKS answer instead (503: the provider is down).
	discoveryStatus int
	keysStatus      int
	// discoveryIssuer, when set, is the issuer discovery claims.
	discoveryIssuer string
	discoveries     int
	// secretInForm makes the provider take client_secret_post alone.
	secretInForm bool
	// tokenStatus, when set, makes the token endpoint refuse with it.
	tokenStatus int
	// idToken shapes the next ID token from the flow's nonce; nil
	// leaves the token endpoint's answer without one.
	idToken func(nonce string) string
	// nonce is the nonce of the flow the next ID token answers.
	nonce string
	// userinfo is what userinfo answers.
	userinfo map[string]any
	// userinfoStatus, when set, is userinfo's status, with a page that
	// echoes the request's Authorization header, as careless error
	// pages do.
	userinfoStatus int
	// verifier is the code_verifier the token endpoint received last.
	verifier string
	// code is the code the token endpoint received last.
	code string
}

// newFakeIssuer runs a fake issuer until the end of t, its clock at now.
func newFakeIssuer(t *testing.T) *fakeIssuer {
	t.Helper()
	f := &fakeIssuer{t: t, clock: clock.NewManual(time.Now().UTC()), key: issuerKey()}
	f.idToken = func(nonce string) string { return f.sign(f.claims(nonce), f.key) }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", f.discovery)
	mux.HandleFunc("GET /keys", f.keys)
	mux.HandleFunc("POST /token", f.token)
	mux.HandleFunc("GET /userinfo", f.userInfo)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// issuerKey signs the fake issuers' ID tokens, foreignKey a forger's:
// made once, since an RSA key takes a while.
var (
	issuerKey  = sync.OnceValue(newRSAKey)
	foreignKey = sync.OnceValue(newRSAKey)
)

func newRSAKey() *rsa.PrivateKey {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return key
}

// issuer is the fake's issuer URL.
func (f *fakeIssuer) issuer() string { return f.srv.URL }

// set changes the fake's knobs under its lock.
func (f *fakeIssuer) set(change func(f *fakeIssuer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

// claims are an honest ID token's claims for the flow's nonce.
func (f *fakeIssuer) claims(nonce string) jwt.MapClaims {
	now := f.clock.Now()
	return jwt.MapClaims{
		"iss":            f.issuer(),
		"aud":            issuerClientID,
		"sub":            "248289761001",
		"iat":            now.Unix(),
		"exp":            now.Add(5 * time.Minute).Unix(),
		"nonce":          nonce,
		"email":          "Jane.Doe@Example.COM",
		"email_verified": true,
		"name":           "Jane Doe",
	}
}

// sign signs claims with key, under the fake's key id.
func (f *fakeIssuer) sign(claims jwt.MapClaims, key *rsa.PrivateKey) string {
	token := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	token.Header["kid"] = issuerKeyID
	signed, err := token.SignedString(key)
	if err != nil {
		f.t.Fatal(err)
	}
	return signed
}

func (f *fakeIssuer) discovery(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.discoveries++
	if f.discoveryStatus != 0 {
		w.WriteHeader(f.discoveryStatus)
		return
	}
	issuer := f.issuer()
	if f.discoveryIssuer != "" {
		issuer = f.discoveryIssuer
	}
	authMethods := []string{"client_secret_basic"}
	if f.secretInForm {
		authMethods = []string{"client_secret_post"}
	}
	writeJSON(w, map[string]any{
		"issuer":                                issuer,
		"authorization_endpoint":                f.issuer() + "/authorize",
		"token_endpoint":                        f.issuer() + "/token",
		"jwks_uri":                              f.issuer() + "/keys",
		"userinfo_endpoint":                     f.issuer() + "/userinfo",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"token_endpoint_auth_methods_supported": authMethods,
	})
}

func (f *fakeIssuer) keys(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	status := f.keysStatus
	f.mu.Unlock()
	if status != 0 {
		w.WriteHeader(status)
		return
	}
	pub := f.key.PublicKey
	writeJSON(w, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": issuerKeyID,
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

func (f *fakeIssuer) token(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// The client authenticates as the discovery document says, and no
	// other way.
	id, secret, ok := r.BasicAuth()
	if f.secretInForm {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
		ok = r.Header.Get("Authorization") == ""
	}
	if !ok || id != issuerClientID || secret != issuerClientSecret {
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]string{"error": "invalid_client"})
		return
	}
	f.verifier = r.PostFormValue("code_verifier")
	f.code = r.PostFormValue("code")
	if f.tokenStatus != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.tokenStatus)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": "the code " + f.code + " is spent"})
		return
	}
	answer := map[string]any{"access_token": issuerAccessToken, "token_type": "Bearer", "expires_in": 300}
	if f.idToken != nil {
		answer["id_token"] = f.idToken(f.nonce)
	}
	writeJSON(w, answer)
}

func (f *fakeIssuer) userInfo(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.userinfoStatus != 0 {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(f.userinfoStatus)
		_, _ = w.Write([]byte("Error. Request: Authorization: " + r.Header.Get("Authorization"))) //nolint:gosec // G705: the echo is the fault under test, in plain text
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+issuerAccessToken {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if f.userinfo == nil {
		writeJSON(w, map[string]any{"sub": "248289761001"})
		return
	}
	writeJSON(w, f.userinfo)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// s256 is the PKCE S256 challenge of verifier.
func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// containsAny reports whether s holds one of the secrets.
func containsAny(s string, secrets ...string) (string, bool) {
	for _, secret := range secrets {
		if secret != "" && strings.Contains(s, secret) {
			return secret, true
		}
	}
	return "", false
}
