package application_test

import (
	"context"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// heldCodeHook holds each exchange of a code at the claims hook, after it
// took the code and before it opens its session, until the test lets it
// go; every other grant passes.
type heldCodeHook struct {
	reached chan struct{}
	release chan struct{}
}

func (h *heldCodeHook) Claims(ctx context.Context, r domain.ClaimsRequest) (domain.HookClaims, error) {
	if r.Grant != domain.ClaimsGrantAuthorizationCode {
		return domain.HookClaims{}, nil
	}
	h.reached <- struct{}{}
	select {
	case <-h.release:
		return domain.HookClaims{}, nil
	case <-ctx.Done():
		return domain.HookClaims{}, ctx.Err()
	}
}

// A second use of a code that comes while the first exchange is between
// taking the code and opening its session finds no session to end; the
// first exchange, once it has opened it, sees the code replayed, ends its
// session and is refused as well: no token of the code stays valid.
func TestProvider_code_replayed_while_exchanged(t *testing.T) {
	t.Parallel()
	h := &heldCodeHook{reached: make(chan struct{}), release: make(chan struct{})}
	e := newProviderEnv(t, func(_ *application.Config, d *application.Deps) { d.ClaimsHook = h })
	c := e.client(t, "public", true).Client
	code := e.code(t, authorizeInput(c.ID))

	type result struct {
		tokens application.ProviderTokens
		err    error
	}
	first := make(chan result, 1)
	go func() {
		tokens, err := e.svc.Provider.ExchangeCode(ctx, c, code, appCallback, pkceVerifier)
		first <- result{tokens, err}
	}()
	select {
	case <-h.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the first exchange never reached the claims hook")
	}
	_, err := e.svc.Provider.ExchangeCode(ctx, c, code, appCallback, pkceVerifier)
	wantOAuthError(t, err, domain.OAuthInvalidGrant)
	if sessions := e.clientSessions(t, c.ID); sessions != 0 {
		t.Fatalf("%d sessions of the client before the first exchange opened one, want 0", sessions)
	}

	close(h.release)
	var r result
	select {
	case r = <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("the first exchange never ended")
	}
	wantOAuthError(t, r.err, domain.OAuthInvalidGrant)
	if r.tokens.AccessToken != "" || r.tokens.RefreshToken != "" {
		t.Errorf("the refused exchange handed out tokens")
	}
	if sessions := e.clientSessions(t, c.ID); sessions != 0 {
		t.Errorf("%d sessions of the client left open after the replay, want 0", sessions)
	}
}

// A first exchange that no replay disturbs keeps its session, though it
// checks its code again after opening it.
func TestProvider_code_exchanged_alone_keeps_its_session(t *testing.T) {
	t.Parallel()
	h := &heldCodeHook{reached: make(chan struct{}, 1), release: make(chan struct{})}
	close(h.release)
	e := newProviderEnv(t, func(_ *application.Config, d *application.Deps) { d.ClaimsHook = h })
	c := e.client(t, "public", true).Client
	tokens, err := e.svc.Provider.ExchangeCode(ctx, c, e.code(t, authorizeInput(c.ID)), appCallback, pkceVerifier)
	wantErr(t, err, nil)
	if _, err := e.svc.Provider.UserInfo(ctx, tokens.AccessToken); err != nil {
		t.Errorf("userinfo: %v", err)
	}
	if sessions := e.clientSessions(t, c.ID); sessions != 1 {
		t.Errorf("%d sessions of the client, want 1", sessions)
	}
}

// clientSessions counts the user's active sessions granted to the client.
func (e *providerEnv) clientSessions(t *testing.T, client domain.OAuthClientID) int {
	t.Helper()
	sessions, err := e.svc.Sessions.List(ctx, &domain.Principal{UserID: e.user.ID, Profiles: e.user.Profiles}, e.user.ID.String())
	wantErr(t, err, nil)
	n := 0
	for _, s := range sessions {
		if s.ClientID == client {
			n++
		}
	}
	return n
}
