package attack

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// Medium finding "anonymous registration starves login": 200 concurrent
// anonymous registrations from one address kept every hashing slot busy,
// and the admin's login answered 503 in 8 of 9 tries. With production
// argon2id costs (the defaults), the admin, signing in from another
// address during the flood, must get in within 2 s every time: with the
// registration limit on (the default), and with it off, where only the
// split of the hashing slots keeps a share for logins.
func TestAttack_registration_flood_does_not_starve_login(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, registerLimit string }{
		{"default_limits", ""},
		{"registration_limit_off", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := baseEnv(t.TempDir())
			// Production hashing costs, not the suite's cheap ones.
			delete(env, "USERD_ARGON2_MEMORY_KIB")
			delete(env, "USERD_ARGON2_ITERATIONS")
			env["USERD_TRUSTED_PROXIES"] = "127.0.0.1/32"
			if tc.registerLimit != "" {
				env["USERD_REGISTER_IP_LIMIT"] = tc.registerLimit
			}
			n := userdproc.New(t, binary, env)
			n.Start()

			flooder, admin := from("203.0.113.50"), from("192.0.2.200")
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				statuses = map[int]int{}
			)
			for i := range 200 {
				wg.Go(func() {
					r := kit.Send(t, http.MethodPost, n.Base+"/api/users",
						map[string]string{"name": "Flood", "email": fmt.Sprintf("flood%d@example.com", i), "password": userPassword}, "", flooder...)
					mu.Lock()
					statuses[r.Status]++
					mu.Unlock()
				})
			}
			var slow []string
			for try := range 9 {
				start := time.Now()
				r := kit.Send(t, http.MethodPost, n.Base+"/auth/login", map[string]string{"email": adminEmail, "password": adminPassword}, "", admin...)
				if took := time.Since(start); r.Status != http.StatusOK || took > 2*time.Second {
					slow = append(slow, fmt.Sprintf("try %d: %d %s in %v", try+1, r.Status, r.Code(), took.Round(time.Millisecond)))
				}
			}
			wg.Wait()
			t.Logf("200 registrations from one address: %v", statuses)
			if len(slow) > 0 {
				t.Errorf("the admin's login during the flood failed or took over 2 s in %d of 9 tries: %v", len(slow), slow)
			}
		})
	}
}
