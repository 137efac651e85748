package attack

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver that makes the test schemas
	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/test/userdproc"
)

// sendWith is send with extra request headers (X-Forwarded-For through a
// trusted proxy, X-Request-Id).
func sendWith(t testing.TB, method, url string, body any, token string, headers map[string]string) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = res.Body.Close() }() // read whole below
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: res.StatusCode, header: res.Header, body: b}
}

// from makes the request come from client through the trusted proxy
// 127.0.0.1 (USERD_TRUSTED_PROXIES=127.0.0.1/32).
func from(client string) map[string]string { return map[string]string{"X-Forwarded-For": client} }

// metric reads one sample of the node's /metrics (asked from loopback,
// which the default USERD_METRICS_ALLOW admits): the series whose name
// and labels, in the exposition's order, start the line. ok is false when
// there is none.
func metric(t testing.TB, base, series string) (v float64, ok bool) {
	t.Helper()
	r := send(t, http.MethodGet, base+"/metrics", nil, "")
	if r.status != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", r.status, r.body)
	}
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		if text, found := strings.CutPrefix(sc.Text(), series+" "); found {
			f, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
			if err != nil {
				t.Fatalf("%s: %v", sc.Text(), err)
			}
			return f, true
		}
	}
	return 0, false
}

// checksCounter reads the password checks of the nodes, summed; ok is
// false when a node does not count them.
func checksCounter(t testing.TB, nodes ...string) (sum float64, ok bool) {
	t.Helper()
	for _, base := range nodes {
		v, found := metric(t, base, passwordChecks)
		if !found {
			return 0, false
		}
		sum += v
	}
	return sum, true
}

// passwordChecks is the number of passwords a node compared (logins,
// current passwords, the dummy check of unknown emails).
const passwordChecks = `userd_password_hashing_total{op="verify",result="done"}`

// register creates a customer through open registration.
func register(t testing.TB, base, email string, headers map[string]string) {
	t.Helper()
	r := sendWith(t, http.MethodPost, base+"/api/users", map[string]string{"name": "Victim", "email": email, "password": userPassword}, "", headers)
	if r.status != http.StatusCreated {
		t.Fatalf("register %s: %d %s", email, r.status, r.body)
	}
}

// signUp registers a customer and signs it in, both with headers (nil,
// or from(client)), and returns the tokens of its password sign-in.
func signUp(t testing.TB, base, email string, headers map[string]string) tokens {
	t.Helper()
	register(t, base, email, headers)
	r := sendWith(t, http.MethodPost, base+"/auth/login", map[string]string{"email": email, "password": userPassword}, "", headers)
	var tok tokens
	if r.status != http.StatusOK || jsonInto(r.body, &tok) != nil {
		t.Fatalf("login %s: %d %s", email, r.status, r.body)
	}
	return tok
}

// race sends n requests at once and returns the replies.
func race(n int, do func(i int) reply) []reply {
	out := make([]reply, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			out[i] = do(i)
		})
	}
	close(start)
	wg.Wait()
	return out
}

// tally counts replies by status and problem code.
func tally(replies []reply) map[string]int {
	m := map[string]int{}
	for _, r := range replies {
		m[strconv.Itoa(r.status)+" "+r.code()]++
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

func jsonInto(b []byte, v any) error { return json.Unmarshal(b, v) }
