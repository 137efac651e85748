package attack

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// budget is the contract's number of wrong passwords before the lock-out.
const budget = 5

// Medium finding "the lock-out can be outrun": 60 concurrent wrong guesses
// for one email got 60 password checks. Now at most the budget is checked,
// counted by the node's own metrics, and the rest are refused unchecked.
func TestAttack_concurrent_guesses_for_one_email_check_at_most_five_passwords(t *testing.T) {
	t.Parallel()
	n := userdproc.New(t, binary, baseEnv(t.TempDir()))
	n.Start()
	register(t, n.Base, "victim@example.com", nil)
	before, _ := checksCounter(t, n.Base)
	replies := kit.Race(60, func(int) kit.Reply {
		return kit.Send(t, http.MethodPost, n.Base+"/auth/login", map[string]string{"email": "victim@example.com", "password": "wrong-Guess-123"}, "")
	})
	wantAtMostBudgetChecked(t, "one node", replies, before, n.Base)
	// Locked, even for the right password, which is not checked either.
	if r := kit.Send(t, http.MethodPost, n.Base+"/auth/login", map[string]string{"email": "victim@example.com", "password": userPassword}, ""); r.Code() != "too_many_attempts" {
		t.Errorf("the right password after the race: %d %s, want 429 too_many_attempts", r.Status, r.Body)
	}
}

// The same across two nodes sharing one PostgreSQL schema: the
// reservation is decided by the database, not by a node.
func TestAttack_concurrent_guesses_across_two_postgres_nodes_check_at_most_five_passwords(t *testing.T) {
	t.Parallel()
	dsn := postgresSchema(t)
	nodes := []*userdproc.Node{
		userdproc.New(t, binary, postgresEnv(t.TempDir(), dsn)),
		userdproc.New(t, binary, postgresEnv(t.TempDir(), dsn)),
	}
	// One after the other: both migrate the schema, the second finds it done.
	for _, n := range nodes {
		n.Start()
	}
	register(t, nodes[0].Base, "victim@example.com", nil)
	before, _ := checksCounter(t, nodes[0].Base, nodes[1].Base)
	replies := kit.Race(60, func(i int) kit.Reply {
		return kit.Send(t, http.MethodPost, nodes[i%2].Base+"/auth/login", map[string]string{"email": "victim@example.com", "password": "wrong-Guess-123"}, "")
	})
	wantAtMostBudgetChecked(t, "two PostgreSQL nodes", replies, before, nodes[0].Base, nodes[1].Base)
	for i, n := range nodes {
		if r := kit.Send(t, http.MethodPost, n.Base+"/auth/login", map[string]string{"email": "victim@example.com", "password": userPassword}, ""); r.Code() != "too_many_attempts" {
			t.Errorf("node %d, the right password after the race: %d %s", i, r.Status, r.Body)
		}
	}
}

// wantAtMostBudgetChecked checks the answers to 60 wrong guesses, and the
// passwords the nodes checked for them: the budget at most.
func wantAtMostBudgetChecked(t *testing.T, where string, replies []kit.Reply, before float64, nodes ...string) {
	t.Helper()
	got := tally(replies)
	after, counted := checksCounter(t, nodes...)
	t.Logf("%d concurrent guesses on %s: %v; %v passwords checked", len(replies), where, got, after-before)
	if got["401 invalid_credentials"] > budget || got["401 invalid_credentials"]+got["429 too_many_attempts"] != len(replies) {
		t.Errorf("answers %v: want at most %d × 401, the rest 429 too_many_attempts", got, budget)
	}
	switch {
	case !counted:
		t.Error("the nodes do not count password checks (userd_password_hashing_total{op=\"verify\",result=\"done\"})")
	case after-before > budget:
		t.Errorf("%v passwords checked for %d concurrent guesses, want at most %d", after-before, len(replies), budget)
	}
}

// Medium finding, second half: PUT with currentPassword had no per-IP
// limit, so a stolen token could guess from one address at any rate the
// per-email lock-out allowed, for every account it held a token of. Now
// those PUTs spend the address's /auth allowance.
func TestAttack_current_password_guesses_from_one_ip_are_rate_limited(t *testing.T) {
	t.Parallel()
	env := baseEnv(t.TempDir())
	env["USERD_TRUSTED_PROXIES"] = "127.0.0.1/32"
	env["USERD_AUTH_IP_LIMIT"] = "3"
	n := userdproc.New(t, binary, env)
	n.Start()
	// The victims sign up and sign in from their own addresses.
	var ids, bearers []string
	for i := range 2 {
		tok := signUp(t, n.Base, fmt.Sprintf("victim%d@example.com", i), from(fmt.Sprintf("203.0.113.%d", 10+i)))
		ids, bearers = append(ids, tok.User.ID), append(bearers, tok.AccessToken)
	}
	// The thief holds both tokens and guesses from one address.
	thief := from("198.51.100.7")
	guess := map[string]string{"password": "new-Passphrase-99", "currentPassword": "wrong-Guess-123"}
	var got []string
	for i := range 6 {
		r := kit.Send(t, http.MethodPut, n.Base+"/api/users/"+ids[i%2], guess, bearers[i%2], thief...)
		got = append(got, fmt.Sprintf("%d %s", r.Status, r.Code()))
		if i >= 3 && (r.Status != http.StatusTooManyRequests || r.Code() != "rate_limited" || r.Header.Get("Retry-After") == "") {
			t.Errorf("guess %d from one address past its allowance of 3: %d %s, want 429 rate_limited with Retry-After", i+1, r.Status, r.Body)
		}
	}
	t.Logf("currentPassword guesses from one address: %v", got)
	// The same allowance as login's.
	if r := kit.Send(t, http.MethodPost, n.Base+"/auth/login", map[string]string{"email": "victim0@example.com", "password": userPassword}, "", thief...); r.Code() != "rate_limited" {
		t.Errorf("login from the thief's address: %d %s, want 429 rate_limited", r.Status, r.Body)
	}
}
