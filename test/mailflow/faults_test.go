package mailflow

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver that reads the node's outbox in TestRestartBetweenClaimAndSend

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/smtpserver"
	"github.com/userd/userd/test/userdproc"
)

// retryWait bounds the wait for a message that failed once: the first
// retry comes about 5 s after the failure.
const retryWait = 20 * time.Second

// TestTransientFailureRetried sends the verification of a new account to
// a server that fails it for a while: each failure leaves the message in
// the outbox (the backlog shows it), counts a retry, and the message
// arrives, once, as soon as the server recovers.
func TestTransientFailureRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mode smtpserver.Mode
	}{
		{"421_at_mail", smtpserver.Mode{Stage: smtpserver.StageMail, Code: 421}},
		{"451_at_rcpt", smtpserver.Mode{Stage: smtpserver.StageRcpt, Code: 451}},
		{"451_at_end_of_data", smtpserver.Mode{Stage: smtpserver.StageData, Code: 451}},
		{"dropped_in_data", smtpserver.Mode{Stage: smtpserver.StageData, Drop: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			smtp := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
			smtp.SetMode(tc.mode)
			node := startNode(t, smtpEnv(t.TempDir(), smtp.URL()))
			const email = "grace@example.com"
			u := kit.Register(t, node.Base, "Grace Hopper", email, userPassword)

			kit.Eventually(t, retryWait, "a retry counted (userd_outbox_messages_total{result=retried})", func() bool {
				return mailCounter(t, node.Base, "retried") >= 1
			})
			if n := backlog(t, node.Base); n < 1 {
				t.Errorf("backlog %v while the message waits, want at least 1", n)
			}
			if got := len(smtp.Messages()); got != 0 {
				t.Fatalf("%d messages arrived while the server failed them", got)
			}
			if n := mailCounter(t, node.Base, "given_up"); n != 0 {
				t.Fatalf("a temporary failure gave %v message(s) up", n)
			}

			smtp.SetMode(smtpserver.Mode{})
			m := waitMail(t, smtp, retryWait, "the verification after the server recovered", to(email, subjectVerify))
			checkMessage(t, m, email)
			token := linkToken(t, m, "/account/verify-email")
			kit.Eventually(t, 10*time.Second, "an empty backlog", func() bool { return backlog(t, node.Base) == 0 })
			if got := len(smtp.Messages()); got != 1 {
				t.Errorf("%d messages arrived, want the one, once", got)
			}
			r := kit.Send(t, http.MethodPost, node.Base+"/auth/email-verification/confirm", map[string]string{"token": token}, "")
			kit.Expect(t, "confirm with the retried message's token", r, http.StatusOK, "")
			if !strings.Contains(string(r.Body), u.ID) {
				t.Errorf("confirm answered another user: %s", r.Body)
			}
		})
	}
}

// TestStalledServerRetried: a server that holds the reply to DATA longer
// than the mailer's 10 s timeout fails the send, which is retried and
// arrives. The server may keep the stalled copy too: at least once means
// a duplicate is allowed, and every copy carries the same link.
func TestStalledServerRetried(t *testing.T) {
	t.Parallel()
	smtp := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	smtp.SetMode(smtpserver.Mode{Stage: smtpserver.StageData, Stall: 12 * time.Second})
	node := startNode(t, smtpEnv(t.TempDir(), smtp.URL()))
	const email = "stall@example.com"
	kit.Register(t, node.Base, "Stalled", email, userPassword)

	kit.Eventually(t, retryWait, "a retry after the timeout", func() bool { return mailCounter(t, node.Base, "retried") >= 1 })
	smtp.SetMode(smtpserver.Mode{})
	// Delivered once the sender has seen a 250: the stalled copy, kept by
	// the server after the sender gave up on it, does not count.
	kit.Eventually(t, 2*retryWait, "the retry delivered", func() bool {
		return mailCounter(t, node.Base, "delivered") >= 1 && backlog(t, node.Base) == 0
	})
	waitMail(t, smtp, mailWait, "the verification after the stall", to(email, subjectVerify))
	msgs := parseAll(t, smtp.Received())
	t.Logf("%d cop(ies) arrived", len(msgs))
	if len(msgs) > 2 {
		t.Errorf("%d copies arrived, want one, or two with the stalled one", len(msgs))
	}
	for _, m := range msgs {
		if m.link != msgs[0].link {
			t.Errorf("copies differ: %s and %s", m.link, msgs[0].link)
		}
	}
}

// TestRejectedMailGivenUp: a 5xx reply gives the message up at once: an
// error in the log, the given_up counter, a mail.given_up event in the
// audit trail, nothing left in the outbox, and the message never arrives,
// even when the server takes mail again.
func TestRejectedMailGivenUp(t *testing.T) {
	t.Parallel()
	smtp := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	smtp.SetMode(smtpserver.Mode{Stage: smtpserver.StageRcpt, Code: 550})
	node := startNode(t, smtpEnv(t.TempDir(), smtp.URL()))
	const email = "nobody@example.com"
	u := kit.Register(t, node.Base, "Nobody", email, userPassword)

	kit.Eventually(t, retryWait, "the message given up (userd_outbox_messages_total{result=given_up})", func() bool {
		return mailCounter(t, node.Base, "given_up") == 1
	})
	if n := mailCounter(t, node.Base, "retried"); n != 0 {
		t.Errorf("a 550 was retried %v time(s)", n)
	}
	kit.Eventually(t, 5*time.Second, "an empty backlog", func() bool { return backlog(t, node.Base) == 0 })
	line := logLine(t, node, "mail given up")
	if line["level"] != "ERROR" || line["user_id"] != u.ID || line["template"] != "verify_email" {
		t.Errorf("the log line of the given-up message: %v, want level ERROR, user_id %s, template verify_email", line, u.ID)
	}
	admin := kit.Login(t, node.Base, adminEmail, adminPassword)
	events, _ := auditTrail(t, node.Base, admin.AccessToken)
	if !hasEvent(events, "mail.given_up", u.ID) {
		t.Errorf("no mail.given_up event about the account in the audit trail: %v", events)
	}

	// The server takes mail again: a new request arrives, the given-up
	// message does not.
	smtp.SetMode(smtpserver.Mode{})
	r := kit.Send(t, http.MethodPost, node.Base+"/auth/email-verification", map[string]string{"email": email}, "")
	kit.Expect(t, "POST /auth/email-verification", r, http.StatusAccepted, "")
	waitMail(t, smtp, mailWait, "the verification asked for again", to(email, subjectVerify))
	kit.Eventually(t, 5*time.Second, "an empty backlog", func() bool { return backlog(t, node.Base) == 0 })
	if got := len(smtp.Messages()); got != 1 {
		t.Errorf("%d messages arrived, want only the one asked for after the server recovered", got)
	}
}

// logLine returns the first JSON line of the node's log whose msg is msg,
// or fails the test.
func logLine(t testing.TB, node *userdproc.Node, msg string) map[string]any {
	t.Helper()
	for line := range strings.Lines(node.Log.String()) {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			return rec
		}
	}
	t.Fatalf("no log line %q; log:\n%s", msg, node.Log.String())
	return nil
}

// TestSMTPUnreachableAtStart: a mail server that is not there does not
// stop the service: it starts, is ready, takes requests; the messages wait
// in the outbox (the backlog shows them), sealed, and a restart with the
// server back delivers them: nothing is lost.
func TestSMTPUnreachableAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	closed := "smtp://" + userdproc.FreeAddr(t) + "?tls=none" // nothing listens there
	node := startNode(t, smtpEnv(dir, closed))
	const email = "lin@example.com"
	kit.Register(t, node.Base, "Lin", email, userPassword)
	r := kit.Send(t, http.MethodPost, node.Base+"/auth/password-reset", map[string]string{"email": email}, "")
	kit.Expect(t, "POST /auth/password-reset", r, http.StatusAccepted, "")
	r = kit.Send(t, http.MethodGet, node.Base+"/readyz", nil, "")
	kit.Expect(t, "GET /readyz with the mail server away", r, http.StatusOK, "")
	// The verification and the reset message wait (once the request is
	// answered, which needs no mail server).
	kit.Eventually(t, 10*time.Second, "two messages waiting", func() bool {
		return backlog(t, node.Base) >= 2 && mailCounter(t, node.Base, "retried") >= 1
	})
	if age, ok := kit.Metric(t, node.Base, "userd_outbox_oldest_age_seconds"); !ok || age <= 0 {
		t.Errorf("userd_outbox_oldest_age_seconds %v (found %v) while messages wait", age, ok)
	}
	r = kit.Send(t, http.MethodGet, node.Base+"/readyz", nil, "")
	kit.Expect(t, "GET /readyz with messages waiting", r, http.StatusOK, "")
	node.Stop()
	stored := databaseBytes(t, dir)

	// Restarted on the same database, with a server that takes mail.
	smtp := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	again := startNode(t, smtpEnv(dir, smtp.URL()))
	verify := waitMail(t, smtp, 30*time.Second, "the verification after the restart", to(email, subjectVerify))
	reset := waitMail(t, smtp, 30*time.Second, "the reset message after the restart", to(email, subjectReset))
	kit.Eventually(t, 10*time.Second, "an empty backlog", func() bool { return backlog(t, again.Base) == 0 })
	if got := len(smtp.Messages()); got != 2 {
		t.Errorf("%d messages arrived, want the two, once each", got)
	}
	for _, tok := range []string{linkToken(t, verify, "/account/verify-email"), linkToken(t, reset, "/account/reset-password")} {
		if bytes.Contains(stored, []byte(tok)) {
			t.Errorf("the database held the link token %s in the clear while its message waited", tok)
		}
	}
	r = kit.Send(t, http.MethodPost, again.Base+"/auth/password-reset/confirm",
		map[string]string{"token": linkToken(t, reset, "/account/reset-password"), "password": "delivered-Late-2026"}, "")
	kit.Expect(t, "reset with the token delivered after the restart", r, http.StatusNoContent, "")
}

// databaseBytes is everything the SQLite database of dir holds on disk.
func databaseBytes(t testing.TB, dir string) []byte {
	t.Helper()
	var all []byte
	for _, name := range []string{"userd.db", "userd.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	if len(all) == 0 {
		t.Fatal("no database files")
	}
	return all
}

// TestRestartBetweenClaimAndSend kills userd (SIGKILL) while it is in the
// middle of sending a message, and starts it again with the server
// healthy: the messages are delivered (at least once), not lost. Two
// ways to be in the middle: the messages of a change of email (the notice
// to the old address, the verification of the new one), claimed together
// by the sender loop, which dies sending the first; and the message of a
// request for a link, which the sender sends right after answering the
// request, holding it in the outbox as if claimed.
//
// Either way the dead node's hold on the messages lasts the lease, 2
// minutes (docs/mail.md), and nothing ends it sooner, so the restarted
// node sends them once the lease has run out. Rather than wait 2
// minutes, the test moves the messages' times in the database back by the
// lease, as the clock would.
func TestRestartBetweenClaimAndSend(t *testing.T) {
	t.Parallel()
	const email = "crash@example.com"
	for _, tc := range []struct {
		name string
		// cause makes messages while the server stalls; the account of
		// email exists.
		cause func(t *testing.T, base string)
		// want are the messages, by address and subject, and page the
		// page of a reset link to use, if any.
		want [][2]string
		page string
	}{
		{"claimed_messages", func(t *testing.T, base string) {
			tok := kit.Login(t, base, email, userPassword)
			r := kit.Send(t, http.MethodPut, base+"/api/users/"+tok.User.ID, map[string]string{"email": "moved-" + email}, tok.AccessToken)
			kit.Expect(t, "change of email", r, http.StatusOK, "")
		}, [][2]string{{email, subjectEmailChanged}, {"moved-" + email, subjectVerify}}, ""},
		{"requested_link", func(t *testing.T, base string) {
			r := kit.Send(t, http.MethodPost, base+"/auth/password-reset", map[string]string{"email": email}, "")
			kit.Expect(t, "POST /auth/password-reset", r, http.StatusAccepted, "")
		}, [][2]string{{email, subjectReset}}, "/account/reset-password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			smtp := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
			env := smtpEnv(dir, smtp.URL())
			node := startNode(t, env)
			kit.Register(t, node.Base, "Crash", email, userPassword)
			waitMail(t, smtp, mailWait, "the verification", to(email, subjectVerify))
			kit.Eventually(t, 10*time.Second, "an empty backlog", func() bool { return backlog(t, node.Base) == 0 })

			// The server reads the whole message, then holds its reply:
			// the sender waits there, the message taken and not sent.
			smtp.SetMode(smtpserver.Mode{Stage: smtpserver.StageData, Stall: time.Minute})
			// The sender keeps its connection; closed, the next send
			// opens one, which says when it begins.
			smtp.CloseConnections()
			conns := smtp.Connections()
			tc.cause(t, node.Base)
			kit.Eventually(t, 5*time.Second, "the send under way", func() bool { return smtp.Connections() > conns })
			time.Sleep(500 * time.Millisecond) // well within the mailer's 10 s timeout
			node.Kill()
			passLease(t, filepath.Join(dir, "userd.db"))

			smtp.SetMode(smtpserver.Mode{})
			again := userdproc.New(t, binary, env)
			again.Start()
			var m mail
			for _, w := range tc.want {
				m = waitMail(t, smtp, mailWait, w[1]+" to "+w[0]+" after the restart", to(w[0], w[1]))
			}
			kit.Eventually(t, 10*time.Second, "an empty backlog", func() bool { return backlog(t, again.Base) == 0 })
			if tc.page != "" {
				token := linkToken(t, m, tc.page)
				r := kit.Send(t, http.MethodPost, again.Base+"/auth/password-reset/confirm",
					map[string]string{"token": token, "password": "after-The-Crash-2026"}, "")
				kit.Expect(t, "reset with the token delivered after the crash", r, http.StatusNoContent, "")
			}
		})
	}
}

// deliveryLease is how long a sender holds a message it took
// (docs/mail.md, "The outbox").
const deliveryLease = 2 * time.Minute

// passLease checks that the messages in the outbox of the SQLite
// database at path are held by the killed node, none tried yet, then
// moves their times back by the lease, as 2 minutes of the clock would,
// and checks that they are due.
func passLease(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	due := func() (rows, attempts, due int) {
		now := time.Now().UnixMicro()
		var n sql.NullInt64
		err := db.QueryRow(`SELECT COUNT(*), COALESCE(MAX(attempts), 0),
			SUM(CASE WHEN next_attempt_at <= ? AND (claimed_until IS NULL OR claimed_until <= ?) THEN 1 ELSE 0 END)
			FROM outbox_messages WHERE kind = 'mail'`, now, now).Scan(&rows, &attempts, &n)
		if err != nil {
			t.Fatal(err)
		}
		return rows, attempts, int(n.Int64)
	}
	rows, attempts, n := due()
	if rows == 0 || attempts != 0 || n != 0 {
		t.Fatalf("after the kill the outbox holds %d mail(s), %d attempt(s), %d due; want them held, not tried", rows, attempts, n)
	}
	t.Logf("the killed node held %d message(s)", rows)
	lease := deliveryLease.Microseconds()
	if _, err := db.Exec(`UPDATE outbox_messages SET next_attempt_at = next_attempt_at - ?,
		claimed_until = claimed_until - ?`, lease, lease); err != nil {
		t.Fatal(err)
	}
	if _, _, n := due(); n != rows {
		t.Fatalf("%d of %d messages due 2 minutes later: is the lease longer than docs/mail.md says?", n, rows)
	}
}

// TestGracefulStopGivesClaimsBack stops userd the ordinary way (SIGTERM,
// as a deployment does) while it is sending a message, and starts it
// again with the server healthy: the message goes out at once, as the
// contract wants in normal operation (within 5 s of the change; the
// test allows 15 s), not after the 2-minute lease of the stopped node.
// The send in hand was abandoned, so the server may keep a copy too.
func TestGracefulStopGivesClaimsBack(t *testing.T) {
	t.Parallel()
	smtp := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	smtp.SetMode(smtpserver.Mode{Stage: smtpserver.StageData, Stall: time.Minute})
	env := smtpEnv(t.TempDir(), smtp.URL())
	node := startNode(t, env)
	const email = "deploy@example.com"
	kit.Register(t, node.Base, "Deploy", email, userPassword)
	kit.Eventually(t, 5*time.Second, "the sender connected", func() bool { return smtp.Connections() >= 1 })
	time.Sleep(500 * time.Millisecond) // well within the mailer's 10 s timeout
	node.Stop()

	smtp.SetMode(smtpserver.Mode{})
	again := userdproc.New(t, binary, env)
	again.Start()
	m := waitMail(t, smtp, mailWait, "the verification after the restart", to(email, subjectVerify))
	linkToken(t, m, "/account/verify-email")
	kit.Eventually(t, 10*time.Second, "an empty backlog", func() bool { return backlog(t, again.Base) == 0 })
}
