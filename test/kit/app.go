package kit

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/adapters/passwordhash"
	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/adapters/totp"
	"github.com/userd/userd/adapters/webauthn"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Start is when every clock of the kit starts.
var Start = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// Origin is the web origin of the passkey ceremonies of the kit's relying
// party, whose id is localhost.
const Origin = "http://localhost:8080"

// ProviderIssuer is the OpenID provider's issuer in the kit: the public
// URL of Config's links.
const ProviderIssuer = "http://userd.test"

// PublicURL is the application's USERD_PUBLIC_URL: the identity
// providers' callbacks are under it.
const PublicURL = "http://userd.test"

// HashParams are argon2id parameters small enough for suites that hash
// dozens of passwords: the cost under test is the rules', not the hash's.
var HashParams = passwordhash.Params{Memory: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}

// TokenOptions are the token adapter's options in the kit.
var TokenOptions = jwtissuer.Options{Issuer: "userd-test", Audience: "userd-test"}

// Config is the configuration of a kit application: the contract's
// defaults, and the links of the messages as cmd/userd makes them from
// USERD_PUBLIC_URL=http://userd.test.
func Config() application.Config {
	//nolint:gosec // G101: ResetPasswordURL is the address of a page, not a credential
	return application.Config{
		OpenRegistration:  true,
		RefreshTTL:        30 * 24 * time.Hour,
		RefreshFamilyTTL:  90 * 24 * time.Hour,
		RefreshReuseGrace: 10 * time.Second,
		VerifyEmailURL:    "http://userd.test/account/verify-email",
		ResetPasswordURL:  "http://userd.test/account/reset-password",
		MagicLinkURL:      "http://userd.test/account/magic",
		EmailSignIn:       true,
		PublicURL:         PublicURL,
	}
}

// AppParts are what NewApp sets an application up over; NewApp makes
// those left nil.
type AppParts struct {
	Store *memory.Store
	// Box seals the store's secrets: the nodes of one store share it.
	Box   *secretbox.Box
	Clock *clock.Manual
	// Audit, when set, is the audit log the store's ports write to and its
	// purger purges; nil keeps no events.
	Audit *memory.AuditLog
	// OIDCProvider turns the OpenID provider's RS256 keys on
	// (jwtissuer.Options.OIDCProvider). Unless the store holds one
	// already, NewApp stores a key made once per test binary before the
	// Issuer starts: an RSA key costs tens of milliseconds to make.
	OIDCProvider bool
}

// App is an application over memory stores, set up but not built: a
// test changes Deps and Config (a fake, a wrapped store port, a
// switch), then builds it with Services, as cmd/userd builds its own
// with application.New.
type App struct {
	Clock *clock.Manual
	Store *memory.Store
	Box   *secretbox.Box
	// Issuer, Keys and Codec are the token adapter's over the store,
	// their keys loaded.
	Issuer *jwtissuer.Issuer
	Keys   *jwtissuer.KeyManager
	Codec  *jwtissuer.RefreshCodec
	// Mailer keeps what the application sends, while Deps.Mailer is it.
	Mailer *memory.Mailer
	// Upstream stands for the identity providers, while Deps.Upstream
	// is it.
	Upstream *Upstream
	Deps     application.Deps
	Config   application.Config
}

// NewApp sets up an application over parts: the store's ports
// (memory.Store.Stores), argon2id with HashParams, the token adapter with
// TokenOptions, TOTP codes of the issuer "userd", the passkey relying
// party of localhost for Origin, a memory.Mailer, no logger, and Config.
func NewApp(t testing.TB, parts AppParts) *App {
	t.Helper()
	if parts.Store == nil {
		parts.Store = memory.NewStore()
	}
	if parts.Clock == nil {
		parts.Clock = clock.NewManual(Start)
	}
	a := &App{Clock: parts.Clock, Store: parts.Store, Box: parts.Box, Mailer: &memory.Mailer{}, Upstream: NewUpstream(),
		Config: Config()}
	var errs []error
	if a.Box == nil {
		box, err := secretbox.New(secretbox.NewKey())
		a.Box, errs = box, append(errs, err)
	}
	keys := a.Store.Keys(a.Box)
	opts := TokenOptions
	opts.OIDCProvider = parts.OIDCProvider
	if parts.OIDCProvider && a.Box != nil {
		errs = append(errs, seedProviderKey(keys, a.Clock.Now()))
	}
	issuer, err := jwtissuer.New(keys, a.Clock, opts)
	errs = append(errs, err)
	manager, err := jwtissuer.NewKeyManager(keys, a.Clock, opts)
	errs = append(errs, err)
	otp, err := totp.New("userd", nil)
	errs = append(errs, err)
	rp, err := webauthn.New(webauthn.Options{RPID: "localhost", RPName: "userd", Origins: []string{Origin}})
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("kit: %v", err)
	}
	a.Issuer, a.Keys, a.Codec = issuer, manager, jwtissuer.NewRefreshCodec(keys, a.Clock)
	ctx := context.Background()
	if err := errors.Join(a.Issuer.Start(ctx), a.Codec.Start(ctx)); err != nil {
		t.Fatalf("kit: token keys: %v", err)
	}
	a.Deps = application.Deps{
		Stores: a.Store.Stores(a.Box, parts.Audit),
		Hasher: passwordhash.New(HashParams),
		Issuer: a.Issuer, Codec: a.Codec, Keys: a.Keys, Clock: a.Clock, Mailer: a.Mailer,
		OTP: otp, RelyingParty: rp, Upstream: a.Upstream,
	}
	if parts.OIDCProvider {
		a.Deps.OAuthTokens = jwtissuer.NewProviderTokens(a.Issuer, ProviderIssuer)
		a.Config.ProviderIssuer = ProviderIssuer
	}
	return a
}

// providerKey is the PKCS#8 form of the RSA key that seedProviderKey
// stores, made at its first call.
var providerKey = sync.OnceValues(func() ([]byte, error) {
	priv, err := rsa.GenerateKey(rand.Reader, jwtissuer.ProviderKeyBits)
	if err != nil {
		return nil, err
	}
	return x509.MarshalPKCS8PrivateKey(priv)
})

// seedProviderKey stores providerKey as the OpenID provider's key, active
// from now, unless keys holds a key of the provider already.
func seedProviderKey(keys ports.KeyStore, now time.Time) error {
	ctx := context.Background()
	stored, err := keys.Keys(ctx, domain.KeyPurposeOIDC)
	if err != nil || len(stored) > 0 {
		return err
	}
	der, err := providerKey()
	if err != nil {
		return err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	return keys.AddKey(ctx, domain.SigningKey{ID: hex.EncodeToString(id[:]), Purpose: domain.KeyPurposeOIDC,
		Algorithm: jwtissuer.RS256, Secret: der, CreatedAt: now})
}

// Services builds the application from a.Deps and a.Config.
func (a *App) Services(t testing.TB) *application.Services {
	t.Helper()
	svc, err := application.New(a.Deps, a.Config)
	if err != nil {
		t.Fatalf("kit: application.New: %v", err)
	}
	return svc
}
