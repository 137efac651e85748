package oidcflow

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// TestFlow_across_nodes: two nodes on one database (a PostgreSQL
// schema, then a MariaDB/MySQL database), behind one issuer (the first node's URL), with one secret key. A flow begun on
// one node finishes on the other: the browser signs in and sends the
// authorization request to the first, its cookie takes the request on at
// the second, which gives the code, exchanged there too, and refreshed
// on the first. Of ten
// exchanges of one code at once on both nodes, one at most wins. A replay of the
// code on the first ends the tokens of the first use on the second, and
// a refresh token revoked on one node ends its session's access token on
// the other within 1 s (contract-identity.md). Each database needs its
// variable, USERD_TEST_POSTGRES_DSN or USERD_TEST_MYSQL_DSN: skipped
// without it, failed when CI=true.
func TestFlow_across_nodes(t *testing.T) {
	t.Parallel()
	for _, db := range []struct {
		driver string
		open   func(t testing.TB, prefix string) string
	}{{"postgres", userdproc.PostgresSchema}, {"mysql", userdproc.MySQLDatabase}} {
		t.Run(db.driver, func(t *testing.T) {
			t.Parallel()
			flowAcrossNodes(t, db.driver, db.open(t, "userd_oidc_"))
		})
	}
}

func flowAcrossNodes(t *testing.T, driver, dsn string) {
	first, second := userdproc.FreeAddr(t), userdproc.FreeAddr(t)
	shared := map[string]string{
		"USERD_DB_DRIVER":  driver,
		"USERD_DB_DSN":     dsn,
		"USERD_SECRET_KEY": secretbox.EncodeKey(secretbox.NewKey()),
		"USERD_PUBLIC_URL": "http://" + first,
	}
	a := startProvider(t, shared, map[string]string{"USERD_HTTP_ADDR": first})
	b := startProvider(t, shared, map[string]string{"USERD_HTTP_ADDR": second})
	const email = "annie@example.com"
	a.register(t, "Annie Easley", email)
	app := a.newClient(t, "Centaur", map[string]any{"firstParty": true})
	const redirect = "http://127.0.0.1:9/cb"

	onA := a.signIn(t, email)
	pk := newPKCE()
	r := onA.send(t, http.MethodGet, a.authRequest(app, redirect, pk, map[string]string{"state": "across"}), nil)
	cont := r.Header.Get("Location")
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(cont, "/oauth2/authorize/continue?") {
		t.Fatalf("the authorization request on the first node: %d to %q, want 303 to the flow's page", r.Status, cont)
	}
	onB := &agent{p: b, sso: onA.sso}
	loc, r, err := onB.authorize(t, b.node.Base+cont)
	if err != nil {
		t.Fatalf("the flow's page on the second node: %v: %s", err, r)
	}
	q := query(t, loc)
	if q.Get("code") == "" || q.Get("state") != "across" || q.Get("iss") != a.issuer {
		t.Fatalf("the second node sent the browser to %s, want a code, the state and iss %s", loc, a.issuer)
	}
	tok := b.exchange(t, app, q.Get("code"), redirect, pk.verifier)
	a.wantUserInfo(t, "the second node's token on the first", tok.AccessToken)

	wantOAuthError(t, "the code again, on the first node", a.token(t, app, url.Values{"grant_type": {"authorization_code"},
		"code": {q.Get("code")}, "redirect_uri": {redirect}, "code_verifier": {pk.verifier}}), http.StatusBadRequest, "invalid_grant")
	kit.Eventually(t, time.Second, "the first use's access token refused on the second node after the replay", func() bool {
		return b.userinfo(t, tok.AccessToken).Status == http.StatusUnauthorized
	})

	// One code exchanged ten times at once on both nodes: one at most
	// wins, and its tokens end on both.
	pk = newPKCE()
	code := onB.code(t, b.authRequest(app, redirect, pk, nil))
	won := raceExchange(t, []provider{a, b}, app, code, redirect, pk.verifier)
	if len(won) > 1 {
		t.Errorf("%d of 10 concurrent exchanges of one code on two nodes got tokens, want 1 at most", len(won))
	}
	for _, w := range won {
		for _, node := range []provider{a, b} {
			kit.Eventually(t, time.Second, "the raced code's winning access token refused on every node", func() bool {
				return node.userinfo(t, w.AccessToken).Status == http.StatusUnauthorized
			})
		}
	}

	again := b.signedInTokens(t, onB, app, redirect, nil)
	b.wantUserInfo(t, "a new grant", again.AccessToken)
	// The refresh token the second node gave is taken by the first.
	if r := a.refresh(t, app, again.RefreshToken); r.Status != http.StatusOK {
		t.Fatalf("refresh on the first node of the second node's grant: %s", r)
	}
	if r := a.revoke(t, app, again.RefreshToken); r.Status != http.StatusOK {
		t.Fatalf("revoke on the first node: %s", r)
	}
	kit.Eventually(t, time.Second, "the access token of a refresh token revoked on the first node, refused on the second", func() bool {
		return b.userinfo(t, again.AccessToken).Status == http.StatusUnauthorized
	})
	wantOAuthError(t, "the revoked refresh token on the second node", b.refresh(t, app, again.RefreshToken), http.StatusBadRequest, "invalid_grant")
}
