package httpapi_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

// Findings 5, 6 and 7 of issue 24: a change of email mailed any address
// as often as asked, with the account's name in it; a PUT of someone
// else's email asked "is this email registered?" without limit; a reset
// link outlived a change of password.

// withMailBudget sets the account's mail budget (USERD_MAIL_MIN_INTERVAL,
// USERD_MAIL_MAX_PER_HOUR).
func withMailBudget(b domain.MailBudget) serverOption {
	return func(c *serverConfig) { c.app.MailBudget = b }
}

// hostileName is a name that says something to whoever reads it: what an
// attacker puts on an account to have userd mail it to a stranger.
const hostileName = "Call +1 555 0100 now, www.refund.example"

// changeEmail sends the PUT that changes the email of the account id.
func (s *testServer) changeEmail(id, email, token string, opts ...reqOption) response {
	s.t.Helper()
	return s.do("PUT", "/api/users/"+id, map[string]string{"email": email}, append(opts, withToken(token))...)
}

// changeOwnEmail changes the email of the customer u signed in as
// session, and signs in again: the change ends every session.
func (s *testServer) changeOwnEmail(u userBody, session *tokenBody, email string) {
	s.t.Helper()
	wantJSON(s.t, s.changeEmail(u.ID, email, session.AccessToken), http.StatusOK, nil)
	*session = s.login(email, custPassword)
}

// An email changed back and forth mailed "confirm your address" and "your
// address was changed" to any address as fast as the PUTs came. Now a
// user's own change of email takes from the account's mail budget (one a
// minute, five an hour by default): past it, 429 mail_budget_spent with
// Retry-After and nothing changed, nothing sent. An admin's change of the
// user's email is not held to it.
func TestAttack_email_changed_back_and_forth_is_held_to_the_mail_budget(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withMailBudget(domain.DefaultMailBudget))
	admin := s.adminToken()
	u, tokens := s.customer("Mallory", "mallory@example.com")
	s.deliver()
	before := len(s.mailer.Sent())
	addresses := []string{"victim@example.net", "mallory@example.com"}

	changed := 0
	for i := range 6 {
		// One a minute: the second change at once is refused.
		s.changeOwnEmail(u, &tokens, addresses[i%2])
		changed++
		next := addresses[(i+1)%2]
		if changed == 5 {
			// Five an hour: the sixth waits for the hour of the last
			// (at most), whatever the minute says.
			s.clock.Advance(time.Minute)
			res := s.changeEmail(u.ID, next, tokens.AccessToken)
			wantProblem(t, res, http.StatusTooManyRequests, "mail_budget_spent")
			if wait, _ := strconv.Atoi(res.Header.Get("Retry-After")); wait < 59*60 || wait > 60*60+1 {
				t.Errorf("Retry-After %q past five an hour, want about an hour", res.Header.Get("Retry-After"))
			}
			break
		}
		res := s.changeEmail(u.ID, next, tokens.AccessToken)
		wantProblem(t, res, http.StatusTooManyRequests, "mail_budget_spent")
		if got := res.Header.Get("Retry-After"); got != "60" {
			t.Errorf("Retry-After %q a moment after a change, want 60", got)
		}
		s.clock.Advance(time.Minute)
	}
	s.deliver()
	// Two messages a change: the link to the new address, the notice to
	// the old one; nothing for the refused ones.
	if got := len(s.mailer.Sent()) - before; got != 2*changed {
		t.Errorf("%d messages after %d changes, want %d", got, changed, 2*changed)
	}
	if me := s.me(tokens.AccessToken); me.Email != addresses[(changed-1)%2] {
		t.Errorf("after the refusals the email is %s, want %s", me.Email, addresses[(changed-1)%2])
	}

	// An admin's change is not held to the user's budget.
	wantJSON(t, s.changeEmail(u.ID, "mallory@example.org", admin), http.StatusOK, nil)
	// And after the hour, the user may again.
	s.clock.Advance(time.Hour)
	tokens = s.login("mallory@example.org", custPassword)
	s.changeOwnEmail(u, &tokens, "mallory@example.com")
}

// A PUT that may change the email mails two addresses: it takes from the
// client IP's /auth allowance, as a PUT with a password does; one of the
// name alone does not.
func TestAttack_email_changes_take_from_the_auth_ip_allowance(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAuthIPLimit(3))
	admin := s.adminToken()                   // from httptest's 192.0.2.1
	u := s.register("Ada", "ada@example.com") // from there too
	sender := withPeer("198.51.100.7:1")
	for i := range 3 {
		wantJSON(t, s.changeEmail(u.ID, "ada"+strconv.Itoa(i)+"@example.net", admin, sender), http.StatusOK, nil)
	}
	res := s.changeEmail(u.ID, "ada9@example.net", admin, sender)
	wantProblem(t, res, http.StatusTooManyRequests, "rate_limited")
	if res.Header.Get("Retry-After") != "20" {
		t.Errorf("Retry-After %q, want 20", res.Header.Get("Retry-After"))
	}
	if res := s.do("PUT", "/api/users/"+u.ID, map[string]string{"name": "Ada King"}, sender, withToken(admin)); res.Status != http.StatusOK {
		t.Fatalf("rename from the same address: %d %s", res.Status, res.Body)
	}
}

// A message to an address not verified carries nothing its requester
// chose: no name in the greeting or the To header (the mail adapter
// shows Mail.Name in both), and the notice to an old address never
// verified does not name the new one. An address verified is still
// greeted by name and told the new address.
func TestAttack_messages_to_an_unverified_address_carry_no_chosen_name(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()

	// Registered with a stranger's address: its verification is nameless.
	s.register(hostileName, "stranger@example.net")
	s.deliver()
	wantNames(t, s.mailsTo("stranger@example.net", domain.MailVerifyEmail), "")

	// An account whose own address is verified, moved to a stranger's
	// and back: the stranger is told nothing chosen; the verified old
	// address is greeted and told the new one.
	u, _ := s.customer(hostileName, "mallory@example.com")
	token := s.linkToken("mallory@example.com", domain.MailVerifyEmail)
	wantJSON(t, s.do("POST", "/auth/email-verification/confirm", map[string]string{"token": token}), http.StatusOK, nil)
	session := s.login("mallory@example.com", custPassword)
	s.changeOwnEmail(u, &session, "victim@example.net")
	s.changeOwnEmail(u, &session, "mallory@example.com")
	s.deliver()
	wantNames(t, s.mailsTo("victim@example.net", domain.MailVerifyEmail), "")
	notices := s.mailsTo("victim@example.net", domain.MailEmailChanged)
	wantNames(t, notices, "")
	if len(notices) == 1 && notices[0].Data["new_email"] != "" {
		t.Errorf("the notice to an address never verified names the new one: %q", notices[0].Data["new_email"])
	}
	toOwner := s.mailsTo("mallory@example.com", domain.MailEmailChanged)
	wantNames(t, toOwner, hostileName)
	if len(toOwner) == 1 && toOwner[0].Data["new_email"] != "victim@example.net" {
		t.Errorf("the notice to the verified old address does not name the new one: %+v", toOwner[0])
	}

	// An admin's new password for the unverified account: the notice to
	// its address is nameless too.
	wantJSON(t, s.do("PUT", "/api/users/"+u.ID, map[string]string{"password": "admin-Set-Passphrase-3"}, withToken(admin)),
		http.StatusOK, nil)
	s.deliver()
	wantNames(t, s.mailsTo("mallory@example.com", domain.MailPasswordChanged), "")
}

// wantNames fails the test unless there is exactly one message and its
// Name is name.
func wantNames(t *testing.T, mails []domain.Mail, name string) {
	t.Helper()
	if len(mails) != 1 {
		t.Fatalf("%d messages, want 1: %+v", len(mails), mails)
	}
	if mails[0].Name != name {
		t.Errorf("%s to %s carries the name %q, want %q", mails[0].Template, mails[0].To, mails[0].Name, name)
	}
}

// A PUT of another account's email answered 409 without limit: "is this
// email registered?" at 1,500 answers a second. Its 409s now take from
// the client IP's hourly registration allowance, as a registration's do;
// past it the answer is 429 rate_limited, which tells nothing. An admin is
// not held to it.
func TestAttack_email_taken_probe_by_update_takes_from_the_registration_allowance(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withRegisterIPLimit(3))
	admin := s.adminToken()
	s.register("Grace", "grace@example.com")
	u, tokens := s.customer("Ada", "ada@example.com")
	prober := withPeer("203.0.113.20:1")
	for range 3 {
		wantProblem(t, s.changeEmail(u.ID, "grace@example.com", tokens.AccessToken, prober), http.StatusConflict, "email_taken")
	}
	res := s.changeEmail(u.ID, "grace@example.com", tokens.AccessToken, prober)
	wantProblem(t, res, http.StatusTooManyRequests, "rate_limited")
	if res.Header.Get("Retry-After") != "1200" {
		t.Errorf("Retry-After %q, want 1200 (3 an hour)", res.Header.Get("Retry-After"))
	}
	// An address that is not taken tells nothing more either: the
	// answer past the allowance is the same 429 for any taken one.
	wantProblem(t, s.changeEmail(u.ID, "root@example.com", tokens.AccessToken, prober), http.StatusTooManyRequests, "rate_limited")
	// One allowance with registrations.
	wantProblem(t, s.do("POST", "/api/users", registration("new@example.com"), prober), http.StatusTooManyRequests, "rate_limited")
	// An admin from that address is told.
	wantProblem(t, s.changeEmail(u.ID, "grace@example.com", admin, prober), http.StatusConflict, "email_taken")
	if me := s.me(tokens.AccessToken); me.Email != "ada@example.com" {
		t.Errorf("the probes changed the email to %s", me.Email)
	}
}

// The account page's change of email asks the same question: each post
// takes from the registration allowance as well as from the /auth one.
func TestAttack_email_taken_probe_by_the_account_page_takes_from_the_registration_allowance(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withRegisterIPLimit(2))
	prober := withPeer("203.0.113.21:1")
	form := url.Values{"email": {"grace@example.com"}, "currentPassword": {custPassword}}
	for range 2 {
		// Not signed in: the sign-in page. The allowance is taken first.
		if res := s.submit("/account/email", form, prober); res.Status == http.StatusTooManyRequests {
			t.Fatalf("refused within the allowance: %s", res.Body)
		}
	}
	res := s.submit("/account/email", form, prober)
	wantHTML(t, res, http.StatusTooManyRequests, "Too many attempts")
	if res.Header.Get("Retry-After") == "" {
		t.Error("a 429 without Retry-After")
	}
	wantProblem(t, s.do("POST", "/api/users", registration("new@example.com"), prober), http.StatusTooManyRequests, "rate_limited")
}

// A reset link mailed before a change of password still set a password
// after it: whoever changed the password after a theft left the thief's
// pending link alive. Every change of password now voids the account's
// reset links, by the user and by an admin alike.
func TestAttack_reset_link_dies_with_a_change_of_password(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	admin := s.adminToken()
	u, tokens := s.customer("Ada", "ada@example.com")
	for _, by := range []struct {
		name, token string
		body        map[string]string
	}{
		{"user", tokens.AccessToken, map[string]string{"password": "ada-New-Passphrase-1", "currentPassword": custPassword}},
		{"admin", admin, map[string]string{"password": "ada-Admin-Passphrase-2"}},
	} {
		if res := s.do("POST", "/auth/password-reset", map[string]string{"email": "ada@example.com"}); res.Status != http.StatusAccepted {
			t.Fatalf("reset request: %d %s", res.Status, res.Body)
		}
		link := s.linkToken("ada@example.com", domain.MailResetPassword)
		wantJSON(t, s.do("PUT", "/api/users/"+u.ID, by.body, withToken(by.token)), http.StatusOK, nil)
		wantProblem(t, s.do("POST", "/auth/password-reset/confirm", map[string]string{"token": link, "password": "thief-Passphrase-99"}),
			http.StatusBadRequest, "invalid_token")
		s.clock.Advance(time.Minute)
		s.login("ada@example.com", by.body["password"])
	}
}
