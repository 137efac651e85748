package attack

import (
	"crypto/ed25519"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	_ "github.com/mattn/go-sqlite3" // the SQLite file the node left behind

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// Findings "Low" of issue 12 about tokens: the typ header, the lifetime of
// an access token, refresh reuse after expiry, and key rotation.

// stolenSigningKey plays the attacker who has read the database and its
// key file (userd.key beside it): it stops n, reads the newest EdDSA
// access-token key from the SQLite file at db, opens it with the key file,
// starts n again and returns the key with its kid. (What the database
// alone gives an attacker is secrets_test.go's business.)
func stolenSigningKey(t *testing.T, n *userdproc.Node, db string) (string, ed25519.PrivateKey) {
	t.Helper()
	n.Stop()
	defer n.Start()
	conn, err := sql.Open("sqlite3", "file:"+db+"?mode=ro&_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }() // read only
	var kid string
	var secret []byte
	err = conn.QueryRow(`SELECT id, secret FROM keys WHERE purpose = 'access-token' AND algorithm = 'EdDSA'
		ORDER BY created_at DESC, id DESC LIMIT 1`).Scan(&kid, &secret)
	if err != nil {
		t.Fatal(err)
	}
	keyFile, err := secretbox.ReadKeyFile(filepath.Join(filepath.Dir(db), "userd.key"))
	if err != nil {
		t.Fatal(err)
	}
	box, err := secretbox.New(keyFile.Keys...)
	if err != nil {
		t.Fatal(err)
	}
	if secret, err = box.Open(secret, []byte(kid)); err != nil {
		t.Fatalf("open the stored key with the key file: %v", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(secret)
	if err != nil {
		t.Fatalf("the stored key is not PKCS#8: %v", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		t.Fatalf("the stored key is a %T", k)
	}
	return kid, priv
}

// tokenPart decodes part n (0 header, 1 claims) of a JWT.
func tokenPart(t *testing.T, token string, n int) map[string]any {
	t.Helper()
	m := map[string]any{}
	kit.DecodePart(t, token, n, &m)
	return m
}

// forge signs claims with key under kid with the JOSE header typ (nil: no
// typ at all).
func forge(t *testing.T, key ed25519.PrivateKey, kid string, typ any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	tok.Header["kid"] = kid
	if typ == nil {
		delete(tok.Header, "typ")
	} else {
		tok.Header["typ"] = typ
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// With the signing key read from the database, the attacker signs the
// claims of a genuine admin token anew. Such a token passes (the key is
// valid: that is the "High" finding), but one whose typ is not at+jwt, or
// that lives for years, does not: userd never issues either.
func TestAttack_forged_token_with_another_typ_or_a_long_life_is_refused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := userdproc.New(t, binary, baseEnv(dir))
	n.Start()
	admin := kit.Login(t, n.Base, adminEmail, adminPassword)
	kid, key := stolenSigningKey(t, n, dir+"/userd.db")
	if got := tokenPart(t, admin.AccessToken, 0)["kid"]; got != kid {
		t.Fatalf("the stolen key %s is not the one that signs (%v)", kid, got)
	}
	genuine := jwt.MapClaims(tokenPart(t, admin.AccessToken, 1))
	me := func(token string) int { return kit.Send(t, http.MethodGet, n.Base+"/api/users/me", nil, token).Status }

	if got := me(forge(t, key, kid, "at+jwt", genuine)); got != http.StatusOK {
		t.Fatalf("a faithful re-signing of a genuine token: %d, want 200 (the forgery is broken)", got)
	}
	for _, typ := range []any{"JWT", nil, "id+jwt", "at+jwt+x"} {
		if got := me(forge(t, key, kid, typ, genuine)); got != http.StatusUnauthorized {
			t.Errorf("typ %v: %d, want 401", typ, got)
		}
	}

	now := time.Now()
	for _, life := range []time.Duration{time.Hour, 10 * 365 * 24 * time.Hour} {
		long := jwt.MapClaims{}
		for k, v := range genuine {
			long[k] = v
		}
		long["iat"], long["nbf"], long["exp"] = now.Unix(), now.Unix(), now.Add(life).Unix()
		if got := me(forge(t, key, kid, "at+jwt", long)); got != http.StatusUnauthorized {
			t.Errorf("a token living %s: %d, want 401", life, got)
		}
	}
}

// A refresh token that was rotated and has since expired, presented again,
// is reuse: 401, and its family (the successor) is revoked. USERD_REFRESH_TTL
// has a floor of 1 minute, so this test waits about 62 s.
func TestAttack_expired_rotated_refresh_token_revokes_its_family(t *testing.T) {
	t.Parallel()
	env := baseEnv(t.TempDir())
	env["USERD_REFRESH_TTL"] = "1m"
	n := userdproc.New(t, binary, env)
	n.Start()
	first := kit.Login(t, n.Base, adminEmail, adminPassword)
	loggedIn := time.Now()
	refresh := func(token string) kit.Reply {
		return kit.Send(t, http.MethodPost, n.Base+"/auth/refresh-token", map[string]string{"refreshToken": token}, "")
	}

	// Rotate once, 10 s in: the successor lives until 70 s, first until 60 s.
	time.Sleep(10 * time.Second)
	r := refresh(first.RefreshToken)
	if r.Status != http.StatusOK {
		t.Fatalf("refresh: %d %s", r.Status, r.Body)
	}
	var next kit.Tokens
	if err := json.Unmarshal(r.Body, &next); err != nil {
		t.Fatal(err)
	}

	time.Sleep(time.Until(loggedIn.Add(62 * time.Second)))
	if r := refresh(first.RefreshToken); r.Status != http.StatusUnauthorized || r.Code() != "invalid_refresh_token" {
		t.Fatalf("the expired rotated token: %d %s, want 401 invalid_refresh_token", r.Status, r.Body)
	}
	if r := refresh(next.RefreshToken); r.Status != http.StatusUnauthorized {
		t.Fatalf("its live successor after the reuse: %d %s, want 401 (family revoked)", r.Status, r.Body)
	}
	if time.Since(loggedIn) > 69*time.Second {
		t.Fatal("too slow: the successor may have expired on its own; the test proves nothing")
	}
	// The audit trail tells the operator what happened, read from a new
	// session: the revoked one's access tokens are refused too.
	if r := kit.Send(t, http.MethodGet, n.Base+"/api/users/me", nil, first.AccessToken); r.Status != http.StatusUnauthorized {
		t.Errorf("an access token of the revoked session: %d, want 401", r.Status)
	}
	again := kit.Login(t, n.Base, adminEmail, adminPassword)
	r = kit.Send(t, http.MethodGet, n.Base+"/api/audit?limit=100", nil, again.AccessToken)
	var events []struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(r.Body, &events); err != nil || r.Status != http.StatusOK {
		t.Fatalf("audit: %d %s", r.Status, r.Body)
	}
	var seen []string
	for _, e := range events {
		seen = append(seen, e.Type)
	}
	if !slices.Contains(seen, "refresh.reuse_detected") || !slices.Contains(seen, "session.revoked") {
		t.Errorf("audit trail %v lacks refresh.reuse_detected and session.revoked", seen)
	}
}

// `userd keys rotate` on a running node: the node publishes the new kid at
// its next reload (every 30 s) but keeps signing with the old one, so that
// no verifier meets a kid missing from the JWK set it cached (max-age 300).
// `keys rotate --now` makes the new key sign at once (here after a
// restart, instead of waiting for a reload).
func TestAttack_rotated_key_is_published_before_it_signs(t *testing.T) {
	t.Parallel()
	n := userdproc.New(t, binary, baseEnv(t.TempDir()))
	n.Start()
	kidOf := func(token string) any { return tokenPart(t, token, 0)["kid"] }
	oldKID := kidOf(kit.Login(t, n.Base, adminEmail, adminPassword).AccessToken)
	jwks := func() []any {
		r := kit.Send(t, http.MethodGet, n.Base+"/.well-known/jwks.json", nil, "")
		if cc := r.Header.Get("Cache-Control"); cc != "public, max-age=300" {
			t.Errorf("JWKS Cache-Control = %q", cc)
		}
		var set struct {
			Keys []struct {
				Kid string `json:"kid"`
			} `json:"keys"`
		}
		if err := json.Unmarshal(r.Body, &set); err != nil {
			t.Fatal(err)
		}
		var kids []any
		for _, k := range set.Keys {
			kids = append(kids, k.Kid)
		}
		return kids
	}
	rotate := func(args ...string) string {
		code, out, errOut := n.Run("", append([]string{"keys", "rotate"}, args...)...)
		f := strings.Fields(out)
		if code != 0 || len(f) < 4 || f[0] != "created" {
			t.Fatalf("keys rotate %v: %d %q %q", args, code, out, errOut)
		}
		return f[3]
	}

	newKID := rotate()
	deadline := time.Now().Add(40 * time.Second) // one reload, with room
	for !slices.Contains(jwks(), any(newKID)) {
		if time.Now().After(deadline) {
			t.Fatalf("the new key %s is not published after 40 s: %v", newKID, jwks())
		}
		time.Sleep(250 * time.Millisecond)
	}
	if got := kidOf(kit.Login(t, n.Base, adminEmail, adminPassword).AccessToken); got != oldKID {
		t.Errorf("right after the rotation a token is signed by %v, want the old key %v: verifiers holding a cached JWK set cannot find the new one", got, oldKID)
	}

	nowKID := rotate("--now")
	n.Stop()
	n.Start()
	if got := kidOf(kit.Login(t, n.Base, adminEmail, adminPassword).AccessToken); got != nowKID {
		t.Errorf("after keys rotate --now a token is signed by %v, want %s", got, nowKID)
	}
	if got := jwks(); !slices.Contains(got, oldKID) || !slices.Contains(got, any(newKID)) || !slices.Contains(got, any(nowKID)) {
		t.Errorf("JWKS %v, want the three keys", got)
	}
}

// An access token of a session that ended before a restart is still
// refused after it: the node reads the sessions ended lately at start
// (on SQLite, the only node, no message would tell it).
func TestAttack_access_token_of_an_ended_session_stays_refused_after_a_restart(t *testing.T) {
	t.Parallel()
	n := userdproc.New(t, binary, baseEnv(t.TempDir()))
	n.Start()
	s := kit.Login(t, n.Base, adminEmail, adminPassword)
	if r := kit.Send(t, http.MethodPost, n.Base+"/auth/logout", map[string]string{"refreshToken": s.RefreshToken}, ""); r.Status != http.StatusNoContent {
		t.Fatalf("logout: %d %s", r.Status, r.Body)
	}
	if r := kit.Send(t, http.MethodGet, n.Base+"/api/users/me", nil, s.AccessToken); r.Status != http.StatusUnauthorized {
		t.Fatalf("the logged-out session's access token: %d, want 401", r.Status)
	}
	n.Stop()
	n.Start()
	if r := kit.Send(t, http.MethodGet, n.Base+"/api/users/me", nil, s.AccessToken); r.Status != http.StatusUnauthorized {
		t.Errorf("after a restart, the logged-out session's access token: %d, want 401", r.Status)
	}
	again := kit.Login(t, n.Base, adminEmail, adminPassword)
	if r := kit.Send(t, http.MethodGet, n.Base+"/api/users/me", nil, again.AccessToken); r.Status != http.StatusOK {
		t.Errorf("a new session after the restart: %d, want 200", r.Status)
	}
}
