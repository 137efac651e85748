package application_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/adapters/totp"
	"github.com/userd/userd/adapters/webauthn"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/logbuf"
)

func newClock() *clock.Manual { return clock.NewManual(kit.Start) }

// fakeHasher stands in for argon2id: the rules under test are about who may
// do what, not about hashing. Hashes with the prefix "old$" verify but ask
// for a rehash, like bcrypt imports do.
type fakeHasher struct{}

func (fakeHasher) Hash(_ context.Context, pw string) (string, error) { return "fake$" + pw, nil }

func (fakeHasher) Normalize(pw string) string { return pw }

// CheckEncoded accepts the two fake forms, the only ones Verify knows.
func (fakeHasher) CheckEncoded(encoded string) error {
	if strings.HasPrefix(encoded, "fake$") || strings.HasPrefix(encoded, "old$") {
		return nil
	}
	return errors.New("unknown hash format")
}

func (fakeHasher) Verify(_ context.Context, encoded, pw string) (bool, bool, error) {
	switch {
	case strings.HasPrefix(encoded, "fake$"):
		return encoded == "fake$"+pw, false, nil
	case strings.HasPrefix(encoded, "old$"):
		ok := encoded == "old$"+pw
		return ok, ok, nil
	}
	return false, false, errors.New("unknown hash format")
}

// fakeIssuer issues readable tokens: "tok|<id>|<profiles>|<sid>|<amr>",
// and "|<claims>" (the hook's, as JSON) when there are some.
type fakeIssuer struct{ clock ports.Clock }

func (f fakeIssuer) Issue(_ context.Context, u domain.User, s domain.Session, extra domain.HookClaims) (domain.AccessToken, error) {
	token := "tok|" + u.ID.String() + "|" + strings.Join(u.Profiles.Strings(), ",") +
		"|" + s.ID + "|" + strings.Join(s.AMR, ",")
	if !extra.Empty() {
		token += "|" + string(extra.JSON())
	}
	return domain.AccessToken{Token: token, ExpiresAt: f.clock.Now().Add(15 * time.Minute)}, nil
}

func (fakeIssuer) Verify(_ context.Context, token string) (domain.Principal, error) {
	parts := strings.Split(token, "|")
	if (len(parts) != 5 && len(parts) != 6) || parts[0] != "tok" {
		return domain.Principal{}, domain.ErrInvalidToken
	}
	ps, err := domain.ParseProfiles(strings.Split(parts[2], ","))
	if err != nil {
		return domain.Principal{}, domain.ErrInvalidToken
	}
	amr, _ := domain.ParseAMR(strings.Split(parts[4], ","))
	return domain.Principal{UserID: domain.UserID(parts[1]), Profiles: ps,
		Session: domain.Session{ID: parts[3], AMR: amr}}, nil
}

// fakeKeys stands in for the token adapter's key management; with
// provider, each rotation adds an RS256 key of the OpenID provider after
// the access-token key, as the adapter does with the provider on.
type fakeKeys struct {
	mu       sync.Mutex
	clock    ports.Clock
	keys     []domain.KeyInfo
	provider bool
}

// Rotate adds keys that sign at once with domain.RotateNow and are
// pending otherwise.
func (k *fakeKeys) Rotate(_ context.Context, when domain.KeyRotation) ([]domain.KeyInfo, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if when == domain.RotateNow {
		for i := range k.keys {
			k.keys[i].Status = domain.KeyPublished
		}
	}
	added := []domain.KeyInfo{{Purpose: domain.KeyPurposeAccessToken, Algorithm: "EdDSA"}}
	if k.provider {
		added = append(added, domain.KeyInfo{Purpose: domain.KeyPurposeOIDC, Algorithm: "RS256"})
	}
	for i := range added {
		added[i].KID = fmt.Sprintf("kid-%02d", len(k.keys))
		added[i].ActiveFrom, added[i].Status = k.clock.Now(), domain.KeyActive
		if when != domain.RotateNow {
			added[i].ActiveFrom, added[i].Status = added[i].ActiveFrom.Add(6*time.Minute), domain.KeyPending
		}
		k.keys = append(k.keys, added[i])
	}
	return added, nil
}

func (k *fakeKeys) List(context.Context) ([]domain.KeyInfo, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.keys), nil
}

// env is one isolated set of services over fresh in-memory adapters.
type env struct {
	clock  *clock.Manual
	store  *memory.Store
	svc    *application.Services
	users  *application.UserService
	auth   *application.AuthService
	keys   *application.KeyService
	audit  *memory.AuditLog
	counts *memory.SecurityMetrics
	logs   *logbuf.Buffer
	mailer *fakeMailer
	// upstream stands for the identity providers.
	upstream *kit.Upstream
}

type envOption func(*application.Config, *application.Deps)

func closedRegistration(c *application.Config, _ *application.Deps) { c.OpenRegistration = false }

func requireCurrentPassword(c *application.Config, _ *application.Deps) {
	c.RequireCurrentPassword = true
}

func noGrace(c *application.Config, _ *application.Deps) { c.RefreshReuseGrace = 0 }

// withAuditLog stores the events in audit instead of the env's own log.
func withAuditLog(audit ports.AuditLog) envOption {
	return func(_ *application.Config, d *application.Deps) { d.Stores.Audit = audit }
}

// withProviderKeys turns the OpenID provider's keys on: a rotation adds
// two keys.
func withProviderKeys(_ *application.Config, d *application.Deps) {
	d.Keys = &fakeKeys{clock: d.Clock, provider: true}
}

// withoutEvents leaves the audit log and the metrics out.
func withoutEvents(_ *application.Config, d *application.Deps) { d.Stores.Audit, d.Metrics = nil, nil }

// testConfig is the contract's default configuration (the kit's), with
// the links of the messages bare: "?token=T".
func testConfig() application.Config {
	c := kit.Config()
	c.VerifyEmailURL, c.ResetPasswordURL = "", ""
	c.ProviderIssuer = kit.ProviderIssuer
	return c
}

// testDeps are the ports of a fresh env: the kit's application over the
// memory store (the real refresh-token codec, TOTP and passkey adapters),
// with the fakes for hashing, tokens, keys and mail, an in-memory audit
// log and counters, and a log into logs.
func testDeps(t testing.TB, store *memory.Store, clk *clock.Manual, audit *memory.AuditLog, counts *memory.SecurityMetrics, logs *logbuf.Buffer) application.Deps {
	a := kit.NewApp(t, kit.AppParts{Store: store, Box: testBox, Clock: clk, Audit: audit, OIDCProvider: true})
	d := a.Deps
	d.Hasher, d.Issuer, d.Keys, d.Mailer = fakeHasher{}, fakeIssuer{clock: clk}, &fakeKeys{clock: clk}, &fakeMailer{}
	d.Metrics, d.Log = counts, slog.New(slog.NewJSONHandler(logs, nil))
	return d
}

// testOrigin is the origin of the tests' passkey ceremonies, on the RP id
// localhost.
const testOrigin = kit.Origin

// testOTP is the TOTP adapter, issuer "userd".
func testOTP(t testing.TB) *totp.OneTimePasswords {
	t.Helper()
	o, err := totp.New("userd", nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// testRelyingParty is the passkey adapter for RP id localhost and
// testOrigin.
func testRelyingParty(t testing.TB) *webauthn.RelyingParty {
	t.Helper()
	rp, err := webauthn.New(webauthn.Options{RPID: "localhost", RPName: "userd", Origins: []string{testOrigin}})
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// fakeMailer keeps what it is given to send, and the trace each send was
// in (fakeTraces); fail, when set, decides the answer to each message
// instead.
type fakeMailer struct {
	mu     sync.Mutex
	sent   []domain.Mail
	traces []string
	fail   func(domain.Mail) error
}

func (m *fakeMailer) Send(ctx context.Context, mail domain.Mail) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.traces = append(m.traces, traceOf(ctx))
	if m.fail != nil {
		if err := m.fail(mail); err != nil {
			return err
		}
	}
	m.sent = append(m.sent, mail)
	return nil
}

// Sent returns the messages sent so far.
func (m *fakeMailer) Sent() []domain.Mail {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.sent)
}

// startedCodec is the token adapter's refresh-token codec, its key loaded
// (or created) in keys.
func startedCodec(t testing.TB, keys ports.KeyStore, clk ports.Clock) *jwtissuer.RefreshCodec {
	t.Helper()
	codec := jwtissuer.NewRefreshCodec(keys, clk)
	if err := codec.Start(context.Background()); err != nil {
		t.Fatalf("refresh codec: %v", err)
	}
	return codec
}

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	e := &env{clock: newClock(), store: memory.NewStore(), audit: memory.NewAuditLog(),
		counts: memory.NewSecurityMetrics(), logs: &logbuf.Buffer{}}
	cfg := testConfig()
	deps := testDeps(t, e.store, e.clock, e.audit, e.counts, e.logs)
	for _, o := range opts {
		o(&cfg, &deps)
	}
	svc, err := application.New(deps, cfg)
	if err != nil {
		t.Fatalf("application.New: %v", err)
	}
	e.svc, e.users, e.auth, e.keys = svc, svc.Users, svc.Auth, svc.Keys
	e.mailer = deps.Mailer.(*fakeMailer)
	e.upstream, _ = deps.Upstream.(*kit.Upstream)
	return e
}

// deliver runs the sender until the outbox has nothing due, and returns
// the messages sent meanwhile.
func (e *env) deliver(t *testing.T) []domain.Mail {
	t.Helper()
	before := len(e.mailer.Sent())
	for range 20 {
		n, err := e.svc.Delivery.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return e.mailer.Sent()[before:]
		}
	}
	t.Fatal("the outbox never emptied")
	return nil
}

var ctx = context.Background()

// seed creates a user directly and returns it with its principal.
func (e *env) seed(t *testing.T, email string, profiles ...domain.Profile) (domain.User, *domain.Principal) {
	t.Helper()
	if len(profiles) == 0 {
		profiles = domain.Profiles{domain.ProfileCustomer}
	}
	// Clock steps keep ids (which start with the creation second) ordered.
	e.clock.Advance(time.Second)
	now := e.clock.Now()
	u := domain.User{
		ID: domain.NewUserID(now), Name: "Seeded", Email: domain.Email(email),
		PasswordHash: "fake$correct horse battery", Profiles: profiles, CreatedAt: now, UpdatedAt: now,
	}
	if err := e.store.Users().Create(ctx, u); err != nil {
		t.Fatalf("seed %s: %v", email, err)
	}
	return u, &domain.Principal{UserID: u.ID, Profiles: u.Profiles}
}

const seededPassword = "correct horse battery"

func ptr[T any](v T) *T { return &v }

// tokensOf is the token pair of a sign-in that is to open a session: a
// second step asked for instead is errSecondStep.
func tokensOf(res application.SignInResult, err error) (application.TokenPair, error) {
	if err != nil {
		return application.TokenPair{}, err
	}
	if res.Tokens == nil {
		return application.TokenPair{}, errSecondStep
	}
	return *res.Tokens, nil
}

var errSecondStep = errors.New("a second step was asked for, not a session")

func wantErr(t *testing.T, got, want error) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Fatalf("unexpected error: %v", got)
		}
		return
	}
	if !errors.Is(got, want) {
		t.Fatalf("error = %v, want %v", got, want)
	}
}
