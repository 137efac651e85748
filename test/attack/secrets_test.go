package attack

// Finding "whoever reads the database file can mint an admin token": the
// attacker has a copy of the database (the SQLite files, or the rows of a
// PostgreSQL table) and nothing else. Whatever key material is stored
// there, it must sign no token the service accepts.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx": the attacker's view of the PostgreSQL rows
	_ "github.com/mattn/go-sqlite3"    // database/sql driver "sqlite3": the attacker's view of the SQLite file

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// clearKeysCommit is the last commit of main that stored the keys in
// clear: the upgrade test builds it to make a database as the field has.
const clearKeysCommit = "5187d69"

// storedKey is a row of the keys table as the attacker reads it.
type storedKey struct {
	id, purpose string
	secret      []byte
}

// trueKey is a key's secret as the service uses it, read honestly: the
// stored value opened with the secret key.
type trueKey struct {
	id, purpose string
	secret      []byte
}

// useNode does what a deployment does with its keys: the admin signs in,
// the operator rotates the signing key with the CLI, the session refreshes.
// It returns the tokens of the refresh.
func useNode(t *testing.T, n *userdproc.Node) kit.Tokens {
	t.Helper()
	admin := kit.Login(t, n.Base, adminEmail, adminPassword)
	if code, out, errOut := n.Run("", "keys", "rotate"); code != 0 {
		t.Fatalf("keys rotate: code %d: %s%s", code, out, errOut)
	}
	r := kit.Send(t, http.MethodPost, n.Base+"/auth/refresh-token", map[string]string{"refreshToken": admin.RefreshToken}, "")
	if r.Status != http.StatusOK {
		t.Fatalf("refresh: %d %s", r.Status, r.Body)
	}
	var tok kit.Tokens
	if err := json.Unmarshal(r.Body, &tok); err != nil {
		t.Fatal(err)
	}
	return tok
}

// readFiles reads the files of dir that exist among names.
func readFiles(t *testing.T, dir string, names ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			out[name] = b
		} else if !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return out
}

// checkPrivate checks that each named file of dir exists with mode 0600.
func checkPrivate(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if mode := info.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %#o, want 0600: other users of the machine can read it", name, mode)
		}
	}
}

// readKeyRows reads the keys table through database/sql, as anyone with
// the file or a database account could; it wants at least least rows.
func readKeyRows(t *testing.T, driver, dsn string, least int) []storedKey {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }() // read only
	rows, err := db.QueryContext(t.Context(), "SELECT id, purpose, secret FROM keys ORDER BY id")
	if err != nil {
		t.Fatalf("read the keys table: %v", err)
	}
	defer func() { _ = rows.Close() }() // rows.Err is checked below
	var out []storedKey
	for rows.Next() {
		var k storedKey
		if err := rows.Scan(&k.id, &k.purpose, &k.secret); err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < least {
		t.Fatalf("%d keys stored, want at least %d", len(out), least)
	}
	return out
}

// checkSealedColumn checks that every row says it is sealed.
func checkSealedColumn(t *testing.T, driver, dsn string) {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }() // read only
	var inClear int
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM keys WHERE NOT sealed").Scan(&inClear); err != nil {
		t.Errorf("count the clear keys: %v", err)
	} else if inClear != 0 {
		t.Errorf("%d keys are stored in clear", inClear)
	}
}

// openKeys opens the stored keys with the secret keys, the honest route to
// the key material the service uses.
func openKeys(t *testing.T, rows []storedKey, secretKeys [][]byte) []trueKey {
	t.Helper()
	box, err := secretbox.New(secretKeys...)
	if err != nil {
		t.Fatal(err)
	}
	var out []trueKey
	for _, r := range rows {
		secret, err := box.Open(r.secret, []byte(r.id))
		if err != nil {
			t.Errorf("key %s does not open with the secret key: %v", r.id, err)
			continue
		}
		out = append(out, trueKey{id: r.id, purpose: r.purpose, secret: secret})
	}
	return out
}

// material is what must not be found in clear: the stored secret, and the
// private scalar or seed inside a PKCS#8 key.
func material(k trueKey) [][]byte {
	out := [][]byte{k.secret}
	if priv, err := x509.ParsePKCS8PrivateKey(k.secret); err == nil {
		switch p := priv.(type) {
		case ed25519.PrivateKey:
			out = append(out, p.Seed())
		case *ecdsa.PrivateKey:
			if raw, err := p.Bytes(); err == nil {
				out = append(out, raw)
			}
		}
	}
	return out
}

// checkNoKeyBytes checks that no 16 bytes in a row of any key's material
// appear in any of the blobs.
func checkNoKeyBytes(t *testing.T, blobs map[string][]byte, keys []trueKey) {
	t.Helper()
	for _, k := range keys {
		for _, m := range material(k) {
			if name, at, found := findWindow(blobs, m); found {
				t.Errorf("%s holds bytes %d to %d of key %s (%s) in clear", name, at, at+16, k.id, k.purpose)
			}
		}
	}
}

// findWindow finds the first 16 bytes in a row of m that one of the blobs
// holds.
func findWindow(blobs map[string][]byte, m []byte) (name string, at int, found bool) {
	for i := 0; i+16 <= len(m); i++ {
		for name, b := range blobs {
			if bytes.Contains(b, m[i:i+16]) {
				return name, i, true
			}
		}
	}
	return "", 0, false
}

// forgery is a token signed with something found in the database.
type forgery struct {
	how, token string
}

// template is an access token the service issued, taken apart, for
// forgeries that look like it in every respect but their signature.
type template struct {
	header, claims map[string]any
}

func parseTemplate(t *testing.T, token string) template {
	t.Helper()
	var tp template
	kit.DecodePart(t, token, 0, &tp.header)
	kit.DecodePart(t, token, 1, &tp.claims)
	return tp
}

// forge signs a copy of the template's claims, fresh and valid for ten
// minutes (within any access TTL), with key under kid.
func (tp template) forge(t *testing.T, method jwt.SigningMethod, kid string, key any) string {
	t.Helper()
	now := time.Now()
	claims := jwt.MapClaims{}
	for k, v := range tp.claims {
		claims[k] = v
	}
	claims["iat"], claims["nbf"], claims["exp"] = now.Unix(), now.Unix(), now.Add(10*time.Minute).Unix()
	claims["jti"] = uuid.NewString()
	tok := jwt.NewWithClaims(method, claims)
	for k, v := range tp.header {
		tok.Header[k] = v
	}
	tok.Header["alg"], tok.Header["kid"] = method.Alg(), kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return s
}

// forgeries tries every stored value as an Ed25519 or P-256 private key
// (PKCS#8, or a bare seed or scalar at its end) and as an HMAC key, under
// every stored kid and the template's.
func forgeries(t *testing.T, tp template, rows []storedKey) []forgery {
	t.Helper()
	kids := []string{tp.header["kid"].(string)}
	for _, r := range rows {
		if r.purpose == "access-token" {
			kids = append(kids, r.id)
		}
	}
	var out []forgery
	for _, r := range rows {
		type signer struct {
			method jwt.SigningMethod
			key    any
			what   string
		}
		signers := []signer{{jwt.SigningMethodHS256, r.secret, "HMAC key"}}
		if priv, err := x509.ParsePKCS8PrivateKey(r.secret); err == nil {
			switch p := priv.(type) {
			case ed25519.PrivateKey:
				signers = append(signers, signer{jwt.SigningMethodEdDSA, p, "PKCS#8 Ed25519 key"})
			case *ecdsa.PrivateKey:
				signers = append(signers, signer{jwt.SigningMethodES256, p, "PKCS#8 P-256 key"})
			}
		}
		if len(r.secret) >= 32 {
			tail := r.secret[len(r.secret)-32:]
			signers = append(signers, signer{jwt.SigningMethodEdDSA, ed25519.NewKeyFromSeed(tail), "Ed25519 seed (its last 32 bytes)"})
			// Not every 32 bytes are a P-256 scalar (below the order).
			if p, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), tail); err == nil {
				signers = append(signers, signer{jwt.SigningMethodES256, p, "P-256 scalar (its last 32 bytes)"})
			}
		}
		for _, s := range signers {
			for _, kid := range kids {
				out = append(out, forgery{
					how:   fmt.Sprintf("row %s as %s, kid %s", r.id, s.what, kid),
					token: tp.forge(t, s.method, kid, s.key),
				})
			}
		}
	}
	return out
}

// checkForgeriesRefused sends every forgery to the node as the admin's
// token: each must be 401. A token signed the same way with the true key
// of the template's kid must pass, which shows the forgeries would work
// with the right key.
func checkForgeriesRefused(t *testing.T, base string, tp template, rows []storedKey, keys []trueKey) {
	t.Helper()
	fs := forgeries(t, tp, rows)
	accepted := 0
	for _, f := range fs {
		if r := kit.Send(t, http.MethodGet, base+"/api/users", nil, f.token); r.Status != http.StatusUnauthorized {
			accepted++
			t.Errorf("forged admin token (%s): GET /api/users = %d, want 401", f.how, r.Status)
		}
	}
	t.Logf("%d forged tokens tried, %d accepted", len(fs), accepted)

	kid := tp.header["kid"].(string)
	for _, k := range keys {
		if k.id != kid {
			continue
		}
		priv, err := x509.ParsePKCS8PrivateKey(k.secret)
		if err != nil {
			t.Fatalf("true key %s: %v", kid, err)
		}
		method := map[bool]jwt.SigningMethod{true: jwt.SigningMethodEdDSA, false: jwt.SigningMethodES256}[isEd25519(priv)]
		if r := kit.Send(t, http.MethodGet, base+"/api/users", nil, tp.forge(t, method, kid, priv)); r.Status != http.StatusOK {
			t.Errorf("a token signed the same way with the true key %s: %d %s, want 200 (the forgeries prove nothing)", kid, r.Status, r.Body)
		}
		return
	}
	t.Errorf("no true key for the template's kid %s", kid)
}

func isEd25519(k any) bool { _, ok := k.(ed25519.PrivateKey); return ok }

// A copy of a SQLite deployment's database, taken while it runs and after
// it stopped, holds no key in clear, and no token signed with anything in
// it is accepted; the files are readable by their owner only.
func TestSecrets_sqlite_database_copy_mints_no_token(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := userdproc.New(t, binary, baseEnv(dir))
	n.Start()
	tok := useNode(t, n)
	checkPrivate(t, dir, "userd.db", "userd.db-wal", "userd.db-shm", "userd.key")
	running := readFiles(t, dir, "userd.db", "userd.db-wal", "userd.db-shm")
	n.Stop()
	stopped := readFiles(t, dir, "userd.db", "userd.db-wal", "userd.db-shm")

	// The attacker's copy: the database files, not the key file.
	loot := t.TempDir()
	blobs := map[string][]byte{}
	for name, b := range running {
		blobs["running "+name] = b
	}
	for name, b := range stopped {
		blobs["stopped "+name] = b
		if err := os.WriteFile(filepath.Join(loot, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Two signing keys (one rotated) and the refresh key.
	rows := readKeyRows(t, "sqlite3", filepath.Join(loot, "userd.db"), 3)
	checkSealedColumn(t, "sqlite3", filepath.Join(loot, "userd.db"))

	var keys []trueKey
	if kf, err := secretbox.ReadKeyFile(filepath.Join(dir, "userd.key")); err != nil {
		t.Errorf("the key file beside the database: %v", err)
	} else {
		keys = openKeys(t, rows, kf.Keys)
	}
	checkNoKeyBytes(t, blobs, keys)

	n.Start()
	checkForgeriesRefused(t, n.Base, parseTemplate(t, tok.AccessToken), rows, keys)
}

// On PostgreSQL, userd refuses to start without a key and says what to
// set; with one, the rows of the keys table hold no key in clear and sign
// no token.
func TestSecrets_postgres_needs_a_key_and_rows_mint_no_token(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	env := baseEnv(t.TempDir())
	env["USERD_DB_DRIVER"], env["USERD_DB_DSN"] = "postgres", dsn

	err := userdproc.New(t, binary, env).StartErr()
	if err == nil {
		t.Error("userd started on PostgreSQL without a secret key")
	} else {
		for _, want := range []string{"USERD_SECRET_KEY", "USERD_SECRET_KEY_FILE", "openssl rand -base64 32"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the refusal does not mention %q:\n%v", want, err)
			}
		}
	}

	key := secretbox.NewKey()
	env["USERD_SECRET_KEY"] = secretbox.EncodeKey(key)
	n := userdproc.New(t, binary, env)
	n.Start()
	tok := useNode(t, n)
	n.Stop()

	rows := readKeyRows(t, "pgx", dsn, 3)
	checkSealedColumn(t, "pgx", dsn)
	keys := openKeys(t, rows, [][]byte{key})
	blobs := map[string][]byte{}
	for _, r := range rows {
		blobs["row "+r.id] = r.secret
	}
	checkNoKeyBytes(t, blobs, keys)

	n.Start()
	checkForgeriesRefused(t, n.Base, parseTemplate(t, tok.AccessToken), rows, keys)
}

// A database made by the version that stored keys in clear, started with a
// secret key: its keys are sealed, and nothing else changes for the
// running deployment: the access-token key that signed before still
// verifies and signs, and a refresh token issued before rotates to the
// successor the unchanged HMAC key derives.
func TestSecrets_upgrade_seals_clear_keys_and_keeps_tokens(t *testing.T) {
	t.Parallel()
	old := buildCommit(t, clearKeysCommit)
	dir := t.TempDir()
	env := baseEnv(dir)
	before := userdproc.New(t, old, env)
	before.Start()
	admin := kit.Login(t, before.Base, adminEmail, adminPassword)
	before.Stop()
	// The signing key and the refresh key.
	inClear := readKeyRows(t, "sqlite3", filepath.Join(dir, "userd.db"), 2)
	var hmacKey []byte
	for _, r := range inClear {
		if r.purpose == "refresh-hmac" {
			hmacKey = r.secret
		}
	}
	if len(hmacKey) != 32 {
		t.Fatalf("the old version's refresh key is %d bytes, want 32 in clear", len(hmacKey))
	}

	issued := parseTemplate(t, admin.AccessToken)
	kid, _ := issued.header["kid"].(string)
	var signingKey any
	for _, r := range inClear {
		if r.id == kid {
			k, err := x509.ParsePKCS8PrivateKey(r.secret)
			if err != nil {
				t.Fatalf("the old version's signing key %s: %v", kid, err)
			}
			signingKey = k
		}
	}
	if signingKey == nil {
		t.Fatalf("no stored key for the kid %q of the token issued before", kid)
	}

	key := secretbox.NewKey()
	env["USERD_SECRET_KEY"] = secretbox.EncodeKey(key)
	after := userdproc.New(t, binary, env)
	after.Start()
	// The token issued before, as the key that signed it signs today: the
	// same claims (fresh times) and kid. Not the token itself: 5187d69
	// wrote typ JWT, which another finding of issue 12 refuses on purpose,
	// whatever the key; what sealing must keep is the key.
	issued.header["typ"] = "at+jwt"
	if r := kit.Send(t, http.MethodGet, after.Base+"/api/users/me", nil, issued.forge(t, jwt.SigningMethodEdDSA, kid, signingKey)); r.Status != http.StatusOK {
		t.Errorf("a token signed by the key of before the upgrade: %d %s, want 200", r.Status, r.Body)
	}
	r := kit.Send(t, http.MethodPost, after.Base+"/auth/refresh-token", map[string]string{"refreshToken": admin.RefreshToken}, "")
	if r.Status != http.StatusOK {
		t.Fatalf("a refresh token issued before the upgrade: %d %s, want 200", r.Status, r.Body)
	}
	var refreshed kit.Tokens
	if err := json.Unmarshal(r.Body, &refreshed); err != nil {
		t.Fatal(err)
	}
	if want := successor(hmacKey, admin.RefreshToken); refreshed.RefreshToken != want {
		t.Errorf("the refresh token rotated to %s, want %s, the successor under the unchanged HMAC key", refreshed.RefreshToken, want)
	}
	if got := parseTemplate(t, refreshed.AccessToken).header["kid"]; got != kid {
		t.Errorf("the access token of the refresh is signed by %v, want %s, the key that signed before the upgrade", got, kid)
	}
	after.Stop()

	checkSealedColumn(t, "sqlite3", filepath.Join(dir, "userd.db"))
	sealed := readKeyRows(t, "sqlite3", filepath.Join(dir, "userd.db"), 2)
	// The new version also made the OpenID provider's RS256 key at its
	// first start, sealed like the others (openKeys opened it); the keys
	// of before keep their bytes.
	var opened, provider []trueKey
	for _, k := range openKeys(t, sealed, [][]byte{key}) {
		if k.purpose == "oidc-signing" {
			provider = append(provider, k)
		} else {
			opened = append(opened, k)
		}
	}
	if len(opened) != len(inClear) || len(provider) != 1 {
		t.Fatalf("%d keys and %d of the provider after the upgrade, want the %d before and 1", len(opened), len(provider), len(inClear))
	}
	for i := range inClear {
		if opened[i].id != inClear[i].id || !bytes.Equal(opened[i].secret, inClear[i].secret) {
			t.Errorf("key %s changed its bytes in the upgrade", inClear[i].id)
		}
	}
	blobs := readFiles(t, dir, "userd.db", "userd.db-wal")
	clearKeys := provider
	for _, r := range inClear {
		clearKeys = append(clearKeys, trueKey(r))
	}
	checkNoKeyBytes(t, blobs, clearKeys)
}

// successor is the refresh token that replaces token under the HMAC key,
// as the token adapter derives it: HMAC-SHA256, 16 bytes, a UUIDv4.
func successor(key []byte, token string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(token))
	var b [16]byte
	copy(b[:], mac.Sum(nil))
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return uuid.UUID(b).String()
}

// buildCommit builds cmd/userd at commit, from the repository this test
// runs in, and returns the binary. Without git or the commit (a shallow
// clone) the test is skipped, except in CI.
func buildCommit(t *testing.T, commit string) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		kit.Missing(t, "no git repository to build %s from: %v", commit, err)
	}
	root := strings.TrimSpace(string(out))
	if err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run(); err != nil { //nolint:gosec // G204: git with this test's own constant commit
		kit.Missing(t, "commit %s is not in the repository (a shallow clone?): %v", commit, err)
	}
	src := t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit) //nolint:gosec // G204: git with this test's own constant commit
	untar := exec.Command("tar", "-x", "-C", src)                                 //nolint:gosec // G204: tar into the test's own directory
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v", commit, err)
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("untar %s: %v", commit, err)
	}
	bin := filepath.Join(t.TempDir(), "userd-"+commit)
	build := exec.Command("go", "build", "-o", bin, "./cmd/userd") //nolint:gosec // G204: a fixed go build into the test's directory
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build userd at %s: %v\n%s", commit, err, out)
	}
	return bin
}
