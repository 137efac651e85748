package idpflow

import (
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/test/upstream"
	"github.com/userd/userd/test/userdproc"
)

// TestFlow_across_nodes: two nodes on one database (a PostgreSQL
// schema, then a MariaDB/MySQL database) behind one public URL (the
// first node's), with one secret key. A flow begun on the first node
// finishes on the second, as a load balancer may send the callback: the
// flow travels in the browser's cookie, so the second signs the person
// in, and the first serves the session then. Each database needs its
// variable, USERD_TEST_POSTGRES_DSN or USERD_TEST_MYSQL_DSN: skipped
// without it, failed when CI=true.
func TestFlow_across_nodes(t *testing.T) {
	t.Parallel()
	m := upstream.StartMock(t)
	for _, db := range []struct {
		driver string
		open   func(t testing.TB, prefix string) string
	}{{"postgres", userdproc.PostgresSchema}, {"mysql", userdproc.MySQLDatabase}} {
		t.Run(db.driver, func(t *testing.T) {
			t.Parallel()
			flowAcrossNodes(t, m, db.driver, db.open(t, "userd_idp_"))
		})
	}
}

func flowAcrossNodes(t *testing.T, m *upstream.Mock, driver, dsn string) {
	first, second := userdproc.FreeAddr(t), userdproc.FreeAddr(t)
	shared := map[string]string{
		"USERD_DB_DRIVER":  driver,
		"USERD_DB_DSN":     dsn,
		"USERD_SECRET_KEY": secretbox.EncodeKey(secretbox.NewKey()),
		"USERD_PUBLIC_URL": "http://" + first,
	}
	a := startUserd(t, shared, map[string]string{"USERD_HTTP_ADDR": first})
	b := startUserd(t, shared, map[string]string{"USERD_HTTP_ADDR": second})
	const slug = "mock"
	a.addProvider(t, slug, "Mock", m.Issuer, mockClientID, nil)
	person := upstream.Claims{Subject: "across-" + driver, Email: "mary-" + driver + "@example.com", EmailVerified: true, Name: "Mary Jackson"}

	ag := newAgent(t)
	auth := ag.start(a, slug, "/account/")
	m.Expect(t, auth.Query().Get("state"), upstream.OK, person)
	back := ag.authorize(auth)
	if !strings.HasPrefix(back.String(), a.callback(slug)) {
		t.Fatalf("the provider sent the browser to %s, want the callback at the public URL %s", back, a.callback(slug))
	}
	// The balancer sends the callback to the second node: the browser's
	// cookies of the public URL go with it.
	ag.jar[second] = maps.Clone(ag.jar[first])
	r := ag.get(b.node.Base + back.RequestURI())
	if r.Status != http.StatusOK || sameSiteStep(r) != "/account/" {
		t.Fatalf("the callback on the second node: %d going on to %q, want 200 going on to /account/:\n%.600s", r.Status, sameSiteStep(r), r.Body)
	}
	// And the page after it to the first.
	ag.jar[first] = maps.Clone(ag.jar[second])
	ag.wantSignedIn(a, r, "/account/", person.Email)
	if got := a.userByEmail(t, person.Email); !got.EmailVerified {
		t.Errorf("the account made on the second node: %+v, want its email verified", got)
	}
	if in := b.events(t, "idp.sign_in", slug); len(in) != 1 {
		t.Errorf("idp.sign_in of the flow across nodes: %+v, want one", in)
	}
}
