package attack

import (
	"strconv"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver that makes the test schemas

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// from makes the request come from client through the trusted proxy
// 127.0.0.1 (USERD_TRUSTED_PROXIES=127.0.0.1/32): its X-Forwarded-For, as
// the name, value pair of kit.Send's headers.
func from(client string) []string { return []string{"X-Forwarded-For", client} }

// passwordChecks reads the number of passwords the node at base compared
// (logins, current passwords, the dummy check of unknown emails); ok is
// false when it does not count them.
func passwordChecks(t testing.TB, base string) (v float64, ok bool) {
	t.Helper()
	return kit.Metric(t, base, "userd_password_hashing_total", "op", "verify", "result", "done")
}

// checksCounter reads the password checks of the nodes, summed; ok is
// false when a node does not count them.
func checksCounter(t testing.TB, nodes ...string) (sum float64, ok bool) {
	t.Helper()
	for _, base := range nodes {
		v, found := passwordChecks(t, base)
		if !found {
			return 0, false
		}
		sum += v
	}
	return sum, true
}

// register creates a customer through open registration, with headers
// (nil, or from(client)).
func register(t testing.TB, base, email string, headers []string) {
	t.Helper()
	kit.Register(t, base, "Victim", email, userPassword, headers...)
}

// signUp registers a customer and signs it in, both with headers (nil,
// or from(client)), and returns the tokens of its password sign-in.
func signUp(t testing.TB, base, email string, headers []string) kit.Tokens {
	t.Helper()
	register(t, base, email, headers)
	return kit.Login(t, base, email, userPassword, headers...)
}

// tally counts replies by status and problem code.
func tally(replies []kit.Reply) map[string]int {
	m := map[string]int{}
	for _, r := range replies {
		m[strconv.Itoa(r.Status)+" "+r.Code()]++
	}
	return m
}

// postgresSchema is a fresh schema of USERD_TEST_POSTGRES_DSN for the
// nodes of one test.
func postgresSchema(t *testing.T) string { return userdproc.PostgresSchema(t, "userd_attack_") }

// postgresEnv is baseEnv for a node on the PostgreSQL database dsn: the
// one place where the attack suite configures PostgreSQL nodes, so that a
// setting every such node needs is added once.
func postgresEnv(dir, dsn string) map[string]string {
	env := baseEnv(dir)
	env["USERD_DB_DRIVER"] = "postgres"
	env["USERD_DB_DSN"] = dsn
	// Every node of one deployment shares the secret key; one key for the
	// suite is enough (each test has a schema of its own).
	env["USERD_SECRET_KEY"] = suiteSecretKey
	return env
}

// suiteSecretKey is the secret key of the suite's PostgreSQL nodes.
var suiteSecretKey = secretbox.EncodeKey(secretbox.NewKey())
