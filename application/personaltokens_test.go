package application_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// countingTokens counts the reads of a token by its hash.
type countingTokens struct {
	ports.PersonalTokenStore
	reads int
}

func (c *countingTokens) TokenByHash(ctx context.Context, hash string) (domain.PersonalToken, domain.User, error) {
	c.reads++
	return c.PersonalTokenStore.TokenByHash(ctx, hash)
}

func withCountingTokens(c *countingTokens) envOption {
	return func(_ *application.Config, d *application.Deps) {
		c.PersonalTokenStore = d.Stores.PersonalTokens
		d.Stores.PersonalTokens = c
	}
}

func readToken(in string) application.CreateTokenInput {
	return application.CreateTokenInput{Name: in, Scopes: []string{"users:read"}}
}

// Only the user makes its own tokens, in a session, in the contract's
// order of checks; the token is shown once, only its hash is kept.
func TestPersonalTokens_create(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ada, adaP := e.seed(t, "ada@example.com")
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	svc := e.svc.Tokens

	_, err := svc.Create(ctx, nil, ada.ID.String(), readToken("CI"))
	wantErr(t, err, domain.ErrUnauthenticated)
	_, err = svc.Create(ctx, adaP, "not-an-id", readToken("CI"))
	wantErr(t, err, domain.ErrInvalidID)
	var verr *domain.ValidationError
	_, err = svc.Create(ctx, adaP, ada.ID.String(), application.CreateTokenInput{Name: " ", Scopes: []string{"root"},
		ExpiresInDays: ptr(366)})
	if !errors.As(err, &verr) || len(verr.Fields) != 3 {
		t.Fatalf("a bad form: %v, want three fields", err)
	}
	_, err = svc.Create(ctx, admin, ada.ID.String(), readToken("CI"))
	wantErr(t, err, domain.ErrForbidden)

	created, err := svc.Create(ctx, adaP, ada.ID.String(), readToken("  CI job "))
	wantErr(t, err, nil)
	if !domain.WellFormedPersonalToken(created.Token) || created.Name != "CI job" || created.Hash != domain.HashPersonalToken(created.Token) ||
		created.Prefix != created.Token[4:12] || !created.ExpiresAt.Equal(e.clock.Now().Add(90*24*time.Hour)) {
		t.Errorf("created = %+v", created)
	}
	// A token makes no token.
	p, err := e.auth.Authenticate(ctx, created.Token)
	wantErr(t, err, nil)
	_, err = svc.Create(ctx, p, ada.ID.String(), readToken("from a token"))
	wantErr(t, err, domain.ErrInteractiveSessionRequired)
	wantErr(t, svc.Revoke(ctx, p, ada.ID.String(), string(created.ID)), domain.ErrInteractiveSessionRequired)
}

// At most 50 live tokens; revoked and expired ones do not count.
func TestPersonalTokens_limit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ada, adaP := e.seed(t, "ada@example.com")
	var first application.CreatedToken
	for i := range domain.MaxLivePersonalTokens {
		in := readToken("t")
		if i == 0 {
			in.ExpiresInDays = ptr(1)
		}
		c, err := e.svc.Tokens.Create(ctx, adaP, ada.ID.String(), in)
		wantErr(t, err, nil)
		if i == 0 {
			first = c
		}
	}
	_, err := e.svc.Tokens.Create(ctx, adaP, ada.ID.String(), readToken("51st"))
	wantErr(t, err, domain.ErrTokenLimit)
	wantErr(t, e.svc.Tokens.Revoke(ctx, adaP, ada.ID.String(), string(first.ID)), nil)
	_, err = e.svc.Tokens.Create(ctx, adaP, ada.ID.String(), readToken("in its place"))
	wantErr(t, err, nil)
}

// A token authenticates its user, narrowed to its scopes, until it is
// revoked or expires or its user is disabled or deleted; a token whose
// checksum fails is refused before any read; a use is recorded at most
// once a minute.
func TestPersonalTokens_authenticate(t *testing.T) {
	t.Parallel()
	counting := &countingTokens{}
	e := newEnv(t, withCountingTokens(counting))
	ada, adaP := e.seed(t, "ada@example.com")
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	created, err := e.svc.Tokens.Create(ctx, adaP, ada.ID.String(), readToken("CI"))
	wantErr(t, err, nil)

	p, err := e.auth.Authenticate(ctx, created.Token)
	wantErr(t, err, nil)
	if p.UserID != ada.ID || p.Token == nil || p.Token.ID != created.ID {
		t.Fatalf("principal = %+v", p)
	}
	wantErr(t, p.RequireScope(domain.ScopeUsersRead), nil)
	wantErr(t, p.RequireScope(domain.ScopeUsersWrite), domain.ErrInsufficientScope)
	if u, err := e.users.Me(ctx, p); err != nil || u.ID != ada.ID {
		t.Errorf("Me with the token: %+v, %v", u, err)
	}

	reads := counting.reads
	broken := created.Token[:20] + "x" + created.Token[21:]
	if created.Token[20] == 'x' {
		broken = created.Token[:20] + "y" + created.Token[21:]
	}
	_, err = e.auth.Authenticate(ctx, broken)
	wantErr(t, err, domain.ErrInvalidToken)
	_, err = e.auth.Authenticate(ctx, domain.NewPersonalTokenSecret())
	wantErr(t, err, domain.ErrInvalidToken)
	if counting.reads != reads+1 {
		t.Errorf("%d reads for a broken and an unknown token, want 1 (the unknown one's)", counting.reads-reads)
	}

	// lastUsedAt: the first use now, then not again within the minute.
	list, err := e.svc.Tokens.List(ctx, adaP, ada.ID.String())
	wantErr(t, err, nil)
	used := list[0].LastUsedAt
	if !used.Equal(e.clock.Now()) {
		t.Errorf("lastUsedAt = %v, want now", used)
	}
	e.clock.Advance(30 * time.Second)
	_, _ = e.auth.Authenticate(ctx, created.Token)
	if list, _ = e.svc.Tokens.List(ctx, admin, ada.ID.String()); !list[0].LastUsedAt.Equal(used) {
		t.Errorf("lastUsedAt moved within the minute: %v", list[0].LastUsedAt)
	}
	e.clock.Advance(31 * time.Second)
	_, _ = e.auth.Authenticate(ctx, created.Token)
	if list, _ = e.svc.Tokens.List(ctx, admin, ada.ID.String()); !list[0].LastUsedAt.Equal(e.clock.Now()) {
		t.Errorf("lastUsedAt after the minute = %v", list[0].LastUsedAt)
	}

	// Disabled: refused; enabled again: accepted. A password change does
	// not end it.
	_, err = e.users.Update(ctx, admin, ada.ID.String(), application.UpdateInput{Disabled: ptr(true)})
	wantErr(t, err, nil)
	_, err = e.auth.Authenticate(ctx, created.Token)
	wantErr(t, err, domain.ErrInvalidToken)
	_, err = e.users.Update(ctx, admin, ada.ID.String(), application.UpdateInput{Disabled: ptr(false)})
	wantErr(t, err, nil)
	_, err = e.auth.Authenticate(ctx, created.Token)
	wantErr(t, err, nil)

	// Revoked by an admin: refused at once.
	wantErr(t, e.svc.Tokens.Revoke(ctx, admin, ada.ID.String(), string(created.ID)), nil)
	_, err = e.auth.Authenticate(ctx, created.Token)
	wantErr(t, err, domain.ErrInvalidToken)
	wantErr(t, e.svc.Tokens.Revoke(ctx, admin, ada.ID.String(), string(created.ID)), domain.ErrPersonalTokenNotFound)

	// Expired: refused.
	short, err := e.svc.Tokens.Create(ctx, adaP, ada.ID.String(), application.CreateTokenInput{Name: "short",
		Scopes: []string{"users:write"}, ExpiresInDays: ptr(1)})
	wantErr(t, err, nil)
	e.clock.Advance(24 * time.Hour)
	_, err = e.auth.Authenticate(ctx, short.Token)
	wantErr(t, err, domain.ErrInvalidToken)
}

// Another user sees nobody's tokens but its own; an admin sees and
// revokes anyone's; a revocation is audited with its actor.
func TestPersonalTokens_list_and_revoke_rights(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t, nil)
	ada, adaP := e.seed(t, "ada@example.com")
	_, bobP := e.seed(t, "bob@example.com")
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	created, err := e.env.svc.Tokens.Create(ctx, adaP, ada.ID.String(), readToken("CI"))
	wantErr(t, err, nil)
	_, err = e.env.svc.Tokens.List(ctx, bobP, ada.ID.String())
	wantErr(t, err, domain.ErrForbidden)
	wantErr(t, e.env.svc.Tokens.Revoke(ctx, bobP, ada.ID.String(), string(created.ID)), domain.ErrForbidden)
	list, err := e.env.svc.Tokens.List(ctx, admin, ada.ID.String())
	wantErr(t, err, nil)
	if len(list) != 1 || list[0].ID != created.ID || list[0].Hash != created.Hash {
		t.Fatalf("list = %+v", list)
	}
	_, err = e.env.svc.Tokens.List(ctx, admin, domain.NewUserID(e.clock.Now()).String())
	wantErr(t, err, domain.ErrUserNotFound)
	wantErr(t, e.env.svc.Tokens.Revoke(ctx, admin, ada.ID.String(), "not-a-token-id"), domain.ErrPersonalTokenNotFound)
	wantErr(t, e.env.svc.Tokens.Revoke(ctx, admin, ada.ID.String(), string(created.ID)), nil)
	trail := e.trail(t)
	last := trail[len(trail)-1]
	if last.Type != domain.AuditTokenRevoked || last.ActorID != admin.UserID || last.SubjectID != ada.ID {
		t.Errorf("last event = %+v", last)
	}
	if list, _ = e.env.svc.Tokens.List(ctx, adaP, ada.ID.String()); len(list) != 0 {
		t.Errorf("after the revocation: %+v", list)
	}
}

// countingUsers counts the reads of an account by id.
type countingUsers struct {
	ports.UserRepository
	byID int
}

func (c *countingUsers) ByID(ctx context.Context, id domain.UserID) (domain.User, error) {
	c.byID++
	return c.UserRepository.ByID(ctx, id)
}

// A request with a personal access token reads the account once, with
// the token: the use case's check of its caller takes that read, and
// still refuses what it refuses of a session's caller.
func TestPersonalTokens_one_read_of_the_account(t *testing.T) {
	t.Parallel()
	users := &countingUsers{}
	e := newEnv(t, func(_ *application.Config, d *application.Deps) {
		users.UserRepository = d.Stores.Users
		d.Stores.Users = users
	})
	ada, adaP := e.seed(t, "ada@example.com")
	created, err := e.svc.Tokens.Create(ctx, adaP, ada.ID.String(), readToken("CI"))
	wantErr(t, err, nil)
	p, err := e.auth.Authenticate(ctx, created.Token)
	wantErr(t, err, nil)
	before := users.byID
	if u, err := e.users.Me(ctx, p); err != nil || u.ID != ada.ID {
		t.Fatalf("Me: %+v, %v", u, err)
	}
	if n := users.byID - before; n != 0 {
		t.Errorf("Me with a token read the account %d more times, want 0", n)
	}
	// Profiles that differ from the principal's are refused, as for a
	// session (a principal made before a change of profiles).
	stale := *p
	stale.Profiles = domain.Profiles{domain.ProfileAdmin}
	_, err = e.users.Me(ctx, &stale)
	wantErr(t, err, domain.ErrInvalidToken)
}
