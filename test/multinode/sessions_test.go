package multinode

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
)

// send sends a bodiless request with a bearer token and returns the
// status, 0 when it could not be sent.
func (c *cluster) send(node int, method, path, token string) int {
	c.t.Helper()
	r, err := kit.DoWith(client, kit.NewRequest(c.t, method, c.urls[node]+path, nil, token))
	if err != nil {
		c.t.Errorf("%s %s on node %d: %v", method, path, node, err)
	}
	return r.Status
}

// sidOf reads the sid claim of an access token.
func sidOf(t *testing.T, token string) string {
	t.Helper()
	sid := kit.ClaimsOf(t, token).SID
	if sid == "" {
		t.Fatalf("no sid in %s", token)
	}
	return sid
}

// parallel runs f(i) for i in [0, n) on workers goroutines.
func parallel(n, workers int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// A session ended on node A ends its access tokens at once on A, and
// within 1 s on node B (PostgreSQL NOTIFY; on MySQL the poll, every half
// second); a burst of 1,000 ended sessions all reach node B.
func TestSessionEndsOnEveryNode(t *testing.T) { eachBackend(t, sessionEndsOnEveryNode) }

func sessionEndsOnEveryNode(t *testing.T, c *cluster) {
	const a, b = 0, 1
	const email = "sessions@example.com"
	c.register(a, email)
	keep := c.login(a, email, userPassword)
	gone := c.login(a, email, userPassword)
	if s := c.send(b, http.MethodGet, "/api/users/me", gone.AccessToken); s != http.StatusOK {
		t.Fatalf("before: GET /api/users/me on B = %d", s)
	}
	if s := c.send(a, http.MethodDelete, "/api/users/me/sessions/"+sidOf(t, gone.AccessToken), keep.AccessToken); s != http.StatusNoContent {
		t.Fatalf("DELETE session on A = %d", s)
	}
	ended := time.Now()
	if s := c.send(a, http.MethodGet, "/api/users/me", gone.AccessToken); s != http.StatusUnauthorized {
		t.Errorf("on A right after: %d, want 401", s)
	}
	for c.send(b, http.MethodGet, "/api/users/me", gone.AccessToken) != http.StatusUnauthorized {
		if time.Since(ended) > time.Second {
			t.Fatalf("node B still accepts the ended session's token after 1 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("one session: 401 on node B %v after the DELETE on A", time.Since(ended).Round(time.Millisecond))
	if s := c.send(b, http.MethodGet, "/api/users/me", keep.AccessToken); s != http.StatusOK {
		t.Errorf("the other session on B: %d, want 200", s)
	}

	// The burst: 1,000 sessions of 100 users (one user's logins in turn:
	// concurrent ones would meet the lock-out's reservation), ended by an
	// admin, one request each on A, at once.
	const users, perUser, n = 100, 10, 1000
	admin := c.login(a, adminEmail, adminPassword).AccessToken
	tokens := make([]kit.Tokens, n)
	parallel(users, 16, func(u int) {
		e := fmt.Sprintf("burst%03d@example.com", u)
		if r := c.post(a, "/api/users", map[string]string{"name": "Burst", "email": e, "password": userPassword}, ""); r.Status != http.StatusCreated {
			t.Errorf("register %s: %d %s", e, r.Status, r.Body)
			return
		}
		for k := range perUser {
			r := c.post(a, "/auth/login", map[string]string{"email": e, "password": userPassword}, "")
			if r.Status != http.StatusOK || json.Unmarshal(r.Body, &tokens[u*perUser+k]) != nil {
				t.Errorf("login %s: %d %s", e, r.Status, r.Body)
				return
			}
		}
	})
	if t.Failed() {
		return
	}
	if s := c.send(b, http.MethodGet, "/api/users/me", tokens[n-1].AccessToken); s != http.StatusOK {
		t.Fatalf("a burst session before its end on B: %d", s)
	}
	var failed atomic.Int64
	parallel(n, 32, func(i int) {
		path := "/api/users/" + tokens[i].User.ID + "/sessions/" + sidOf(t, tokens[i].AccessToken)
		if s := c.send(a, http.MethodDelete, path, admin); s != http.StatusNoContent {
			failed.Add(1)
		}
	})
	burstEnded := time.Now()
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d of %d DELETEs failed", f, n)
	}
	// Every token, on B: 401 within a bound (1 s after the last end, plus
	// the time to ask 1,000 times).
	pending := make(map[int]bool, n)
	for i := range n {
		pending[i] = true
	}
	deadline := burstEnded.Add(5 * time.Second)
	for len(pending) > 0 && time.Now().Before(deadline) {
		var mu sync.Mutex
		idx := make([]int, 0, len(pending))
		for i := range pending {
			idx = append(idx, i)
		}
		parallel(len(idx), 32, func(k int) {
			if c.send(b, http.MethodGet, "/api/users/me", tokens[idx[k]].AccessToken) == http.StatusUnauthorized {
				mu.Lock()
				delete(pending, idx[k])
				mu.Unlock()
			}
		})
	}
	if len(pending) > 0 {
		t.Fatalf("%d of %d ended sessions still accepted on B 5 s after the burst", len(pending), n)
	}
	t.Logf("burst of %d: all 401 on node B %v after the last DELETE on A", n, time.Since(burstEnded).Round(time.Millisecond))
	if s := c.send(b, http.MethodGet, "/api/users/me", keep.AccessToken); s != http.StatusOK {
		t.Errorf("the surviving session on B: %d, want 200", s)
	}
}
