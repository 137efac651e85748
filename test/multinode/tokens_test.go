package multinode

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
)

// A personal access token revoked on node A, or whose user an admin
// disabled on A, is refused on node B within 1 s: each use reads the
// token and its user, so the refusal is at once.
func TestPersonalTokenEndsOnEveryNode(t *testing.T) { eachBackend(t, personalTokenEndsOnEveryNode) }

func personalTokenEndsOnEveryNode(t *testing.T, c *cluster) {
	const a, b = 0, 1
	const email = "tokens@example.com"
	c.register(a, email)
	session := c.login(a, email, userPassword)
	newToken := func() (id, token string) {
		t.Helper()
		r := c.post(a, "/api/users/me/tokens", map[string]any{"name": "CI", "scopes": []string{"users:read"}}, session.AccessToken)
		if r.Status != http.StatusCreated {
			t.Fatalf("POST /api/users/me/tokens on A: %d %s", r.Status, r.Body)
		}
		var created struct{ ID, Token string }
		if err := json.Unmarshal(r.Body, &created); err != nil {
			t.Fatal(err)
		}
		if s := c.send(b, http.MethodGet, "/api/users/me", created.Token); s != http.StatusOK {
			t.Fatalf("the new token on B: %d", s)
		}
		return created.ID, created.Token
	}
	refusedOnB := func(what string, token string, since time.Time) {
		t.Helper()
		for c.send(b, http.MethodGet, "/api/users/me", token) != http.StatusUnauthorized {
			if time.Since(since) > time.Second {
				t.Fatalf("%s: node B still accepts the token after 1 s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("%s: 401 on node B %v after", what, time.Since(since).Round(time.Millisecond))
	}

	id, token := newToken()
	if s := c.send(a, http.MethodDelete, "/api/users/me/tokens/"+id, session.AccessToken); s != http.StatusNoContent {
		t.Fatalf("DELETE the token on A: %d", s)
	}
	refusedOnB("revoked", token, time.Now())

	_, token = newToken()
	admin := c.login(a, adminEmail, adminPassword)
	r, err := kit.DoWith(client, kit.NewRequest(t, http.MethodGet, c.urls[a]+"/api/users/me", nil, session.AccessToken))
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("me: %v %d", err, r.Status)
	}
	var me struct{ ID string }
	if err := json.Unmarshal(r.Body, &me); err != nil {
		t.Fatal(err)
	}
	r, err = kit.DoWith(client, kit.NewRequest(t, http.MethodPut, c.urls[a]+"/api/users/"+me.ID,
		map[string]any{"disabled": true}, admin.AccessToken))
	if err != nil || r.Status != http.StatusOK {
		t.Fatalf("disable on A: %v %d %s", err, r.Status, r.Body)
	}
	refusedOnB("user disabled", token, time.Now())
}
