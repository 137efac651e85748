package httpapi_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// personalTokenBody is the answer of POST /api/users/{id}/tokens.
type personalTokenBody struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Token     string   `json:"token"`
	Scopes    []string `json:"scopes"`
	CreatedAt string   `json:"createdAt"`
	ExpiresAt string   `json:"expiresAt"`
}

// personalTokenListed is one token of GET /api/users/{id}/tokens.
type personalTokenListed struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Prefix     string   `json:"prefix"`
	Scopes     []string `json:"scopes"`
	CreatedAt  string   `json:"createdAt"`
	ExpiresAt  string   `json:"expiresAt"`
	LastUsedAt *string  `json:"lastUsedAt"`
}

// personalToken makes a token of scopes for the caller of the session's
// access token.
func (s *testServer) personalToken(access string, scopes ...string) personalTokenBody {
	s.t.Helper()
	var out personalTokenBody
	wantJSON(s.t, s.do("POST", "/api/users/me/tokens", map[string]any{"name": "ci", "scopes": scopes}, withToken(access)),
		http.StatusCreated, &out)
	return out
}

func (s *testServer) personalTokens(access, id string) []personalTokenListed {
	s.t.Helper()
	var out []personalTokenListed
	wantJSON(s.t, s.do("GET", "/api/users/"+id+"/tokens", nil, withToken(access)), http.StatusOK, &out)
	return out
}

// tokenPolicy is what a personal access token may do on a route.
type tokenPolicy int

const (
	// open: users:read for a GET, users:write for the others.
	open tokenPolicy = iota
	// interactive: never for a token, whatever its scopes.
	interactive
	// notAllowed: the route answers 405 to everyone.
	notAllowed
)

// apiTokenPolicies decides, for every /api route of the engine, what a
// personal access token may do there (contract-identity.md, section 3).
// A route added without a line here fails TestPersonalTokens_every_route.
var apiTokenPolicies = map[string]tokenPolicy{
	"GET /api/users":                                  open,
	"POST /api/users":                                 open,
	"GET /api/users/me":                               open,
	"GET /api/users/:id":                              open,
	"PUT /api/users/:id":                              open, // but never a password or email (below)
	"DELETE /api/users/:id":                           open,
	"POST /api/users/:id/password-reset":              open,
	"POST /api/users/:id/unlock":                      open,
	"GET /api/audit":                                  open,
	"GET /api/users/:id/sessions":                     open,
	"DELETE /api/users/:id/sessions":                  interactive,
	"DELETE /api/users/:id/sessions/:sid":             interactive,
	"POST /api/users/:id/tokens":                      interactive,
	"GET /api/users/:id/tokens":                       open,
	"DELETE /api/users/:id/tokens/:tokenId":           interactive,
	"GET /api/users/me/mfa":                           open,
	"POST /api/users/me/mfa/totp":                     interactive,
	"POST /api/users/me/mfa/totp/confirm":             interactive,
	"DELETE /api/users/me/mfa/totp":                   interactive,
	"POST /api/users/me/mfa/recovery-codes":           interactive,
	"DELETE /api/users/:id/mfa":                       interactive,
	"DELETE /api/users/me/mfa":                        interactive,
	"GET /api/users/me/passkeys":                      open,
	"POST /api/users/me/passkeys/registration":        interactive,
	"POST /api/users/me/passkeys/registration/finish": interactive,
	"PATCH /api/users/me/passkeys/:passkeyId":         interactive,
	"DELETE /api/users/me/passkeys/:passkeyId":        interactive,
	"GET /api/oauth-clients":                          open,
	"POST /api/oauth-clients":                         open,
	"GET /api/oauth-clients/:id":                      open,
	"PUT /api/oauth-clients/:id":                      open,
	"DELETE /api/oauth-clients/:id":                   open,
	"POST /api/oauth-clients/:id/secret":              open,
	"GET /api/identity-providers":                     open,
	"POST /api/identity-providers":                    open,
	"GET /api/identity-providers/:slug":               open,
	"PUT /api/identity-providers/:slug":               open,
	"DELETE /api/identity-providers/:slug":            open,
	"GET /api/users/:id/identities":                   open,
	"DELETE /api/users/:id/identities/:provider":      interactive,
	"POST /api/users/me":                              notAllowed,
	"PUT /api/users/me":                               notAllowed,
	"PATCH /api/users/me":                             notAllowed,
	"DELETE /api/users/me":                            notAllowed,
	"HEAD /api/users/me":                              notAllowed,
	"OPTIONS /api/users/me":                           notAllowed,
}

// routeParams fill a route's path: ids that name nothing, so that a
// request a token is allowed to make changes nothing (404 and the like).
var routeParams = map[string]string{
	":id": missingID, ":sid": strings.Repeat("0", 32), ":tokenId": strings.Repeat("0", 32),
	":passkeyId": "AAAA", ":slug": "nothing", ":provider": "nothing",
}

// TestPersonalTokens_every_route walks every /api route of the engine
// with an admin's personal access tokens of users:read and users:write:
// each is allowed (any answer but 401 and the token's 403s), 403
// insufficient_scope or 403 interactive_session_required, as
// apiTokenPolicies decides. Every answer is checked against openapi.yaml.
func TestPersonalTokens_every_route(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit(), withMetrics(), withProviderEndpoints(), withDynamicRegistration())
	engine, ok := s.handler.(*gin.Engine)
	if !ok {
		t.Fatal("the handler is not a *gin.Engine")
	}
	access := s.adminToken()
	read, write := s.personalToken(access, "users:read").Token, s.personalToken(access, "users:write").Token
	param := regexp.MustCompile(`:[A-Za-z]+`)
	seen := map[string]bool{}
	for _, r := range engine.Routes() {
		if !strings.HasPrefix(r.Path, "/api/") {
			continue
		}
		key := r.Method + " " + r.Path
		seen[key] = true
		policy, ok := apiTokenPolicies[key]
		if !ok {
			t.Errorf("%s: no policy decided for personal access tokens (apiTokenPolicies)", key)
			continue
		}
		path := param.ReplaceAllStringFunc(r.Path, func(p string) string { return routeParams[p] })
		var body any
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodDelete {
			body = map[string]any{}
		}
		for _, tc := range []struct {
			scope string
			token string
		}{{"users:read", read}, {"users:write", write}} {
			t.Run(key+" "+tc.scope, func(t *testing.T) {
				wantTokenPolicy(t, s.do(r.Method, path, body, withToken(tc.token)), r.Method, tc.scope, policy)
			})
		}
	}
	for key := range apiTokenPolicies {
		if !seen[key] {
			t.Errorf("apiTokenPolicies names %s, which the engine does not route", key)
		}
	}
}

// wantTokenPolicy checks the answer to a token of scope on a route of
// the method and policy.
func wantTokenPolicy(t *testing.T, res response, method, scope string, policy tokenPolicy) {
	t.Helper()
	var want string
	switch {
	case policy == notAllowed:
		wantProblem(t, res, http.StatusMethodNotAllowed, "method_not_allowed")
		return
	case method != http.MethodGet && scope == "users:read":
		want = "insufficient_scope"
	case policy == interactive:
		want = "interactive_session_required"
	}
	if want != "" {
		wantProblem(t, res, http.StatusForbidden, want)
		if got := res.Header.Get("WWW-Authenticate"); want == "insufficient_scope" && got != `Bearer error="insufficient_scope"` {
			t.Errorf("WWW-Authenticate = %q", got)
		}
		return
	}
	if res.Status == http.StatusUnauthorized || res.Status == http.StatusForbidden || res.Status >= 500 {
		t.Errorf("%d %s, want it allowed", res.Status, res.Body)
	}
}

// TestAttack_stolen_personal_token_cannot_take_over_the_account: a token
// with users:write changes a name through PUT /api/users/{id}, but never
// a password or an email (403 interactive_session_required), nor sends a
// current password; a malformed body is still 400 first (the contract's
// order).
func TestAttack_stolen_personal_token_cannot_take_over_the_account(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, tb := s.customer("Ada", "ada@example.com")
	write := s.personalToken(tb.AccessToken, "users:write").Token
	var u userBody
	wantProblem(t, s.do("PUT", "/api/users/me", nil, withToken(write)), http.StatusMethodNotAllowed, "method_not_allowed")
	wantJSON(t, s.do("PUT", "/api/users/"+tb.User.ID, map[string]any{"name": "Ada L."}, withToken(write)), http.StatusOK, &u)
	if u.Name != "Ada L." {
		t.Fatalf("name = %q", u.Name)
	}
	wantJSON(t, s.do("PUT", "/api/users/"+tb.User.ID, map[string]any{"email": "ada@example.com"}, withToken(write)),
		http.StatusOK, &u)
	for _, body := range []map[string]any{
		{"password": "another-Passphrase-9"},
		{"email": "eve@example.com"},
		{"name": "Ada", "currentPassword": custPassword},
	} {
		wantProblem(t, s.do("PUT", "/api/users/"+tb.User.ID, body, withToken(write)), http.StatusForbidden,
			"interactive_session_required")
	}
	wantProblem(t, s.do("PUT", "/api/users/"+tb.User.ID, map[string]any{"email": "not an email"}, withToken(write)),
		http.StatusBadRequest, "validation_failed")
	// The password and the email are as they were.
	s.login("ada@example.com", custPassword)
}

// TestPersonalTokens_lifecycle: a token is made for oneself, shown once,
// listed without it, used on /api/*, its use recorded once a minute,
// revoked (401 at once), and refused where it never counts: /auth/* and
// the pages.
func TestPersonalTokens_lifecycle(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAudit())
	ada, tb := s.customer("Ada", "ada@example.com")
	res := s.do("POST", "/api/users/me/tokens", map[string]any{"name": " CI ", "scopes": []string{"users:write", "users:read"},
		"expiresInDays": 30}, withToken(tb.AccessToken))
	var created personalTokenBody
	wantJSON(t, res, http.StatusCreated, &created)
	if got := res.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q", got)
	}
	if !domain.WellFormedPersonalToken(created.Token) || created.Name != "CI" ||
		strings.Join(created.Scopes, ",") != "users:read,users:write" {
		t.Fatalf("created = %+v", created)
	}
	now := s.clock.Now()
	if created.ExpiresAt != now.Add(30*24*time.Hour).UTC().Format(time.RFC3339) {
		t.Errorf("expiresAt = %s, want 30 days after %s", created.ExpiresAt, now)
	}
	list := s.personalTokens(tb.AccessToken, "me")
	if len(list) != 1 || list[0].ID != created.ID || list[0].Prefix != created.Token[4:12] || list[0].LastUsedAt != nil {
		t.Fatalf("list = %+v", list)
	}
	if strings.Contains(string(s.do("GET", "/api/users/me/tokens", nil, withToken(tb.AccessToken)).Body), created.Token[4:]) {
		t.Fatal("the list shows the token")
	}

	// Used: the user is the token's; lastUsedAt is the first use, until a
	// minute has passed.
	var me userBody
	wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(created.Token)), http.StatusOK, &me)
	if me.ID != ada.ID {
		t.Fatalf("me = %s, want %s", me.ID, ada.ID)
	}
	first := s.clock.Now().UTC().Format(time.RFC3339)
	s.clock.Advance(40 * time.Second)
	s.do("GET", "/api/users/me", nil, withToken(created.Token))
	if got := s.personalTokens(created.Token, "me")[0].LastUsedAt; got == nil || *got != first {
		t.Fatalf("lastUsedAt = %v, want %s (once a minute)", got, first)
	}
	s.clock.Advance(30 * time.Second)
	s.do("GET", "/api/users/me", nil, withToken(created.Token))
	second := s.clock.Now().UTC().Format(time.RFC3339)
	if got := s.personalTokens(created.Token, "me")[0].LastUsedAt; got == nil || *got != second {
		t.Fatalf("lastUsedAt = %v, want %s", got, second)
	}

	// Refused where it never counts.
	wantProblem(t, s.do("POST", "/auth/logout", map[string]any{}, withToken(created.Token)), http.StatusBadRequest,
		"validation_failed")
	wantProblem(t, s.do("POST", "/auth/refresh-token", map[string]string{"refreshToken": created.Token}),
		http.StatusUnauthorized, "invalid_refresh_token")
	page := s.do("GET", "/account/", nil, withToken(created.Token), withHeader("Accept", "text/html"))
	if page.Status == http.StatusOK {
		t.Fatalf("the account page answered a personal access token: %d", page.Status)
	}

	// Revoked by its user: 401 at once; the revocation is audited.
	s.do("DELETE", "/api/users/me/tokens/"+created.ID, nil, withToken(tb.AccessToken))
	wantProblem(t, s.do("GET", "/api/users/me", nil, withToken(created.Token)), http.StatusUnauthorized, "unauthorized")
	wantProblem(t, s.do("DELETE", "/api/users/me/tokens/"+created.ID, nil, withToken(tb.AccessToken)),
		http.StatusNotFound, "not_found")
	if list := s.personalTokens(tb.AccessToken, "me"); len(list) != 0 {
		t.Fatalf("a revoked token is listed: %+v", list)
	}
	var types []string
	events, _ := s.auditPage(s.adminToken(), "")
	for _, e := range events {
		types = append(types, e.Type)
	}
	if !strings.Contains(strings.Join(types, " "), "token.created") || !strings.Contains(strings.Join(types, " "), "token.revoked") {
		t.Errorf("audit = %v", types)
	}
}

// TestPersonalTokens_rights: only the user makes its tokens; an admin
// lists and revokes another's; a non-admin neither; bad requests are 400
// in the contract's order; the 51st live token is 409 token_limit.
func TestPersonalTokens_rights(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	ada, tb := s.customer("Ada", "ada@example.com")
	_, bob := s.customer("Bob", "bob@example.com")
	tok := s.personalToken(tb.AccessToken, "users:read")

	body := map[string]any{"name": "ci", "scopes": []string{"users:read"}}
	wantProblem(t, s.do("POST", "/api/users/"+ada.ID+"/tokens", body, withToken(admin)), http.StatusForbidden, "forbidden")
	wantProblem(t, s.do("POST", "/api/users/"+ada.ID+"/tokens", body, withToken(bob.AccessToken)), http.StatusForbidden, "forbidden")
	wantProblem(t, s.do("GET", "/api/users/"+ada.ID+"/tokens", nil, withToken(bob.AccessToken)), http.StatusForbidden, "forbidden")
	wantProblem(t, s.do("DELETE", "/api/users/"+ada.ID+"/tokens/"+tok.ID, nil, withToken(bob.AccessToken)),
		http.StatusForbidden, "forbidden")
	wantProblem(t, s.do("GET", "/api/users/"+missingID+"/tokens", nil, withToken(admin)), http.StatusNotFound, "not_found")
	wantProblem(t, s.do("GET", "/api/users/nope/tokens", nil, withToken(bob.AccessToken)), http.StatusBadRequest, "invalid_id")
	wantProblem(t, s.do("GET", "/api/users/me/tokens", nil), http.StatusUnauthorized, "unauthorized")

	for name, b := range map[string]any{
		"unknown_field": map[string]any{"name": "ci", "scopes": []string{"users:read"}, "token": "x"},
		"no_scope":      map[string]any{"name": "ci", "scopes": []string{}},
		"bad_scope":     map[string]any{"name": "ci", "scopes": []string{"admin"}},
		"no_name":       map[string]any{"name": " ", "scopes": []string{"users:read"}},
		"zero_days":     map[string]any{"name": "ci", "scopes": []string{"users:read"}, "expiresInDays": 0},
		"366_days":      map[string]any{"name": "ci", "scopes": []string{"users:read"}, "expiresInDays": 366},
	} {
		res := s.do("POST", "/api/users/me/tokens", b, withToken(tb.AccessToken))
		if res.Status != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", name, res.Status)
		}
	}
	// The body is judged before the caller's right: 400, not 403.
	wantProblem(t, s.do("POST", "/api/users/"+ada.ID+"/tokens", map[string]any{"name": "", "scopes": []string{}},
		withToken(admin)), http.StatusBadRequest, "validation_failed")

	var listed []personalTokenListed
	wantJSON(t, s.do("GET", "/api/users/"+ada.ID+"/tokens", nil, withToken(admin)), http.StatusOK, &listed)
	if len(listed) != 1 || listed[0].ID != tok.ID {
		t.Fatalf("the admin's list = %+v", listed)
	}
	if res := s.do("DELETE", "/api/users/"+ada.ID+"/tokens/"+tok.ID, nil, withToken(admin)); res.Status != http.StatusNoContent {
		t.Fatalf("the admin's revocation: %d %s", res.Status, res.Body)
	}
	wantProblem(t, s.do("GET", "/api/users/me", nil, withToken(tok.Token)), http.StatusUnauthorized, "unauthorized")

	for range domain.MaxLivePersonalTokens {
		s.personalToken(tb.AccessToken, "users:read")
	}
	wantProblem(t, s.do("POST", "/api/users/me/tokens", body, withToken(tb.AccessToken)), http.StatusConflict, "token_limit")
}

// TestAttack_forged_revoked_or_expired_personal_token_is_rejected: an
// expired token, one of a disabled or deleted user, and one whose
// checksum does not match are 401; the last without a read of the store.
func TestAttack_forged_revoked_or_expired_personal_token_is_rejected(t *testing.T) {
	t.Parallel()
	var reads atomic.Int64
	s := newTestServer(t, withPersonalTokenStore(func(st ports.PersonalTokenStore) ports.PersonalTokenStore {
		return countingTokenStore{PersonalTokenStore: st, reads: &reads}
	}))
	s.createAdmin()
	ada, tb := s.customer("Ada", "ada@example.com")
	bob := s.register("Bob", "bob@example.com")
	me := func(tok string) response { return s.do("GET", "/api/users/me", nil, withToken(tok)) }

	var short personalTokenBody
	wantJSON(t, s.do("POST", "/api/users/me/tokens", map[string]any{"name": "short", "scopes": []string{"users:read"},
		"expiresInDays": 1}, withToken(tb.AccessToken)), http.StatusCreated, &short)
	long := s.personalToken(tb.AccessToken, "users:read")
	s.clock.Advance(24*time.Hour - time.Second)
	wantJSON(t, me(short.Token), http.StatusOK, &userBody{})
	s.clock.Advance(time.Second)
	wantProblem(t, me(short.Token), http.StatusUnauthorized, "unauthorized")
	if res := me(short.Token); res.Header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
		t.Errorf("WWW-Authenticate = %q", res.Header.Get("WWW-Authenticate"))
	}
	// The sessions' access tokens expired meanwhile.
	admin := s.login(adminEmail, adminPassword).AccessToken
	session := s.login("ada@example.com", custPassword).AccessToken
	// A password change (which ends the sessions) does not end a token.
	wantJSON(t, s.do("PUT", "/api/users/"+ada.ID, map[string]any{"password": "another-Passphrase-9",
		"currentPassword": custPassword}, withToken(session)), http.StatusOK, &userBody{})
	wantJSON(t, me(long.Token), http.StatusOK, &userBody{})

	// A wrong checksum: refused before the store is asked.
	bad := []byte(long.Token)
	last := len(bad) - 1
	bad[last] = map[bool]byte{true: '1', false: '0'}[bad[last] == '0']
	before := reads.Load()
	wantProblem(t, me(string(bad)), http.StatusUnauthorized, "unauthorized")
	wantProblem(t, me("udp_short"), http.StatusUnauthorized, "unauthorized")
	if n := reads.Load() - before; n != 0 {
		t.Fatalf("a token with a bad checksum read the store %d times", n)
	}
	// A well-formed token no one holds reads it once.
	wantProblem(t, me(domain.NewPersonalTokenSecret()), http.StatusUnauthorized, "unauthorized")
	if n := reads.Load() - before; n != 1 {
		t.Fatalf("an unknown token read the store %d times, want 1", n)
	}

	// Disabled: 401; enabled again: it works again (it was not revoked).
	wantJSON(t, s.do("PUT", "/api/users/"+ada.ID, map[string]any{"disabled": true}, withToken(admin)), http.StatusOK,
		&userBody{})
	wantProblem(t, me(long.Token), http.StatusUnauthorized, "unauthorized")
	wantJSON(t, s.do("PUT", "/api/users/"+ada.ID, map[string]any{"disabled": false}, withToken(admin)), http.StatusOK,
		&userBody{})
	wantJSON(t, me(long.Token), http.StatusOK, &userBody{})

	// Deleted: 401.
	bobTok := s.personalToken(s.login("bob@example.com", custPassword).AccessToken, "users:write")
	if res := s.do("DELETE", "/api/users/"+bob.ID, nil, withToken(admin)); res.Status != http.StatusNoContent {
		t.Fatalf("delete: %d", res.Status)
	}
	wantProblem(t, me(bobTok.Token), http.StatusUnauthorized, "unauthorized")
}

// withPersonalTokenStore puts a test's store in front of the personal
// access tokens'.
func withPersonalTokenStore(wrap func(ports.PersonalTokenStore) ports.PersonalTokenStore) serverOption {
	return func(c *serverConfig) { c.wrapTokens = wrap }
}

// countingTokenStore counts the reads of a token by its hash.
type countingTokenStore struct {
	ports.PersonalTokenStore
	reads *atomic.Int64
}

func (s countingTokenStore) TokenByHash(ctx context.Context, hash string) (domain.PersonalToken, domain.User, error) {
	s.reads.Add(1)
	return s.PersonalTokenStore.TokenByHash(ctx, hash)
}
