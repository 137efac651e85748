// Package multinode proves that several userd processes sharing one
// PostgreSQL or MySQL database keep the contract's guarantees under concurrent
// traffic: one successor per refresh token, one account per email, and no
// lost login failures. It starts real binaries on 127.0.0.1 ports.
package multinode

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/logbuf"
	"github.com/userd/userd/test/userdproc"
)

const (
	nodeCount     = 3
	adminEmail    = "root@example.com"
	adminPassword = "root-Passphrase-42"
	userPassword  = "customer-Passphrase-7"
	// perNode concurrent requests are sent to each node in every race.
	perNode = 8
)

// binary is the userd built once for the whole package.
var binary string

func TestMain(m *testing.M) {
	code := func() int {
		if os.Getenv("USERD_TEST_POSTGRES_DSN") == "" && os.Getenv("USERD_TEST_MYSQL_DSN") == "" {
			// The tests themselves report the skip (or, in CI, the failure).
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "userd-multinode-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() {
			if err := os.RemoveAll(dir); err != nil {
				fmt.Fprintln(os.Stderr, "multinode:", err)
			}
		}()
		if binary, err = userdproc.Build(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// postgresDSN returns the test database DSN, skipping the test without one
// (failing it in CI, where PostgreSQL must be there).
func postgresDSN(t *testing.T) string {
	t.Helper()
	return userdproc.RequiredEnv(t, "USERD_TEST_POSTGRES_DSN", "multi-node PostgreSQL")
}

// backend is a database the nodes of a cluster share: the driver's name,
// and open, which makes a fresh database of the test's own and returns
// the DSN the nodes use and a handle the test reads it with.
type backend struct {
	name string
	open func(t *testing.T) (dsn string, db *sql.DB)
}

// backends are the databases every multi-node test runs on.
var backends = []backend{{"postgres", openPostgres}, {"mysql", openMySQL}}

// eachBackend runs test once per backend, on a cluster of its own.
func eachBackend(t *testing.T, test func(t *testing.T, c *cluster)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, newCluster(t, b)) })
	}
}

// openPostgres makes a private schema in USERD_TEST_POSTGRES_DSN.
func openPostgres(t *testing.T) (string, *sql.DB) {
	t.Helper()
	base := postgresDSN(t)
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mustClose(t, db) })
	schema := "userd_mn_" + randomHex(6)
	if _, err := db.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE") })
	dsn := withSearchPath(t, base, schema)
	scoped, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mustClose(t, scoped) })
	return dsn, scoped
}

// openMySQL makes a private database on the server of
// USERD_TEST_MYSQL_DSN.
func openMySQL(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := userdproc.MySQLDatabase(t, "userd_mn_")
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mustClose(t, db) })
	return dsn, db
}

// cluster is nodeCount userd processes on one fresh database.
type cluster struct {
	t      *testing.T
	driver string
	db     *sql.DB
	urls   []string
	procs  []*exec.Cmd
	exited []chan error
	logs   []*logbuf.Buffer
}

// newCluster makes a private database on b and starts the nodes at the
// same moment, so that their start-up (migrations, key creation, the
// bootstrap admin) races too.
func newCluster(t *testing.T, b backend) *cluster {
	t.Helper()
	dsn, db := b.open(t)
	c := &cluster{t: t, driver: b.name, db: db}
	// One secret key for the deployment: every node opens what any sealed.
	secretKey := secretbox.EncodeKey(secretbox.NewKey())
	// The .eml files of the messages (no USERD_SMTP_URL), out of the
	// package's directory.
	mailDir := filepath.Join(t.TempDir(), "mail")
	for _, addr := range freeAddrs(t, nodeCount) {
		logs := &logbuf.Buffer{}
		cmd := exec.Command(binary, "serve")
		cmd.Env = append(os.Environ(),
			"USERD_DB_DRIVER="+b.name,
			"USERD_DB_DSN="+dsn,
			"USERD_SECRET_KEY="+secretKey,
			"USERD_HTTP_ADDR="+addr,
			"USERD_AUTH_IP_LIMIT=0", // every request comes from 127.0.0.1
			"USERD_REGISTER_IP_LIMIT=0",
			"USERD_ARGON2_MEMORY_KIB=64",
			"USERD_ARGON2_ITERATIONS=1",
			"USERD_BOOTSTRAP_ADMIN_EMAIL="+adminEmail,
			"USERD_BOOTSTRAP_ADMIN_PASSWORD="+adminPassword,
			"USERD_LOG_LEVEL=warn",
			"USERD_SHUTDOWN_TIMEOUT=5s",
			"USERD_MAIL_DIR="+mailDir,
		)
		cmd.Stdout, cmd.Stderr = logs, logs
		c.urls = append(c.urls, "http://"+addr)
		c.procs = append(c.procs, cmd)
		c.logs = append(c.logs, logs)
		c.exited = append(c.exited, make(chan error, 1))
	}
	for i, cmd := range c.procs {
		if err := cmd.Start(); err != nil {
			t.Fatalf("start node %d: %v", i, err)
		}
		go func() { c.exited[i] <- cmd.Wait() }()
	}
	t.Cleanup(c.stop)
	for i, u := range c.urls {
		c.waitReady(i, u)
	}
	return c
}

func (c *cluster) waitReady(i int, base string) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-c.exited[i]:
			c.exited[i] <- err // for stop
			c.t.Fatalf("node %d exited during start (%v); log:\n%s", i, err, c.logs[i])
		default:
		}
		res, err := http.Get(base + "/readyz")
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("node %d not ready after 30 s; log:\n%s", i, c.logs[i])
}

// stop ends every node with SIGTERM and checks each exits cleanly.
func (c *cluster) stop() {
	// The client hangs up first, as a client that is done does: a kept
	// connection that never carried a request (a dial the pool did not
	// need) counts as active to the server's graceful shutdown for 5 s,
	// the test's whole USERD_SHUTDOWN_TIMEOUT.
	client.CloseIdleConnections()
	for i, cmd := range c.procs {
		if cmd.Process == nil {
			continue
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-c.exited[i]:
			if err != nil {
				c.t.Errorf("node %d exited with %v; log:\n%s", i, err, c.logs[i])
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			c.t.Errorf("node %d ignored SIGTERM for 10 s", i)
		}
	}
}

var client = &http.Client{
	Timeout:   20 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 64},
}

// post sends a JSON body to the node, with an optional bearer token. It
// reports a failure to send with Errorf and returns a zero Reply, so that
// it may run in the goroutines of a race.
func (c *cluster) post(node int, path string, body any, token string) kit.Reply {
	c.t.Helper()
	r, err := kit.DoWith(client, kit.NewRequest(c.t, http.MethodPost, c.urls[node]+path, body, token))
	if err != nil {
		c.t.Errorf("POST %s on node %d: %v", path, node, err)
	}
	return r
}

// race sends n requests at once, spread over the nodes round robin, and
// returns the replies in request order.
func (c *cluster) race(n int, send func(i, node int) kit.Reply) []kit.Reply {
	return kit.Race(n, func(i int) kit.Reply { return send(i, i%nodeCount) })
}

func (c *cluster) login(node int, email, password string) kit.Tokens {
	c.t.Helper()
	r := c.post(node, "/auth/login", map[string]string{"email": email, "password": password}, "")
	if r.Status != http.StatusOK {
		c.t.Fatalf("login %s on node %d: %d %s", email, node, r.Status, r.Body)
	}
	var tr kit.Tokens
	if err := json.Unmarshal(r.Body, &tr); err != nil {
		c.t.Fatal(err)
	}
	return tr
}

func (c *cluster) register(node int, email string) {
	c.t.Helper()
	r := c.post(node, "/api/users", map[string]string{"name": "Racer", "email": email, "password": userPassword}, "")
	if r.Status != http.StatusCreated {
		c.t.Fatalf("register %s: %d %s", email, r.Status, r.Body)
	}
}

// rebind writes query, whose parameters are ?, in the placeholders of the
// cluster's database.
func (c *cluster) rebind(query string) string {
	if c.driver != "postgres" {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestThreeNodes(t *testing.T) { eachBackend(t, threeNodes) }

func threeNodes(t *testing.T, c *cluster) {
	// All three nodes bootstrapped the same admin at once: one account.
	var admins int
	if err := c.db.QueryRow(c.rebind("SELECT COUNT(*) FROM users WHERE email = ?"), adminEmail).Scan(&admins); err != nil {
		t.Fatal(err)
	}
	if admins != 1 {
		t.Fatalf("%d bootstrap admins, want 1", admins)
	}

	t.Run("concurrent_refresh_of_one_token_yields_one_successor", func(t *testing.T) {
		c.register(0, "refresh@example.com")
		first := c.login(1, "refresh@example.com", userPassword)
		n := nodeCount * perNode
		replies := c.race(n, func(_, node int) kit.Reply {
			return c.post(node, "/auth/refresh-token", map[string]string{"refreshToken": first.RefreshToken}, "")
		})
		successors := map[string]int{}
		for i, r := range replies {
			if r.Status != http.StatusOK {
				t.Fatalf("refresh %d on node %d: %d %s (a repeat within the grace window must succeed)", i, i%nodeCount, r.Status, r.Body)
			}
			var tr kit.Tokens
			if err := json.Unmarshal(r.Body, &tr); err != nil {
				t.Fatal(err)
			}
			successors[tr.RefreshToken]++
		}
		// The store must agree: one token used, one successor, one live token.
		var used, live, total int
		err := c.db.QueryRow(c.rebind(`SELECT
				COALESCE(SUM(CASE WHEN used_at IS NOT NULL THEN 1 ELSE 0 END), 0),
				COALESCE(SUM(CASE WHEN used_at IS NULL THEN 1 ELSE 0 END), 0),
				COUNT(*)
			FROM refresh_tokens WHERE user_id = ?`), first.User.ID).Scan(&used, &live, &total)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("refresh race: %d attempts on %d nodes, %d distinct successors; store: %d used, %d live, %d tokens",
			n, nodeCount, len(successors), used, live, total)
		if len(successors) != 1 || used != 1 || live != 1 || total != 2 {
			t.Fatalf("two branches: successors %v, used %d, live %d, total %d", successors, used, live, total)
		}
		// The one successor works on any node.
		for s := range successors {
			if r := c.post(2, "/auth/refreshtoken", map[string]string{"refreshToken": s}, ""); r.Status != http.StatusOK {
				t.Fatalf("successor refused: %d %s", r.Status, r.Body)
			}
		}
	})

	t.Run("concurrent_creates_of_one_email_give_one_201", func(t *testing.T) {
		n := nodeCount * perNode
		replies := c.race(n, func(i, node int) kit.Reply {
			// Letter case varies: the address is one all the same.
			email := "Twin@Example.com"
			if i%2 == 1 {
				email = "twin@EXAMPLE.COM"
			}
			return c.post(node, "/api/users", map[string]string{"name": "Twin", "email": email, "password": userPassword}, "")
		})
		counts := map[int]int{}
		for _, r := range replies {
			counts[r.Status]++
		}
		var rows int
		if err := c.db.QueryRow("SELECT COUNT(*) FROM users WHERE email = 'twin@example.com'").Scan(&rows); err != nil {
			t.Fatal(err)
		}
		t.Logf("create race: %d attempts on %d nodes: %d × 201, %d × 409; %d row", n, nodeCount, counts[201], counts[409], rows)
		if counts[http.StatusCreated] != 1 || counts[http.StatusConflict] != n-1 || rows != 1 {
			t.Fatalf("statuses %v, rows %d; want one 201 and %d × 409", counts, rows, n-1)
		}
	})

	t.Run("concurrent_login_failures_are_all_counted", func(t *testing.T) {
		c.register(2, "guessed@example.com")
		n := nodeCount * perNode
		replies := c.race(n, func(_, node int) kit.Reply {
			return c.post(node, "/auth/login", map[string]string{"email": "guessed@example.com", "password": "wrong-guess-123"}, "")
		})
		counts := map[int]int{}
		for _, r := range replies {
			counts[r.Status]++
		}
		var failures int
		if err := c.db.QueryRow("SELECT failures FROM login_attempts WHERE email = 'guessed@example.com'").Scan(&failures); err != nil {
			t.Fatal(err)
		}
		t.Logf("login race: %d wrong passwords on %d nodes: %d × 401, %d × 429; %d failures counted",
			n, nodeCount, counts[401], counts[429], failures)
		// Every 401 is one counted failure (none lost, none doubled); a 429
		// is a refused attempt, which does not count.
		if counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests] != n || failures != counts[http.StatusUnauthorized] {
			t.Fatalf("statuses %v, failures counted %d", counts, failures)
		}
		if counts[http.StatusUnauthorized] < 5 {
			t.Fatalf("only %d failures before the lock-out, want at least 5", counts[http.StatusUnauthorized])
		}
		// Locked on every node now, even with the right password.
		for node := range nodeCount {
			r := c.post(node, "/auth/login", map[string]string{"email": "guessed@example.com", "password": userPassword}, "")
			if r.Status != http.StatusTooManyRequests {
				t.Fatalf("node %d after the race: %d, want 429", node, r.Status)
			}
		}
	})

	t.Run("tokens_of_one_node_verify_on_the_others", func(t *testing.T) {
		tr := c.login(0, adminEmail, adminPassword)
		for node := range nodeCount {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, c.urls[node]+"/api/users/me", nil)
			req.Header.Set("Authorization", "Bearer "+tr.AccessToken)
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Fatalf("node %d refused node 0's token: %d", node, res.StatusCode)
			}
		}
	})
}

func withSearchPath(t *testing.T, dsn, schema string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		// key=value form
		return strings.TrimSpace(dsn) + " search_path=" + schema
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// freeAddrs returns n distinct free loopback addresses. The listeners stay
// open until all are picked, or the kernel could hand out one port twice.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		// Each listener is held until all are taken, so that the
		// addresses differ; then released for the nodes.
		defer mustClose(t, ln)
		addrs[i] = ln.Addr().String()
	}
	return addrs
}

// mustClose closes c and fails the test, without stopping it, when Close
// fails; meant for defer and cleanups.
func mustClose(t testing.TB, c io.Closer) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
