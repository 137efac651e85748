package application_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/kit"
)

// fakeClaimsHook answers every request with answer, and keeps the
// requests.
type fakeClaimsHook struct {
	mu       sync.Mutex
	requests []domain.ClaimsRequest
	answer   func(domain.ClaimsRequest) (domain.HookClaims, error)
}

func (h *fakeClaimsHook) Claims(_ context.Context, r domain.ClaimsRequest) (domain.HookClaims, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests = append(h.requests, r)
	return h.answer(r)
}

func (h *fakeClaimsHook) set(answer func(domain.ClaimsRequest) (domain.HookClaims, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.answer = answer
}

func (h *fakeClaimsHook) last(t *testing.T) domain.ClaimsRequest {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.requests) == 0 {
		t.Fatal("the hook was not asked")
	}
	return h.requests[len(h.requests)-1]
}

// tenant answers the claim tenant=name.
func tenant(name string) func(domain.ClaimsRequest) (domain.HookClaims, error) {
	return func(domain.ClaimsRequest) (domain.HookClaims, error) {
		return domain.ParseHookClaims(json.RawMessage(`{"tenant":"` + name + `"}`))
	}
}

func refuse(message string) func(domain.ClaimsRequest) (domain.HookClaims, error) {
	return func(domain.ClaimsRequest) (domain.HookClaims, error) {
		return domain.HookClaims{}, domain.NewSignInRefused(message)
	}
}

func failWith(err error) func(domain.ClaimsRequest) (domain.HookClaims, error) {
	return func(domain.ClaimsRequest) (domain.HookClaims, error) { return domain.HookClaims{}, err }
}

func withClaimsHook(h *fakeClaimsHook, failOpen bool) envOption {
	return func(c *application.Config, d *application.Deps) { d.ClaimsHook, c.ClaimsHookFailOpen = h, failOpen }
}

// jwtTenant is the tenant claim of a signed token, "" without one.
func jwtTenant(t *testing.T, token string) string {
	t.Helper()
	var c struct {
		Tenant string `json:"tenant"`
	}
	kit.DecodePart(t, token, 1, &c)
	return c.Tenant
}

// A refused sign-in opens no session: no family, no session.created, no
// login.succeeded; the same sign-in succeeds once the hook agrees.
func TestClaimsHook_refused_sign_in_leaves_nothing(t *testing.T) {
	t.Parallel()
	h := &fakeClaimsHook{answer: refuse("closed for you")}
	e := newEnv(t, withClaimsHook(h, false), withWebhooks(t, "http://127.0.0.1:9/hooks", domain.WebhookSessionCreated))
	u, _ := e.seed(t, "ada@example.com")
	events := e.audit.Len()

	_, err := e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: seededPassword})
	refused, ok := errors.AsType[*domain.SignInRefusedError](err)
	if !ok || refused.Message != "closed for you" {
		t.Fatalf("Login = %v, want the hook's refusal", err)
	}
	families, err := e.store.Stores(nil, e.audit).Tokens.Sessions(ctx, u.ID, e.clock.Now())
	wantErr(t, err, nil)
	backlog, _, err := e.store.Outbox(nil).Backlog(ctx)
	wantErr(t, err, nil)
	if len(families) != 0 || backlog != 0 || e.audit.Len() != events {
		t.Fatalf("after a refusal: %d sessions, %d webhooks, %d audit events", len(families), backlog, e.audit.Len()-events)
	}
	if r := h.last(t); r.UserID != u.ID || r.Grant != domain.ClaimsGrantSignIn || r.SessionID == "" || r.User["email"] != "ada@example.com" {
		t.Errorf("request %+v", r)
	}

	h.set(tenant("acme"))
	pair := login(t, e, "ada@example.com", seededPassword)
	if !strings.HasSuffix(pair.Access.Token, `|{"tenant":"acme"}`) {
		t.Errorf("access token %q without the claim", pair.Access.Token)
	}
	// The session is the one the hook was told of.
	p, err := e.auth.Authenticate(ctx, pair.Access.Token)
	wantErr(t, err, nil)
	if p.Session.ID != h.last(t).SessionID {
		t.Errorf("session %q, the hook was told %q", p.Session.ID, h.last(t).SessionID)
	}
}

// The second step asks the hook too; a refusal is answered only after the
// code was checked, and leaves the code and the challenge usable.
func TestClaimsHook_second_step(t *testing.T) {
	t.Parallel()
	h := &fakeClaimsHook{answer: tenant("acme")}
	e := newEnv(t, withClaimsHook(h, false))
	acct := e.seedMFA(t, "ada@example.com")
	ch := e.passwordStep(t, "ada@example.com").MFAToken
	h.set(refuse("not today"))
	_, err := e.auth.LoginMFA(ctx, application.MFALoginInput{MFAToken: &ch, Code: ptr("000000")})
	wantErr(t, err, domain.ErrMFACodeRejected)
	code := acct.code(t, e)
	_, err = e.auth.LoginMFA(ctx, application.MFALoginInput{MFAToken: &ch, Code: &code})
	if _, ok := errors.AsType[*domain.SignInRefusedError](err); !ok {
		t.Fatalf("LoginMFA = %v, want the refusal", err)
	}
	h.set(tenant("acme"))
	res, err := e.auth.LoginMFA(ctx, application.MFALoginInput{MFAToken: &ch, Code: &code})
	wantErr(t, err, nil)
	if !strings.HasSuffix(res.Tokens.Access.Token, `|{"tenant":"acme"}`) || !slices.Contains(h.last(t).AMR, domain.MethodOTP) {
		t.Errorf("token %q, request %+v", res.Tokens.Access.Token, h.last(t))
	}
}

// Each refresh asks again; one the hook refuses or cannot answer leaves
// the token usable. Failing open signs without claims.
func TestClaimsHook_refresh(t *testing.T) {
	t.Parallel()
	h := &fakeClaimsHook{answer: tenant("acme")}
	e := newEnv(t, withClaimsHook(h, false))
	e.seed(t, "ada@example.com")
	pair := login(t, e, "ada@example.com", seededPassword)
	for _, answer := range []func(domain.ClaimsRequest) (domain.HookClaims, error){
		refuse("no"), failWith(&domain.HookFailure{Reason: "bad"}), failWith(domain.ErrHookUnavailable),
	} {
		h.set(answer)
		if _, err := e.auth.Refresh(ctx, pair.RefreshToken); err == nil {
			t.Fatal("refresh succeeded while the hook refused")
		}
	}
	h.set(tenant("globex"))
	next, err := e.auth.Refresh(ctx, pair.RefreshToken)
	wantErr(t, err, nil)
	if !strings.HasSuffix(next.Access.Token, `|{"tenant":"globex"}`) || h.last(t).Grant != domain.ClaimsGrantRefresh {
		t.Errorf("refreshed %q, request %+v", next.Access.Token, h.last(t))
	}

	open := &fakeClaimsHook{answer: failWith(domain.ErrHookUnavailable)}
	e = newEnv(t, withClaimsHook(open, true))
	e.seed(t, "ada@example.com")
	pair = login(t, e, "ada@example.com", seededPassword)
	if strings.Count(pair.Access.Token, "|") != 4 {
		t.Errorf("failed open with claims: %q", pair.Access.Token)
	}
	if !strings.Contains(e.logs.String(), "USERD_CLAIMS_HOOK_FAIL=open") {
		t.Error("failing open was not logged")
	}
	// A wrong answer is refused even when failing open.
	open.set(failWith(&domain.HookFailure{Reason: "bad"}))
	_, err = e.auth.Refresh(ctx, pair.RefreshToken)
	wantErr(t, err, domain.ErrHookFailed)
}

// The token endpoint: the code's tokens (access and ID) and a refresh's
// carry the claims; client_credentials asks for the client alone; the
// hook's refusals are OAuth errors, and a refused refresh keeps its token.
func TestClaimsHook_provider_tokens(t *testing.T) {
	t.Parallel()
	h := &fakeClaimsHook{answer: tenant("acme")}
	e := newProviderEnv(t, withClaimsHook(h, false))
	created := e.client(t, "confidential", false)
	c := created.Client
	tokens, err := e.svc.Provider.ExchangeCode(ctx, c, e.code(t, authorizeInput(c.ID)), appCallback, pkceVerifier)
	wantErr(t, err, nil)
	if jwtTenant(t, tokens.AccessToken) != "acme" || jwtTenant(t, tokens.IDToken) != "acme" {
		t.Errorf("code's tokens without the claim")
	}
	r := h.last(t)
	if r.Grant != domain.ClaimsGrantAuthorizationCode || r.ClientID != c.ID || r.UserID != e.user.ID || r.SessionID == "" ||
		!slices.Contains(r.Scopes, domain.ScopeOpenID) {
		t.Errorf("request %+v", r)
	}
	// The access token still serves.
	if _, err := e.svc.Provider.UserInfo(ctx, tokens.AccessToken); err != nil {
		t.Errorf("userinfo: %v", err)
	}

	h.set(refuse("plan ended"))
	_, err = e.svc.Provider.Refresh(ctx, c, tokens.RefreshToken, nil)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)
	if oerr, _ := errors.AsType[*domain.OAuthError](err); oerr.Description != "plan ended" {
		t.Errorf("description %q", oerr.Description)
	}
	h.set(failWith(domain.ErrHookUnavailable))
	_, err = e.svc.Provider.Refresh(ctx, c, tokens.RefreshToken, nil)
	wantOAuthError(t, err, domain.OAuthTemporarilyUnavailable)
	h.set(failWith(&domain.HookFailure{Reason: "bad"}))
	_, err = e.svc.Provider.Refresh(ctx, c, tokens.RefreshToken, nil)
	wantOAuthError(t, err, domain.OAuthServerError)
	h.set(tenant("globex"))
	refreshed, err := e.svc.Provider.Refresh(ctx, c, tokens.RefreshToken, nil)
	wantErr(t, err, nil)
	if jwtTenant(t, refreshed.AccessToken) != "globex" || h.last(t).Grant != domain.ClaimsGrantRefreshToken {
		t.Errorf("refreshed without the new claim")
	}

	client, err := e.svc.Provider.ClientForToken(ctx, c.ID.String(), created.Secret, true)
	wantErr(t, err, nil)
	cc, err := e.svc.Provider.ClientCredentials(ctx, client, []string{"profile"})
	wantErr(t, err, nil)
	if r := h.last(t); jwtTenant(t, cc.AccessToken) != "globex" || r.UserID != "" || r.ClientID != c.ID ||
		r.Grant != domain.ClaimsGrantClientCredentials {
		t.Errorf("client_credentials: request %+v", r)
	}
	h.set(refuse("no machines"))
	_, err = e.svc.Provider.ClientCredentials(ctx, client, nil)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)
}

// A sign-in through another identity provider asks the hook as every
// other does.
func TestClaimsHook_federated_sign_in(t *testing.T) {
	t.Parallel()
	h := &fakeClaimsHook{answer: tenant("acme")}
	env := newEnv(t, withClaimsHook(h, false))
	_, admin := env.seed(t, "root@example.com", domain.ProfileAdmin)
	if _, err := env.svc.IdentityProviders.CreateIdentityProvider(ctx, admin, providerIn("acme")); err != nil {
		t.Fatal(err)
	}
	e := &fedEnv{auditEnv: &auditEnv{env: env, metrics: env.counts, svc: env.svc.Audit}, admin: admin}
	out, err := e.flow(t, "acme", nil, person, nil)
	wantErr(t, err, nil)
	if out.SignIn == nil || out.SignIn.Tokens == nil || !strings.HasSuffix(out.SignIn.Tokens.Access.Token, `|{"tenant":"acme"}`) {
		t.Fatalf("outcome %+v", out)
	}
	if r := h.last(t); !slices.Equal(r.AMR, domain.AMRFederated) {
		t.Errorf("request amr %v", r.AMR)
	}
	h.set(refuse("not from there"))
	_, err = e.flow(t, "acme", nil, person, nil)
	if _, ok := errors.AsType[*domain.SignInRefusedError](err); !ok {
		t.Errorf("refused federated sign-in: %v", err)
	}
}

// The hook is told the account's metadata and appMetadata, as the API
// represents them, so that a receiver can read a tenant an admin keeps
// there; a change shows at the next refresh.
func TestClaimsHook_sees_metadata(t *testing.T) {
	t.Parallel()
	h := &fakeClaimsHook{answer: tenant("acme")}
	e := newEnv(t, withClaimsHook(h, false))
	u, _ := e.seed(t, "ada@example.com")
	pair := login(t, e, "ada@example.com", seededPassword)
	if r := h.last(t); string(r.User["metadata"].(json.RawMessage)) != "{}" || string(r.User["appMetadata"].(json.RawMessage)) != "{}" {
		t.Fatalf("hook told metadata %v, appMetadata %v; want {} and {}", r.User["metadata"], r.User["appMetadata"])
	}
	_, err := e.store.Stores(nil, e.audit).Users.Update(ctx, u.ID, func(u *domain.User) error {
		u.AppMetadata = domain.MetadataFromStore(`{"tenant":"globex"}`)
		return nil
	})
	wantErr(t, err, nil)
	_, err = e.auth.Refresh(ctx, pair.RefreshToken)
	wantErr(t, err, nil)
	body, err := json.Marshal(h.last(t).User)
	wantErr(t, err, nil)
	if !strings.Contains(string(body), `"appMetadata":{"tenant":"globex"}`) {
		t.Errorf("hook told %s after the change, want appMetadata {\"tenant\":\"globex\"}", body)
	}
}
