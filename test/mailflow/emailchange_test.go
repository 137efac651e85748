package mailflow

import (
	"net/http"
	netmail "net/mail"
	"strings"
	"testing"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/smtpserver"
)

// hostileName is what an attacker puts on an account to have userd mail
// it to strangers: a URL and a phone number, in a message userd signs.
const hostileName = "Call +1 555 0100, www.refund.example"

// TestAiosmtpdEmailChangeMailsNoChosenTextToStrangers is issue 24's
// finding 5 end to end, delivered to Debian's aiosmtpd: an account moved
// to a stranger's address and back mailed the stranger "confirm your
// address" and "your address was changed", greeting them with the
// account's name (in the text and as the display name of To), as often
// as the PUTs came, and the link's page named neither the address nor
// the account. Now a message to an address not verified carries nothing
// the requester chose, a change of email takes from the account's mail
// budget (429 mail_budget_spent past it), and the page names the address
// it verifies. A registration with a stranger's address is nameless too.
func TestAiosmtpdEmailChangeMailsNoChosenTextToStrangers(t *testing.T) {
	t.Parallel()
	smtp := smtpserver.StartAiosmtpd(t)
	env := smtpEnv(t.TempDir(), smtp.URL())
	// The defaults: one message a minute, five an hour.
	env["USERD_MAIL_MIN_INTERVAL"] = "1m"
	env["USERD_MAIL_MAX_PER_HOUR"] = "5"
	base := startNode(t, env).Base

	const (
		mallory  = "mallory@example.com"
		victim   = "victim@example.net"
		stranger = "stranger@example.net"
	)
	// The attacker proves its own address, then moves the account to the
	// victim's.
	u := kit.Register(t, base, hostileName, mallory, userPassword)
	own := waitMail(t, smtp, mailWait, "verification of the attacker's address", to(mallory, subjectVerify))
	r := kit.Send(t, http.MethodPost, base+"/auth/email-verification/confirm",
		map[string]string{"token": linkToken(t, own, "/account/verify-email")}, "")
	kit.Expect(t, "confirm the attacker's address", r, http.StatusOK, "")
	session := kit.Login(t, base, mallory, userPassword)
	r = kit.Send(t, http.MethodPut, base+"/api/users/"+u.ID, map[string]string{"email": victim}, session.AccessToken)
	kit.Expect(t, "move the account to the victim's address", r, http.StatusOK, "")

	toVictim := waitMail(t, smtp, mailWait, "verification to the victim", to(victim, subjectVerify))
	checkMessage(t, toVictim, victim)
	wantNothingChosen(t, toVictim)
	// The notice to the attacker's verified address names the new one.
	notice := waitMail(t, smtp, mailWait, "notice to the attacker's old address", to(mallory, subjectEmailChanged))
	if !strings.Contains(notice.Text, victim) {
		t.Errorf("the notice to a verified old address does not name the new one:\n%s", notice.Text)
	}

	// The link's page names the address it verifies, and not the name.
	r = kit.Send(t, http.MethodGet, onNode(t, base, toVictim.link), nil, "")
	kit.Expect(t, "GET the victim's verification page", r, http.StatusOK, "")
	if body := string(r.Body); !strings.Contains(body, victim) || strings.Contains(body, "555") {
		t.Errorf("the verification page does not name %s, or names the account:\n%s", victim, body)
	}

	// Back at once: refused by the account's budget, nothing sent.
	session = kit.Login(t, base, victim, userPassword)
	r = kit.Send(t, http.MethodPut, base+"/api/users/"+u.ID, map[string]string{"email": mallory}, session.AccessToken)
	kit.Expect(t, "move the account back at once", r, http.StatusTooManyRequests, "mail_budget_spent")
	if got := r.Header.Get("Retry-After"); got == "" || got == "0" {
		t.Errorf("Retry-After %q", got)
	}

	// A registration with a stranger's address: nameless too.
	kit.Register(t, base, hostileName, stranger, userPassword)
	toStranger := waitMail(t, smtp, mailWait, "verification to the stranger", to(stranger, subjectVerify))
	wantNothingChosen(t, toStranger)

	// Four messages: the attacker's verification, the victim's, the
	// notice to the attacker, the stranger's. Nothing of the refused
	// change (its messages would have been written in its request).
	if got := parseAll(t, smtp.Received()); len(got) != 4 {
		var sent []string
		for _, m := range got {
			sent = append(sent, m.Subject+" → "+m.To)
		}
		t.Errorf("%d messages, want 4: %v", len(got), sent)
	}
}

// wantNothingChosen fails the test if m greets its reader by the
// account's name or puts it in the display name of To.
func wantNothingChosen(t *testing.T, m mail) {
	t.Helper()
	to, err := netmail.ParseAddress(m.Header.Get("To"))
	if err != nil {
		t.Fatalf("%q: To %q: %v", m.Subject, m.Header.Get("To"), err)
	}
	if to.Name != "" {
		t.Errorf("%q to %s: To has the display name %q", m.Subject, m.To, to.Name)
	}
	for _, part := range []string{m.Text, m.HTML} {
		if strings.Contains(part, "555") || strings.Contains(part, "refund") {
			t.Errorf("%q to %s shows the account's name:\n%s", m.Subject, m.To, part)
		}
	}
}
