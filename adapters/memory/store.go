// Package memory implements the storage ports in process memory, for tests
// and for USERD_DB_DRIVER=memory. It mirrors the SQL store as closely as is
// useful: times are kept in UTC at microsecond precision, refresh-token
// families reference existing users, and deleting a user deletes its
// families and tokens. Everything lives in one Store so that such cascades
// are possible; the per-port types are views onto it.
//
// Values are copied on the way in and out, so a caller can never change
// stored state through a slice or pointer it handed over or got back.
//
// WithinTx holds the store's lock for the whole of its function: the
// methods called with the context it passes on see that they run inside
// it and do not lock again; a failed function's changes are undone by
// putting back the state the store had when it began.
package memory

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// errDuplicate is returned when a key that must be unique (a refresh-token
// hash, a family or signing-key id) is stored twice. No domain error fits:
// it means a bug in the caller, not a condition a client can cause.
var errDuplicate = errors.New("already exists")

// Store holds every map of the in-memory store behind one mutex. One lock
// for everything keeps cascades (user deletion) and cross-map checks
// (families reference users) trivially atomic; contention does not matter
// at the scale this store is meant for.
type Store struct {
	mu sync.Mutex

	users   map[domain.UserID]domain.User
	byEmail map[domain.Email]domain.UserID
	// ids holds every user id in ascending order, so that List can seek to
	// a cursor instead of sorting the whole map on every page.
	ids []domain.UserID

	families map[string]domain.RefreshFamily
	tokens   map[string]domain.RefreshToken

	attempts map[domain.Email]domain.LoginAttempts

	keys map[string]domain.SigningKey

	// outbox holds the messages, their payloads sealed when secret.
	outbox map[domain.OutboxID]outboxEntry
	// links holds the link tokens by hash.
	links map[string]domain.LinkToken

	// totp holds the TOTP factors by user, their secrets sealed.
	totp map[domain.UserID]domain.TOTPFactor
	// recovery holds the recovery codes by user and hash.
	recovery map[recoveryKey]recoveryCode
	// challenges holds the mfaTokens by hash.
	challenges map[string]domain.MFAChallenge
	// passkeys holds the passkeys by id; ceremonies the begun passkey
	// ceremonies by id.
	passkeys   map[domain.PasskeyID]domain.Passkey
	ceremonies map[string]domain.PasskeyCeremony

	// clients holds the OAuth clients by id; authRequests the
	// authorization requests by id; grants the users' grants to clients.
	clients      map[domain.OAuthClientID]domain.OAuthClient
	authRequests map[string]domain.AuthRequest
	grants       map[grantKey]domain.Grant

	// providers holds the identity providers by slug, their client
	// secrets sealed; identities the links of users to them.
	providers  map[string]domain.IdentityProvider
	identities map[identityKey]domain.UserIdentity

	// personalTokens holds the personal access tokens by id, hashed.
	personalTokens map[domain.PersonalTokenID]domain.PersonalToken
}

var (
	_ ports.HealthChecker = (*Store)(nil)
	_ ports.Transactor    = (*Store)(nil)
)

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		users:    make(map[domain.UserID]domain.User),
		byEmail:  make(map[domain.Email]domain.UserID),
		families: make(map[string]domain.RefreshFamily),
		tokens:   make(map[string]domain.RefreshToken),
		attempts: make(map[domain.Email]domain.LoginAttempts),
		keys:     make(map[string]domain.SigningKey),
		outbox:   make(map[domain.OutboxID]outboxEntry),
		links:    make(map[string]domain.LinkToken),

		totp:       make(map[domain.UserID]domain.TOTPFactor),
		recovery:   make(map[recoveryKey]recoveryCode),
		challenges: make(map[string]domain.MFAChallenge),
		passkeys:   make(map[domain.PasskeyID]domain.Passkey),
		ceremonies: make(map[string]domain.PasskeyCeremony),

		clients:      make(map[domain.OAuthClientID]domain.OAuthClient),
		authRequests: make(map[string]domain.AuthRequest),
		grants:       make(map[grantKey]domain.Grant),

		providers:  make(map[string]domain.IdentityProvider),
		identities: make(map[identityKey]domain.UserIdentity),

		personalTokens: make(map[domain.PersonalTokenID]domain.PersonalToken),
	}
}

// Users returns the store's user repository.
func (s *Store) Users() *UserRepository { return &UserRepository{s: s} }

// RefreshTokens returns the store's refresh-token store. Its families can
// only reference users of the same Store.
func (s *Store) RefreshTokens() *RefreshTokenStore { return &RefreshTokenStore{s: s} }

// LoginAttempts returns the store's login-attempt counter.
func (s *Store) LoginAttempts() *LoginAttemptStore { return &LoginAttemptStore{s: s} }

// Keys returns the store's key store, sealing and opening secrets with
// box. Views with different boxes share the keys.
func (s *Store) Keys(box ports.SecretBox) *KeyStore { return &KeyStore{s: s, box: box} }

// Outbox returns the store's outbox, sealing and opening secret payloads
// with box. Views with different boxes share the messages.
func (s *Store) Outbox(box ports.SecretBox) *Outbox { return &Outbox{s: s, box: box} }

// LinkTokens returns the store's link-token store. Its tokens can only
// reference users of the same Store.
func (s *Store) LinkTokens() *LinkTokenStore { return &LinkTokenStore{s: s} }

// MFA returns the store's second-factor store, sealing and opening TOTP
// secrets with box. Views with different boxes share the factors.
func (s *Store) MFA(box ports.SecretBox) *MFAStore { return &MFAStore{s: s, box: box} }

// MFAChallenges returns the store's mfaToken store.
func (s *Store) MFAChallenges() *MFAChallengeStore { return &MFAChallengeStore{s: s} }

// Passkeys returns the store's passkey store.
func (s *Store) Passkeys() *PasskeyStore { return &PasskeyStore{s: s} }

// OAuthClients returns the store's OAuth client store.
func (s *Store) OAuthClients() *OAuthClientStore { return &OAuthClientStore{s: s} }

// AuthRequests returns the store's authorization-request store.
func (s *Store) AuthRequests() *AuthRequestStore { return &AuthRequestStore{s: s} }

// Grants returns the store's grant store.
func (s *Store) Grants() *GrantStore { return &GrantStore{s: s} }

// IdentityProviders returns the store's identity-provider store, sealing
// and opening client secrets with box. Views with different boxes share
// the providers.
func (s *Store) IdentityProviders(box ports.SecretBox) *IdentityProviderStore {
	return &IdentityProviderStore{s: s, box: box}
}

// Identities returns the store's user-identity store.
func (s *Store) Identities() *UserIdentityStore { return &UserIdentityStore{s: s} }

// Stores returns every store port of s in one value, sealing secrets with
// box. audit, when set, is the audit log the ports write to and the purger
// purges; nil keeps no events. The store is one process's: there are no
// other nodes to tell of ended sessions.
func (s *Store) Stores(box ports.SecretBox, audit *AuditLog) ports.Stores {
	st := ports.Stores{
		Users: s.Users(), Tokens: s.RefreshTokens(), Attempts: s.LoginAttempts(), Keys: s.Keys(box),
		Tx: s, Outbox: s.Outbox(box), Links: s.LinkTokens(),
		MFA: s.MFA(box), Challenges: s.MFAChallenges(), Passkeys: s.Passkeys(), OAuthClients: s.OAuthClients(),
		AuthRequests: s.AuthRequests(), Grants: s.Grants(), ClientRevoker: s,
		Purger: NewPurger(s, audit), Lock: NewLock(), Health: s,
		IdentityProviders: s.IdentityProviders(box), Identities: s.Identities(), PersonalTokens: s.PersonalTokens(),
	}
	if audit != nil {
		// Not a nil *AuditLog in the interface, which would not be nil.
		st.Audit = audit
	}
	return st
}

// Ping always succeeds: memory is always there.
func (s *Store) Ping(context.Context) error { return nil }

// txKey is the context key of the transaction WithinTx runs.
type txKey struct{}

// tx is a transaction of WithinTx: the store whose lock it holds, until
// done.
type tx struct {
	s    *Store
	done atomic.Bool
}

// inTx reports whether ctx is inside a running WithinTx of s, which holds
// the lock already.
func (s *Store) inTx(ctx context.Context) bool {
	t, ok := ctx.Value(txKey{}).(*tx)
	return ok && t.s == s && !t.done.Load()
}

// lock takes the store's lock for one method and returns what releases
// it; inside a WithinTx of the store, which holds the lock for the whole
// transaction, it takes nothing (sync.Mutex is not reentrant).
func (s *Store) lock(ctx context.Context) (unlock func()) {
	if s.inTx(ctx) {
		return func() {}
	}
	s.mu.Lock()
	return s.mu.Unlock
}

// WithinTx implements ports.Transactor: fn runs under the store's lock,
// so that no other call sees its changes until it returns, and a copy of
// the state taken before it runs is put back when it fails (or panics).
// The copy costs time in proportion to what the store holds: fine for
// tests and demos, which is what this store is for. fn must call the
// store from its own goroutine only: the calls made with its context do
// not lock.
func (s *Store) WithinTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if s.inTx(ctx) {
		return fn(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &tx{s: s}
	// Deferred calls run last first: the state is put back, then the
	// context stops counting as inside, then the lock is released.
	defer t.done.Store(true)
	saved := s.snapshot()
	committed := false
	defer func() {
		if !committed {
			s.restore(saved)
		}
	}()
	if err := fn(context.WithValue(ctx, txKey{}, t)); err != nil {
		return err
	}
	committed = true
	return nil
}

// state is a copy of every map of the store. Stored values are replaced,
// never changed in place, so copies of the maps are copies of the state.
type state struct {
	users    map[domain.UserID]domain.User
	byEmail  map[domain.Email]domain.UserID
	ids      []domain.UserID
	families map[string]domain.RefreshFamily
	tokens   map[string]domain.RefreshToken
	attempts map[domain.Email]domain.LoginAttempts
	keys     map[string]domain.SigningKey
	outbox   map[domain.OutboxID]outboxEntry
	links    map[string]domain.LinkToken

	totp       map[domain.UserID]domain.TOTPFactor
	recovery   map[recoveryKey]recoveryCode
	challenges map[string]domain.MFAChallenge
	passkeys   map[domain.PasskeyID]domain.Passkey
	ceremonies map[string]domain.PasskeyCeremony

	clients      map[domain.OAuthClientID]domain.OAuthClient
	authRequests map[string]domain.AuthRequest
	grants       map[grantKey]domain.Grant

	providers  map[string]domain.IdentityProvider
	identities map[identityKey]domain.UserIdentity

	// personalTokens holds the personal access tokens by id, hashed.
	personalTokens map[domain.PersonalTokenID]domain.PersonalToken
}

func (s *Store) snapshot() state {
	return state{
		users:    maps.Clone(s.users),
		byEmail:  maps.Clone(s.byEmail),
		ids:      slices.Clone(s.ids),
		families: maps.Clone(s.families),
		tokens:   maps.Clone(s.tokens),
		attempts: maps.Clone(s.attempts),
		keys:     maps.Clone(s.keys),
		outbox:   maps.Clone(s.outbox),
		links:    maps.Clone(s.links),

		totp:       maps.Clone(s.totp),
		recovery:   maps.Clone(s.recovery),
		challenges: maps.Clone(s.challenges),
		passkeys:   maps.Clone(s.passkeys),
		ceremonies: maps.Clone(s.ceremonies),

		clients:      maps.Clone(s.clients),
		authRequests: maps.Clone(s.authRequests),
		grants:       maps.Clone(s.grants),

		providers:  maps.Clone(s.providers),
		identities: maps.Clone(s.identities),

		personalTokens: maps.Clone(s.personalTokens),
	}
}

func (s *Store) restore(st state) {
	s.users, s.byEmail, s.ids = st.users, st.byEmail, st.ids
	s.families, s.tokens, s.attempts, s.keys = st.families, st.tokens, st.attempts, st.keys
	s.outbox, s.links = st.outbox, st.links
	s.totp, s.recovery, s.challenges, s.passkeys, s.ceremonies = st.totp, st.recovery, st.challenges, st.passkeys, st.ceremonies
	s.clients, s.authRequests, s.grants = st.clients, st.authRequests, st.grants
	s.providers, s.identities = st.providers, st.identities
	s.personalTokens = st.personalTokens
}

// normTime drops what the SQL store cannot keep (sub-microsecond digits,
// the location, the monotonic reading), so that code tested against this
// store sees the same values it will see in production.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMicro(t.UnixMicro()).UTC()
}

// normTimePtr is normTime for optional times; it always returns a fresh
// pointer, never the caller's.
func normTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := normTime(*t)
	return &n
}

func copyUser(u domain.User) domain.User {
	// Canonical returns a fresh slice, sorted and without duplicates, as the
	// SQL store keeps it.
	u.Profiles = u.Profiles.Canonical()
	u.CreatedAt = normTime(u.CreatedAt)
	u.UpdatedAt = normTime(u.UpdatedAt)
	return u
}

func copyFamily(f domain.RefreshFamily) domain.RefreshFamily {
	f.AMR = f.AMR.Clone()
	f.CreatedAt = normTime(f.CreatedAt)
	f.ExpiresAt = normTime(f.ExpiresAt)
	f.RevokedAt = normTimePtr(f.RevokedAt)
	f.LastUsedAt = normTime(f.LastUsedAt)
	// As the SQL store keeps it: microseconds.
	f.IdleTimeout = max(f.IdleTimeout.Truncate(time.Microsecond), 0)
	// Nil stays nil (userd's own sessions), as the SQL store's NULL.
	f.Scopes = slices.Clone(f.Scopes)
	f.AuthTime = normTime(f.AuthTime)
	return f
}

func copyToken(t domain.RefreshToken) domain.RefreshToken {
	t.IssuedAt = normTime(t.IssuedAt)
	t.ExpiresAt = normTime(t.ExpiresAt)
	t.UsedAt = normTimePtr(t.UsedAt)
	return t
}

func copyKey(k domain.SigningKey) domain.SigningKey {
	k.Secret = slices.Clone(k.Secret)
	k.CreatedAt = normTime(k.CreatedAt)
	return k
}

func copyOutboxMessage(m domain.OutboxMessage) domain.OutboxMessage {
	m.Payload = slices.Clone(m.Payload)
	m.CreatedAt = normTime(m.CreatedAt)
	m.NextAttemptAt = normTime(m.NextAttemptAt)
	return m
}

func copyLinkToken(t domain.LinkToken) domain.LinkToken {
	t.CreatedAt = normTime(t.CreatedAt)
	t.ExpiresAt = normTime(t.ExpiresAt)
	t.UsedAt = normTimePtr(t.UsedAt)
	return t
}

func copyTOTPFactor(f domain.TOTPFactor) domain.TOTPFactor {
	f.Secret = slices.Clone(f.Secret)
	f.CreatedAt = normTime(f.CreatedAt)
	f.ConfirmedAt = normTimePtr(f.ConfirmedAt)
	return f
}

func copyMFAChallenge(c domain.MFAChallenge) domain.MFAChallenge {
	c.CreatedAt = normTime(c.CreatedAt)
	c.ExpiresAt = normTime(c.ExpiresAt)
	c.UsedAt = normTimePtr(c.UsedAt)
	return c
}

// copyPasskey copies p; its byte slices are empty, never nil, as the SQL
// store's NOT NULL columns give them back.
func copyPasskey(p domain.Passkey) domain.Passkey {
	p.CredentialID = append([]byte{}, p.CredentialID...)
	p.Credential = append([]byte{}, p.Credential...)
	p.CreatedAt = normTime(p.CreatedAt)
	p.LastUsedAt = normTimePtr(p.LastUsedAt)
	return p
}

func copyCeremony(c domain.PasskeyCeremony) domain.PasskeyCeremony {
	c.State = append([]byte{}, c.State...)
	c.CreatedAt = normTime(c.CreatedAt)
	c.ExpiresAt = normTime(c.ExpiresAt)
	return c
}
