// Package mailflow drives the account lifecycle by email end to end, from
// outside: the real userd binary (test/userdproc) sends to real SMTP
// servers (test/smtpserver: Debian's aiosmtpd, and an in-process go-smtp
// server that fails on demand), and the tests read what arrives, follow
// its links over HTTP, and watch the outbox through /metrics, the audit
// trail and the log. Tests that need PostgreSQL use
// USERD_TEST_POSTGRES_DSN (required when CI=true).
package mailflow

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver that makes the test schemas

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/smtpserver"
	"github.com/userd/userd/test/userdproc"
)

// binary is the userd binary built once for the package.
var binary string

const (
	adminEmail    = "root@example.com"
	adminPassword = "root-Passphrase-42"
	userPassword  = "mailflow-Passphrase-7"
	// mailFrom is USERD_MAIL_FROM of every node; fromAddress its address.
	mailFrom    = "Accounts Desk <accounts@mail.example.test>"
	fromAddress = "accounts@mail.example.test"
	// publicURL is USERD_PUBLIC_URL of every node: not where the node
	// listens, so that a link proves it was made from the setting. The
	// tests follow a link by sending its path and query to the node.
	publicURL = "https://accounts.example.test"
	// Subjects of the embedded English templates.
	subjectVerify          = "Confirm your email address"
	subjectReset           = "Reset your password"
	subjectPasswordChanged = "Your password was changed"
	subjectEmailChanged    = "Your email address was changed"
)

func TestMain(m *testing.M) { os.Exit(userdproc.RunTests(m, "userd-mailflow-", &binary)) }

// baseEnv is the configuration a test starts from, on SQLite in dir: a
// bootstrap admin, cheap password hashing, no per-IP limits (every request
// comes from 127.0.0.1) and no per-account mail budget, the mail settings
// of the package, and .eml files (should a test leave USERD_SMTP_URL
// unset) in dir rather than in the package's directory.
func baseEnv(dir string) map[string]string {
	return map[string]string{
		"USERD_DB_DSN":                   filepath.Join(dir, "userd.db"),
		"USERD_ARGON2_MEMORY_KIB":        "64",
		"USERD_ARGON2_ITERATIONS":        "1",
		"USERD_BOOTSTRAP_ADMIN_EMAIL":    adminEmail,
		"USERD_BOOTSTRAP_ADMIN_PASSWORD": adminPassword,
		"USERD_LOG_LEVEL":                "info",
		"USERD_AUTH_IP_LIMIT":            "0",
		"USERD_REGISTER_IP_LIMIT":        "0",
		"USERD_MAIL_MIN_INTERVAL":        "0",
		"USERD_MAIL_MAX_PER_HOUR":        "0",
		"USERD_MAIL_FROM":                mailFrom,
		"USERD_PUBLIC_URL":               publicURL,
		"USERD_MAIL_DIR":                 filepath.Join(dir, "mail"),
		"USERD_SHUTDOWN_TIMEOUT":         "5s",
	}
}

// smtpEnv is baseEnv sending to the SMTP server at smtpURL.
func smtpEnv(dir, smtpURL string) map[string]string {
	env := baseEnv(dir)
	env["USERD_SMTP_URL"] = smtpURL
	return env
}

// mail is a received message, parsed, with its envelope.
type mail struct {
	smtpserver.Parsed
	envelope smtpserver.Message
	// link is the text part's link (alone on its line), "" when none.
	link string
}

// parseAll parses every message a server received.
func parseAll(t testing.TB, msgs []smtpserver.Message) []mail {
	t.Helper()
	out := make([]mail, len(msgs))
	for i, m := range msgs {
		p, err := smtpserver.ParseMessage(m.Raw)
		if err != nil {
			t.Fatalf("message %d does not parse: %v\n%s", i, err, m.Raw)
		}
		out[i] = mail{Parsed: p, envelope: m, link: smtpserver.LinkFrom(p.Text)}
	}
	return out
}

// waitMail waits until the server has received a message that match
// accepts, and returns the first such message, or fails the test after
// timeout.
func waitMail(t testing.TB, s smtpserver.Server, timeout time.Duration, what string, match func(mail) bool) mail {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		all := parseAll(t, s.Received())
		if i := slices.IndexFunc(all, match); i >= 0 {
			return all[i]
		}
		if time.Now().After(deadline) {
			var got []string
			for _, m := range all {
				got = append(got, fmt.Sprintf("%q to %s", m.Subject, m.To))
			}
			t.Fatalf("no %s after %v; received: %v", what, timeout, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// to matches a message to addr with the subject.
func to(addr, subject string) func(mail) bool {
	return func(m mail) bool { return m.To == addr && m.Subject == subject }
}

// linkTokenPattern is a link token: 32 bytes, base64url without padding.
var linkTokenPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// checkMessage fails the test unless m is a well-formed message of
// userd: multipart/alternative with a text and an HTML part, from
// USERD_MAIL_FROM, to addr, in the envelope as in the header.
func checkMessage(t testing.TB, m mail, addr string) {
	t.Helper()
	if m.ContentType != "multipart/alternative" || !slices.Equal(m.Parts, []string{"text/plain", "text/html"}) {
		t.Errorf("%q: content type %s with parts %v, want multipart/alternative of text/plain and text/html",
			m.Subject, m.ContentType, m.Parts)
	}
	if m.From != fromAddress || m.Header.Get("From") == "" {
		t.Errorf("%q: From %q (%s), want %s", m.Subject, m.From, m.Header.Get("From"), fromAddress)
	}
	if !strings.Contains(m.Header.Get("From"), "Accounts Desk") {
		t.Errorf("%q: From %q lacks the name of USERD_MAIL_FROM", m.Subject, m.Header.Get("From"))
	}
	if id := m.Header.Get("Message-Id"); !strings.HasSuffix(id, "@mail.example.test>") {
		t.Errorf("%q: Message-ID %q, want one of the domain of USERD_MAIL_FROM", m.Subject, id)
	}
	if m.envelope.From != "" && m.envelope.From != fromAddress {
		t.Errorf("%q: MAIL FROM %q, want %s", m.Subject, m.envelope.From, fromAddress)
	}
	if m.To != addr || m.envelope.To != nil && !slices.Equal(m.envelope.To, []string{addr}) {
		t.Errorf("%q: To %q, RCPT TO %v, want %s", m.Subject, m.To, m.envelope.To, addr)
	}
	if strings.TrimSpace(m.Text) == "" || !strings.Contains(m.HTML, "<html") {
		t.Errorf("%q: an empty part: text %q, HTML %q", m.Subject, m.Text, m.HTML)
	}
}

// linkToken checks that m's text part has a link, alone on its line, to
// USERD_PUBLIC_URL + page, that the HTML part has the same link, and
// returns the link's token.
func linkToken(t testing.TB, m mail, page string) string {
	t.Helper()
	prefix := publicURL + page + "?token="
	if !strings.HasPrefix(m.link, prefix) {
		t.Fatalf("%q: the text part's link %q does not start with %s; text:\n%s", m.Subject, m.link, prefix, m.Text)
	}
	token := strings.TrimPrefix(m.link, prefix)
	if !linkTokenPattern.MatchString(token) {
		t.Fatalf("%q: link token %q is not 43 base64url characters", m.Subject, token)
	}
	if !strings.Contains(m.HTML, m.link) {
		t.Errorf("%q: the HTML part lacks the link %s", m.Subject, m.link)
	}
	return token
}

// onNode is the link as a request to the node at base: its path and
// query on the node's address.
func onNode(t testing.TB, base, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return base + u.RequestURI()
}

// mailCounter reads userd_outbox_messages_total of kind mail and result
// (delivered, retried, given_up).
func mailCounter(t testing.TB, base, result string) float64 {
	t.Helper()
	v, _ := kit.Metric(t, base, "userd_outbox_messages_total", "kind", "mail", "result", result)
	return v
}

// backlog reads userd_outbox_backlog, failing the test without it.
func backlog(t testing.TB, base string) float64 {
	t.Helper()
	v, ok := kit.Metric(t, base, "userd_outbox_backlog")
	if !ok {
		t.Fatal("/metrics has no userd_outbox_backlog")
	}
	return v
}

// auditEvent is one entry of GET /api/audit.
type auditEvent struct {
	Type      string `json:"type"`
	ActorID   string `json:"actorId"`
	SubjectID string `json:"subjectId"`
	Detail    string `json:"detail"`
}

// auditTrail reads the whole audit trail as an admin, page by page, and
// returns it with the raw answers (to look for what must not be there).
func auditTrail(t testing.TB, base, adminToken string) ([]auditEvent, string) {
	t.Helper()
	var (
		all []auditEvent
		raw strings.Builder
	)
	next := "/api/audit?limit=200"
	for next != "" {
		r := kit.Send(t, http.MethodGet, base+next, nil, adminToken)
		kit.Expect(t, "GET "+next, r, http.StatusOK, "")
		raw.Write(r.Body)
		var page []auditEvent
		if err := json.Unmarshal(r.Body, &page); err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		next = ""
		if link := r.Header.Get("Link"); link != "" {
			if m := regexp.MustCompile(`^<([^>]+)>; rel="next"`).FindStringSubmatch(link); m != nil {
				next = m[1]
			}
		}
	}
	return all, raw.String()
}

// hasEvent says whether the trail has an event of type about subject.
func hasEvent(events []auditEvent, typ, subject string) bool {
	return slices.ContainsFunc(events, func(e auditEvent) bool { return e.Type == typ && e.SubjectID == subject })
}

// postgresSchema is a fresh schema of USERD_TEST_POSTGRES_DSN for the
// nodes of one test.
func postgresSchema(t *testing.T) string { return userdproc.PostgresSchema(t, "userd_mailflow_") }

// postgresEnv is baseEnv on the PostgreSQL database dsn, with the secret
// key every node of one deployment shares.
func postgresEnv(dir, dsn, secretKey string) map[string]string {
	env := baseEnv(dir)
	env["USERD_DB_DRIVER"] = "postgres"
	env["USERD_DB_DSN"] = dsn
	env["USERD_SECRET_KEY"] = secretKey
	return env
}

// newSecretKey is a fresh USERD_SECRET_KEY.
func newSecretKey() string { return secretbox.EncodeKey(secretbox.NewKey()) }

// startNode starts a node of env and fails the test unless it is ready.
func startNode(t *testing.T, env map[string]string) *userdproc.Node {
	t.Helper()
	n := userdproc.New(t, binary, env)
	n.Start()
	return n
}
