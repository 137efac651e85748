package attack

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"testing"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// The per-IP limits were per process: behind two nodes an address got
// twice USERD_AUTH_IP_LIMIT. With USERD_RATE_LIMIT_REDIS_URL both nodes
// draw on one budget: of requests alternating between the nodes, exactly
// the limit is admitted in all. Without Redis, the control, each node
// admits the limit.
func TestAttack_two_nodes_share_one_per_ip_budget_through_redis(t *testing.T) {
	t.Parallel()
	const limit, sent = 6, 20
	redisURL := userdproc.RedisURL(t)
	for _, tc := range []struct {
		name     string
		redis    bool
		admitted int
	}{
		{"shared_through_redis", true, limit},
		{"per_node_without_redis", false, 2 * limit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nodes := make([]*userdproc.Node, 2)
			for i := range nodes {
				env := map[string]string{
					"USERD_DB_DRIVER":         "memory",
					"USERD_ARGON2_MEMORY_KIB": "64",
					"USERD_ARGON2_ITERATIONS": "1",
					"USERD_LOG_LEVEL":         "warn",
					"USERD_AUTH_IP_LIMIT":     fmt.Sprint(limit),
					// The client is named by X-Forwarded-For, so that the
					// test has an address, and so Redis keys, of its own.
					"USERD_TRUSTED_PROXIES": "127.0.0.1/32",
				}
				if tc.redis {
					env["USERD_RATE_LIMIT_REDIS_URL"] = redisURL
				}
				nodes[i] = userdproc.New(t, binary, env)
				nodes[i].Start()
			}
			// A random address of 2001:db8::/32 (documentation): its /64 is
			// this run's alone, however often the test runs on one Redis.
			b := make([]byte, 6)
			_, _ = rand.Read(b)
			client := fmt.Sprintf("2001:db8:%x:%x:%x::1", b[0:2], b[2:4], b[4:6])
			// A new email each time: the per-email lock-out stays out of it.
			admitted, refused := 0, 0
			for i := range sent {
				r := kit.Send(t, http.MethodPost, nodes[i%2].Base+"/auth/login",
					map[string]string{"email": fmt.Sprintf("nobody%d@example.com", i), "password": "a wrong guess"}, "",
					"X-Forwarded-For", client)
				switch {
				case r.Status == http.StatusUnauthorized:
					admitted++
				case r.Status == http.StatusTooManyRequests && r.Code() == "rate_limited":
					refused++
				default:
					t.Fatalf("request %d: %d %s", i+1, r.Status, r.Body)
				}
			}
			if admitted != tc.admitted || refused != sent-tc.admitted {
				t.Fatalf("%d admitted and %d refused of %d, want %d admitted", admitted, refused, sent, tc.admitted)
			}
		})
	}
}
