package main

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx/fxtest"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/config"
	"github.com/userd/userd/domain"
)

// `userd secrets reencrypt` moves every secret to the new first key, after
// which the old key can go; without the key that sealed them, the
// commands refuse to start and say why.
func TestRun_secrets_reencrypt_on_sqlite(t *testing.T) {
	dir := t.TempDir()
	dsn := filepath.Join(dir, "userd.db")
	t.Setenv("USERD_DB_DSN", dsn)
	// The keys, made by a start of the server under the key file it makes.
	cfg := testConfig(t, map[string]string{"USERD_DB_DSN": dsn, "USERD_HTTP_ADDR": freeAddr(t)})
	fxtest.New(t, serverOptions(cfg, io.Discard)).RequireStart().RequireStop()
	file, err := secretbox.ReadKeyFile(filepath.Join(dir, keyFileName))
	if err != nil {
		t.Fatal(err)
	}
	oldKey, newKey := secretbox.EncodeKey(file.Keys[0]), secretbox.EncodeKey(secretbox.NewKey())
	// And a user's TOTP factor and an identity provider's client secret,
	// sealed under the old key.
	user := addTOTPUser(t, dsn, file.Keys[0])
	addIdentityProvider(t, dsn, file.Keys[0])

	t.Setenv("USERD_SECRET_KEY", newKey+","+oldKey)
	code, out, errOut := runCLI(t, "", "secrets", "reencrypt")
	// The access-token key, the OpenID provider's, the refresh-token key,
	// the TOTP secret and the identity provider's client secret.
	want := "re-encrypted 5 secrets under key " + keyIDOf(t, newKey) + "\n"
	if code != exitOK || out != want {
		t.Fatalf("secrets reencrypt: code %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	if code, out, _ = runCLI(t, "", "secrets", "reencrypt"); code != exitOK || !strings.HasPrefix(out, "re-encrypted 0 secrets") {
		t.Errorf("second reencrypt: code %d, %q; want nothing left", code, out)
	}

	t.Setenv("USERD_SECRET_KEY", newKey)
	if code, out, errOut = runCLI(t, "", "keys", "list"); code != exitOK {
		t.Errorf("keys list under the new key alone: code %d: %s%s", code, out, errOut)
	}
	checkTOTPSealedUnder(t, dsn, user, newKey, oldKey)
	checkProviderSecretSealedUnder(t, dsn, newKey, oldKey)
	t.Setenv("USERD_SECRET_KEY", oldKey)
	code, _, errOut = runCLI(t, "", "keys", "list")
	if code != exitFailure || !strings.Contains(errOut, "sealed under a secret key that is not configured (key id "+keyIDOf(t, newKey)+")") ||
		!strings.Contains(errOut, "give USERD_SECRET_KEY the key the secrets were sealed with") {
		t.Errorf("keys list under the old key alone: code %d, stderr %q; want the unknown key named", code, errOut)
	}
	if strings.Contains(errOut, oldKey) || strings.Contains(errOut, newKey) {
		t.Errorf("the error shows a key: %s", errOut)
	}

	t.Setenv("USERD_DB_DRIVER", config.DriverMemory)
	t.Setenv("USERD_SECRET_KEY", "")
	if code, _, errOut = runCLI(t, "", "secrets", "reencrypt"); code != exitFailure || !strings.Contains(errOut, "USERD_DB_DRIVER=memory keeps nothing") {
		t.Errorf("secrets reencrypt on memory: code %d, stderr %q", code, errOut)
	}
}

// keyIDOf is the key id of a base64 key.
func keyIDOf(t *testing.T, key string) string {
	t.Helper()
	keys, err := secretbox.ParseKeys(key)
	if err != nil {
		t.Fatal(err)
	}
	return secretbox.KeyID(keys[0])
}

// addTOTPUser stores a user with a confirmed TOTP factor in the SQLite
// database dsn, its secret sealed under key, and returns the user's id.
func addTOTPUser(t *testing.T, dsn string, key []byte) domain.UserID {
	t.Helper()
	db := openStore(t, dsn)
	now := time.Now()
	u := domain.User{ID: domain.NewUserID(now), Name: "Ada", Email: "ada@example.com", PasswordHash: "x",
		Profiles: domain.Profiles{domain.ProfileCustomer}, MFAEnabled: true, CreatedAt: now, UpdatedAt: now}
	if err := gormstore.NewUserRepository(db).Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.New(key)
	if err != nil {
		t.Fatal(err)
	}
	mfa := gormstore.NewMFAStore(db, box)
	if err := mfa.PutTOTP(t.Context(), domain.TOTPFactor{UserID: u.ID, Secret: []byte("0123456789abcdefghij"), CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if ok, err := mfa.AcceptTOTPStep(t.Context(), u.ID, domain.TOTPStep(now), now, true); err != nil || !ok {
		t.Fatalf("AcceptTOTPStep = %v, %v", ok, err)
	}
	return u.ID
}

// checkTOTPSealedUnder checks that the user's TOTP secret opens under the
// base64 key sealed and not under old.
func checkTOTPSealedUnder(t *testing.T, dsn string, user domain.UserID, sealed, old string) {
	t.Helper()
	db := openStore(t, dsn)
	for key, opens := range map[string]bool{sealed: true, old: false} {
		box := boxOf(t, key)
		f, err := gormstore.NewMFAStore(db, box).TOTP(t.Context(), user)
		if opens && (err != nil || string(f.Secret) != "0123456789abcdefghij") {
			t.Errorf("TOTP secret under key %s = %q, %v; want it", keyIDOf(t, key), f.Secret, err)
		}
		if !opens && !errors.Is(err, domain.ErrSecretKeyUnknown) {
			t.Errorf("TOTP secret under key %s: %v; want ErrSecretKeyUnknown", keyIDOf(t, key), err)
		}
	}
}

// openStore opens the migrated SQLite database dsn, closed at the end of
// the test.
func openStore(t *testing.T, dsn string) *gormstore.DB {
	t.Helper()
	db, err := gormstore.Open(gormstore.DriverSQLite, dsn, gormstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// providerSecret is the client secret addIdentityProvider stores.
const providerSecret = "provider-client-secret-under-the-old-key"

// addIdentityProvider stores the identity provider acme in the SQLite
// database dsn, its client secret sealed under key.
func addIdentityProvider(t *testing.T, dsn string, key []byte) {
	t.Helper()
	box, err := secretbox.New(key)
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	p, err := domain.NewIdentityProvider(domain.IdentityProviderInput{Slug: str("acme"), DisplayName: str("Acme"),
		Kind: str("oidc"), Issuer: str("https://login.acme.example"), ClientID: str("userd"), ClientSecret: str(providerSecret)},
		time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := gormstore.NewIdentityProviderStore(openStore(t, dsn), box).CreateProvider(t.Context(), p); err != nil {
		t.Fatal(err)
	}
}

// boxOf is the secret box of the base64 key.
func boxOf(t *testing.T, key string) *secretbox.Box {
	t.Helper()
	keys, err := secretbox.ParseKeys(key)
	if err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.New(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// checkProviderSecretSealedUnder checks that acme's client secret opens
// under the base64 key sealed and not under old.
func checkProviderSecretSealedUnder(t *testing.T, dsn, sealed, old string) {
	t.Helper()
	db := openStore(t, dsn)
	for key, opens := range map[string]bool{sealed: true, old: false} {
		box := boxOf(t, key)
		p, err := gormstore.NewIdentityProviderStore(db, box).Provider(t.Context(), "acme")
		if opens && (err != nil || p.ClientSecret != providerSecret) {
			t.Errorf("the provider's secret under the new key: %q, %v", p.ClientSecret, err)
		}
		if !opens && err == nil {
			t.Errorf("the provider's secret still opens under the old key")
		}
	}
}
