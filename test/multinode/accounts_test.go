package multinode

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
)

// TestAccountChangesOnEveryNode: with the account cache on (the default,
// USERD_ACCOUNT_CACHE_SIZE=10000), a change of an account made on node A
// is seen by the signed-in requests on nodes B and C within 1 s, though
// their caches held the account: a new name is read, and a disabled user,
// a demoted admin and a deleted account are refused.
func TestAccountChangesOnEveryNode(t *testing.T) { eachBackend(t, accountChangesOnEveryNode) }

func accountChangesOnEveryNode(t *testing.T, c *cluster) {
	const a = 0
	others := []int{1, 2}
	root := c.login(a, adminEmail, adminPassword)
	// me reads /api/users/me on node with token: the status and the name.
	me := func(node int, token string) (int, string, string) {
		t.Helper()
		r, err := kit.DoWith(client, kit.NewRequest(t, http.MethodGet, c.urls[node]+"/api/users/me", nil, token))
		if err != nil {
			t.Fatalf("me on node %d: %v", node, err)
		}
		var u struct{ ID, Name string }
		if r.Status == http.StatusOK {
			if err := json.Unmarshal(r.Body, &u); err != nil {
				t.Fatal(err)
			}
		}
		return r.Status, u.ID, u.Name
	}
	// cached signs email in on A and reads its account on every other
	// node, which caches it there; it returns the token and the id.
	cached := func(email string) (token, id string) {
		t.Helper()
		token = c.login(a, email, userPassword).AccessToken
		for _, n := range others {
			for range 3 { // the first read caches it, the others hit
				status, uid, _ := me(n, token)
				if status != http.StatusOK {
					t.Fatalf("%s on node %d: %d", email, n, status)
				}
				id = uid
			}
		}
		return token, id
	}
	change := func(method, id string, body any) {
		t.Helper()
		r, err := kit.DoWith(client, kit.NewRequest(t, method, c.urls[a]+"/api/users/"+id, body, root.AccessToken))
		if err != nil || r.Status >= 300 {
			t.Fatalf("%s /api/users/%s on A: %v %d %s", method, id, err, r.Status, r.Body)
		}
	}
	// within waits until ok holds of every other node, failing after 1 s.
	within := func(what string, since time.Time, ok func(node int) bool) {
		t.Helper()
		for _, n := range others {
			for !ok(n) {
				if time.Since(since) > time.Second {
					t.Fatalf("%s: node %d not after 1 s", what, n)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		t.Logf("%s: on every node %v after", what, time.Since(since).Round(time.Millisecond))
	}
	refused := func(token string) func(int) bool {
		return func(n int) bool { status, _, _ := me(n, token); return status == http.StatusUnauthorized }
	}

	c.register(a, "renamed@example.com")
	token, id := cached("renamed@example.com")
	change(http.MethodPut, id, map[string]any{"name": "New Name"})
	within("renamed", time.Now(), func(n int) bool { _, _, name := me(n, token); return name == "New Name" })

	c.register(a, "disabled@example.com")
	token, id = cached("disabled@example.com")
	change(http.MethodPut, id, map[string]any{"disabled": true})
	within("disabled", time.Now(), refused(token))

	c.register(a, "deleted@example.com")
	token, id = cached("deleted@example.com")
	change(http.MethodDelete, id, nil)
	within("deleted", time.Now(), refused(token))

	c.register(a, "demoted@example.com")
	_, id = cached("demoted@example.com")
	change(http.MethodPut, id, map[string]any{"profiles": []string{"ROLE_ADMIN"}})
	token, _ = cached("demoted@example.com") // an admin's token, cached as an admin's account
	change(http.MethodPut, id, map[string]any{"profiles": []string{"ROLE_CUSTOMER"}})
	within("demoted", time.Now(), refused(token))

	// A refresh reads its account through the cache too, but the session
	// it refreshes from the database: a disabled account's refresh is
	// refused at once on every node, though a refresh cached the account
	// there.
	c.register(a, "refreshed@example.com")
	refresh := c.login(a, "refreshed@example.com", userPassword).RefreshToken
	for _, n := range others {
		r := c.post(n, "/auth/refreshtoken", map[string]string{"refreshToken": refresh}, "")
		var next kit.Tokens
		if r.Status != http.StatusOK || json.Unmarshal(r.Body, &next) != nil {
			t.Fatalf("refresh on node %d: %d %s", n, r.Status, r.Body)
		}
		refresh = next.RefreshToken
	}
	_, id = cached("refreshed@example.com")
	change(http.MethodPut, id, map[string]any{"disabled": true})
	for _, n := range others {
		if r := c.post(n, "/auth/refreshtoken", map[string]string{"refreshToken": refresh}, ""); r.Status != http.StatusUnauthorized {
			t.Errorf("refresh of a disabled account on node %d: %d, want 401 at once", n, r.Status)
		}
	}

	// The reads above were served by the caches: the test is of them.
	for _, n := range others {
		if hits := cacheHits(t, c.urls[n]); hits == 0 {
			t.Errorf("node %d: no account cache hit", n)
		}
	}
}

// cacheHits reads userd_account_cache_lookups_total{result="hit"} off the
// node's /metrics.
func cacheHits(t *testing.T, base string) float64 {
	t.Helper()
	r, err := kit.DoWith(client, kit.NewRequest(t, http.MethodGet, base+"/metrics", nil, ""))
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("metrics: %v %d", err, r.Status)
	}
	const series = `userd_account_cache_lookups_total{result="hit"} `
	for line := range strings.Lines(string(r.Body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series); ok {
			hits, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return hits
		}
	}
	t.Fatalf("no %s in /metrics", series)
	return 0
}
