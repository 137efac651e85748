package mailflow

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/smtpserver"
)

// TestTwoNodesSendEachResetOnce: two nodes on one PostgreSQL database
// and one SMTP server; 200 reset requests, for 200 accounts, spread over
// both nodes, give exactly 200 reset messages, one per account, each with
// a token of its own: the two senders never take one message both.
func TestTwoNodesSendEachResetOnce(t *testing.T) {
	t.Parallel()
	const accounts = 200
	dsn := postgresSchema(t)
	smtp := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	env := postgresEnv(t.TempDir(), dsn, newSecretKey())
	env["USERD_SMTP_URL"] = smtp.URL()
	// The default budget stays on: each account asks once.
	delete(env, "USERD_MAIL_MIN_INTERVAL")
	delete(env, "USERD_MAIL_MAX_PER_HOUR")
	env["USERD_LOG_LEVEL"] = "warn"
	// One after the other: the first migrates the schema.
	nodes := []string{startNode(t, env).Base}
	second := startNode(t, env)
	nodes = append(nodes, second.Base)

	// The accounts come verified from an import, which sends nothing, so
	// that every message is a reset.
	hash, err := bcrypt.GenerateFromPassword([]byte(userPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("name,email,password_hash,profiles,email_verified\n")
	emails := make([]string, accounts)
	for i := range emails {
		emails[i] = fmt.Sprintf("user%03d@example.com", i)
		fmt.Fprintf(&csv, "User %d,%s,%s,ROLE_CUSTOMER,true\n", i, emails[i], hash)
	}
	if code, stdout, stderr := second.Run(csv.String(), "users", "import", "--format", "csv", "-"); code != 0 {
		t.Fatalf("users import: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// Eight clients, each request to the node of its index.
	var wg sync.WaitGroup
	next := make(chan int)
	failures := make(chan string, accounts)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				r := kit.Send(t, http.MethodPost, nodes[i%2]+"/auth/password-reset", map[string]string{"email": emails[i]}, "")
				if r.Status != http.StatusAccepted {
					failures <- fmt.Sprintf("%s: %s", emails[i], r)
				}
			}
		})
	}
	for i := range accounts {
		next <- i
	}
	close(next)
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Errorf("POST /auth/password-reset %s", f)
	}

	smtp.WaitFor(t, accounts, 60*time.Second)
	// Once nothing waits in the outbox (of both nodes: they share it),
	// nothing more can arrive.
	kit.Eventually(t, 30*time.Second, "an empty backlog", func() bool { return backlog(t, nodes[0]) == 0 })
	msgs := parseAll(t, smtp.Received())
	if len(msgs) != accounts {
		t.Errorf("%d messages, want %d", len(msgs), accounts)
	}
	perAddress := map[string]int{}
	tokens := map[string]bool{}
	for _, m := range msgs {
		if m.Subject != subjectReset {
			t.Errorf("a message %q to %s, want only resets", m.Subject, m.To)
			continue
		}
		perAddress[m.To]++
		tok := linkToken(t, m, "/account/reset-password")
		if tokens[tok] {
			t.Errorf("the token of %s was sent twice", m.To)
		}
		tokens[tok] = true
	}
	for _, e := range emails {
		if perAddress[e] != 1 {
			t.Errorf("%s got %d reset messages, want 1", e, perAddress[e])
		}
	}
	for i, base := range nodes {
		t.Logf("node %d delivered %v message(s)", i, mailCounter(t, base, "delivered"))
	}
}
