// Package webhookflow delivers webhooks end to end, from outside: the real
// userd binary (test/userdproc) posting to a receiver that checks every
// signature with the Standard Webhooks project's own Go library, across a
// restart while the receiver is down, and from two nodes sharing
// PostgreSQL.
package webhookflow

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// binary is the userd binary built once for the package.
var binary string

func TestMain(m *testing.M) { os.Exit(userdproc.RunTests(m, "userd-webhookflow-", &binary)) }

var secret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("webhookflow test secret, 32 b..."))

// receiver counts the deliveries of each webhook-id, after checking its
// signature with the official library.
type receiver struct {
	t     *testing.T
	wh    *standardwebhooks.Webhook
	mu    sync.Mutex
	seen  map[string]int
	types map[string]string
}

func newReceiver(t *testing.T) *receiver {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return &receiver{t: t, wh: wh, seen: map[string]int{}, types: map[string]string{}}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := rc.wh.Verify(body, r.Header); err != nil {
		rc.t.Errorf("the official library refuses a delivery: %v", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(body, &e)
	rc.mu.Lock()
	id := r.Header.Get("webhook-id")
	rc.seen[id]++
	rc.types[id] = e.Type
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// distinct returns how many events of typ arrived, and how many arrived
// more than once.
func (rc *receiver) distinct(typ string) (n, repeated int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for id, c := range rc.seen {
		if rc.types[id] != typ {
			continue
		}
		n++
		if c > 1 {
			repeated++
		}
	}
	return n, repeated
}

// serve runs rc on addr until the test ends.
func serve(t *testing.T, addr string, rc *receiver) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// register creates the i-th customer on node n, whose creation is an
// event of the receiver's.
func register(t *testing.T, n *userdproc.Node, i int) {
	t.Helper()
	kit.Register(t, n.Base, fmt.Sprintf("Hook %d", i), fmt.Sprintf("hook-%d@example.com", i), "webhook-Flow-Passphrase-9")
}

func hookEnv(url string) map[string]string {
	return map[string]string{
		"USERD_WEBHOOK_URL": url, "USERD_WEBHOOK_SECRET": secret, "USERD_WEBHOOK_EVENTS": "user.created",
		"USERD_REGISTER_IP_LIMIT": "0", "USERD_AUTH_IP_LIMIT": "0",
	}
}

// Events made while the receiver is down, and userd restarted meanwhile,
// all arrive once it is up: they wait in the database, not in memory.
func TestWebhooks_survive_a_restart_while_the_receiver_is_down(t *testing.T) {
	t.Parallel()
	addr := userdproc.FreeAddr(t) // nothing listens there yet
	env := hookEnv("http://" + addr + "/hook")
	dir := t.TempDir()
	env["USERD_DB_DSN"] = dir + "/userd.db"
	node := userdproc.New(t, binary, env)
	node.Start()
	const users = 5
	for i := range users {
		register(t, node, i)
	}
	// Two attempts fail (at once and 1 s later), then the node stops.
	time.Sleep(1500 * time.Millisecond)
	node.Stop()

	rc := newReceiver(t)
	serve(t, addr, rc)
	node.Start()
	kit.Eventually(t, 45*time.Second, "every event delivered after the restart", func() bool {
		n, _ := rc.distinct("user.created")
		return n == users
	})
	if _, repeated := rc.distinct("user.created"); repeated > 0 {
		t.Errorf("%d events delivered more than once", repeated)
	}
}

// Two nodes sharing PostgreSQL claim events with SKIP LOCKED: each is
// delivered once.
func TestWebhooks_two_nodes_deliver_each_event_once(t *testing.T) {
	t.Parallel()
	dsn := userdproc.PostgresSchema(t, "webhookflow_")
	rc := newReceiver(t)
	addr := userdproc.FreeAddr(t)
	serve(t, addr, rc)
	env := hookEnv("http://" + addr + "/hook")
	env["USERD_DB_DRIVER"], env["USERD_DB_DSN"] = "postgres", dsn
	env["USERD_SECRET_KEY"] = base64.StdEncoding.EncodeToString([]byte("webhookflow secret key, 32 bytes"))
	a := userdproc.New(t, binary, env)
	a.Start()
	b := userdproc.New(t, binary, env)
	b.Start()
	const users = 60
	for i := range users {
		register(t, []*userdproc.Node{a, b}[i%2], i)
	}
	kit.Eventually(t, 30*time.Second, "every event delivered", func() bool {
		n, _ := rc.distinct("user.created")
		return n == users
	})
	// Time for a duplicate to show.
	time.Sleep(2 * time.Second)
	if n, repeated := rc.distinct("user.created"); n != users || repeated > 0 {
		t.Errorf("%d events, %d of them more than once; want %d once each", n, repeated, users)
	}
}
