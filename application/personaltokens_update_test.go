package application_test

import (
	"testing"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// tokenCaller makes a personal access token of scopes for p's user and
// returns the caller that Authenticate finds for it.
func (e *env) tokenCaller(t *testing.T, p *domain.Principal, scopes ...string) *domain.Principal {
	t.Helper()
	created, err := e.svc.Tokens.Create(ctx, p, p.UserID.String(), application.CreateTokenInput{Name: "ci", Scopes: scopes})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	caller, err := e.auth.Authenticate(ctx, created.Token)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	return caller
}

// TestUpdate_personal_token_never_changes_credentials: a token with
// users:write changes a name, and an admin's a status, but never a
// password or an email, nor checks a current password (which would let
// a stolen token guess at it); the account is left as it was.
func TestUpdate_personal_token_never_changes_credentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, p := e.seed(t, "ada@example.com")
	other, _ := e.seed(t, "bob@example.com")
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	caller, adminCaller := e.tokenCaller(t, p, "users:write"), e.tokenCaller(t, admin, "users:write")
	id := u.ID.String()

	if _, err := e.users.Update(ctx, caller, id, application.UpdateInput{Name: ptr("Ada L.")}); err != nil {
		t.Fatalf("a token's change of name: %v", err)
	}
	// The same email sent back with the rest is no change.
	if _, err := e.users.Update(ctx, caller, id, application.UpdateInput{Email: ptr("ada@example.com")}); err != nil {
		t.Fatalf("a token sending the same email: %v", err)
	}
	for name, in := range map[string]application.UpdateInput{
		"password":         {Password: ptr("a new passphrase 42")},
		"email":            {Email: ptr("eve@example.com")},
		"current_password": {Name: ptr("Ada"), CurrentPassword: ptr(seededPassword)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.users.Update(ctx, caller, id, in)
			wantErr(t, err, domain.ErrInteractiveSessionRequired)
			_, err = e.users.Update(ctx, adminCaller, other.ID.String(), in)
			wantErr(t, err, domain.ErrInteractiveSessionRequired)
		})
	}
	if _, err := e.users.Update(ctx, adminCaller, other.ID.String(), application.UpdateInput{Disabled: ptr(true)}); err != nil {
		t.Fatalf("an admin's token disabling a user: %v", err)
	}
	got, err := e.store.Users().ByID(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Email != "ada@example.com" || got.PasswordHash != u.PasswordHash {
		t.Fatalf("the account changed: %s", got.Email)
	}
}

// TestProvider_refuses_personal_tokens: the OpenID endpoints take only
// the provider's own tokens: a personal access token is no access token
// at userinfo, and is not active at introspection.
func TestProvider_refuses_personal_tokens(t *testing.T) {
	t.Parallel()
	e := newProviderEnv(t)
	p := &domain.Principal{UserID: e.user.ID, Profiles: e.user.Profiles}
	created, err := e.svc.Tokens.Create(ctx, p, e.user.ID.String(),
		application.CreateTokenInput{Name: "ci", Scopes: []string{"users:read", "users:write"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Provider.UserInfo(ctx, created.Token)
	wantErr(t, err, domain.ErrInvalidToken)
	c := e.client(t, "confidential", false).Client
	intro, err := e.svc.Provider.Introspect(ctx, c, created.Token)
	wantErr(t, err, nil)
	if intro.Active {
		t.Error("a personal access token is active at introspection")
	}
}
