package attack

import (
	"fmt"
	"net/http"
	netmail "net/mail"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/smtpserver"
	"github.com/userd/userd/test/userdproc"
)

// Findings 5, 6 and 7 of issue 24: what a change of email mails, what a
// PUT of someone else's email tells, and a reset link that outlived a
// change of password.

// hostileName is what an attacker puts on its account to have userd mail
// it to a stranger: a phone number and a URL.
const hostileName = "Call +1 555 0100, www.refund.example"

// mails parses the .eml files a node wrote into dir/mail (no
// USERD_SMTP_URL), waiting up to 10 s until there are at least least.
func mails(t *testing.T, dir string, least int) []smtpserver.Parsed {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		names, err := filepath.Glob(filepath.Join(dir, "mail", "*.eml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(names) >= least || time.Now().After(deadline) {
			out := make([]smtpserver.Parsed, 0, len(names))
			for _, name := range names {
				raw, err := os.ReadFile(name)
				if err != nil {
					t.Fatal(err)
				}
				p, err := smtpserver.ParseMessage(raw)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				out = append(out, p)
			}
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An account changed back and forth between its own address and a
// stranger's mailed the stranger "confirm your address" and "your address
// was changed" at every PUT, greeting them with the account's name (a
// URL and a phone number) and putting it in To. Now the account's mail
// budget (one a minute, five an hour) refuses the changes past it with
// 429 mail_budget_spent, and what reaches the stranger carries no name.
func TestAttack_email_changed_back_and_forth_mails_a_stranger_within_the_budget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := userdproc.New(t, binary, baseEnv(dir))
	n.Start()
	const mallory, victim = "mallory@example.com", "victim@example.net"
	if r := kit.Send(t, http.MethodPost, n.Base+"/api/users", map[string]string{
		"name": hostileName, "email": mallory, "password": userPassword}, ""); r.Status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	session := kit.Login(t, n.Base, mallory, userPassword)
	addresses := []string{victim, mallory}
	var got []string
	changed := 0
	for i := range 10 {
		r := kit.Send(t, http.MethodPut, n.Base+"/api/users/"+session.User.ID,
			map[string]string{"email": addresses[changed%2]}, session.AccessToken)
		got = append(got, fmt.Sprintf("%d %s", r.Status, r.Code()))
		if r.Status == http.StatusOK {
			// The change ended the session.
			session = kit.Login(t, n.Base, addresses[changed%2], userPassword)
			changed++
		}
		if i > 0 && (r.Status != http.StatusTooManyRequests || r.Code() != "mail_budget_spent" || r.Header.Get("Retry-After") == "") {
			t.Errorf("change %d within the minute: %d %s, want 429 mail_budget_spent with Retry-After", i+1, r.Status, r.Body)
		}
	}
	t.Logf("ten changes of email at once: %v", got)
	var toVictim []smtpserver.Parsed
	for _, m := range mails(t, dir, 1+2*changed) {
		if m.To == victim {
			toVictim = append(toVictim, m)
		}
	}
	if len(toVictim) != 1 {
		t.Errorf("%d messages to the stranger, want 1 (the verification of the one change)", len(toVictim))
	}
	for _, m := range toVictim {
		to, err := netmail.ParseAddress(m.Header.Get("To"))
		if err != nil || to.Name != "" || strings.Contains(m.Text, "555") || strings.Contains(m.HTML, "555") {
			t.Errorf("%q to the stranger carries the account's name: To %q\n%s", m.Subject, m.Header.Get("To"), m.Text)
		}
	}
}

// PUT of another account's email was an unlimited "is this email
// registered?" (150 answers 409 in 0.1 s). Its 409s now take from the
// client IP's registration allowance (20 an hour), which the prober's own
// registration started: past it, 429 rate_limited, which tells nothing.
func TestAttack_email_taken_probe_by_update_is_held_to_the_registration_allowance(t *testing.T) {
	t.Parallel()
	env := baseEnv(t.TempDir())
	env["USERD_TRUSTED_PROXIES"] = "127.0.0.1/32"
	n := userdproc.New(t, binary, env)
	n.Start()
	register(t, n.Base, "grace@example.com", from("203.0.113.30"))
	prober := from("198.51.100.30")
	tok := signUp(t, n.Base, "prober@example.com", prober)
	replies := make([]kit.Reply, 40)
	for i := range replies {
		replies[i] = kit.Send(t, http.MethodPut, n.Base+"/api/users/"+tok.User.ID,
			map[string]string{"email": "grace@example.com"}, tok.AccessToken, prober...)
	}
	counts := tally(replies)
	t.Logf("40 probes of a taken email by PUT: %v", counts)
	if counts["409 email_taken"] != 19 || counts["429 rate_limited"] != 21 {
		t.Errorf("answers %v, want 19 × 409 email_taken (20 an hour, less the prober's registration) and 21 × 429 rate_limited", counts)
	}
}

// A reset link mailed before a change of password still set a password
// after it (204): an owner who changed the password after a theft left
// the thief's pending link alive. It is void now.
func TestAttack_reset_link_dies_with_a_change_of_password(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n := userdproc.New(t, binary, baseEnv(dir))
	n.Start()
	const ada = "ada@example.com"
	register(t, n.Base, ada, nil)
	if r := kit.Send(t, http.MethodPost, n.Base+"/auth/password-reset", map[string]string{"email": ada}, ""); r.Status != http.StatusAccepted {
		t.Fatalf("reset request: %d %s", r.Status, r.Body)
	}
	var link string
	for _, m := range mails(t, dir, 2) {
		if l := smtpserver.LinkFrom(m.Text); m.To == ada && strings.Contains(l, "reset-password") {
			link = l
		}
	}
	token, ok := strings.CutPrefix(link[strings.Index(link, "?"):], "?token=")
	if link == "" || !ok {
		t.Fatalf("no reset link in the messages to %s: %q", ada, link)
	}
	session := kit.Login(t, n.Base, ada, userPassword)
	r := kit.Send(t, http.MethodPut, n.Base+"/api/users/"+session.User.ID,
		map[string]string{"password": "owner-New-Passphrase-1", "currentPassword": userPassword}, session.AccessToken)
	if r.Status != http.StatusOK {
		t.Fatalf("change of password: %d %s", r.Status, r.Body)
	}
	r = kit.Send(t, http.MethodPost, n.Base+"/auth/password-reset/confirm",
		map[string]string{"token": token, "password": "thief-Passphrase-99"}, "")
	if r.Status != http.StatusBadRequest || r.Code() != "invalid_token" {
		t.Errorf("the reset link after the change of password: %d %s, want 400 invalid_token", r.Status, r.Body)
	}
	kit.Login(t, n.Base, ada, "owner-New-Passphrase-1")
}
