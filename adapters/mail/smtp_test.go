package mail_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/mail"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/smtpserver"
)

// newSMTPMailer returns a Mailer sending to url, trusting the test
// servers' certificate, with short timeouts.
func newSMTPMailer(t *testing.T, url string, opts mail.Options) *mail.Mailer {
	t.Helper()
	opts.SMTPURL = url
	opts.TLSConfig = &tls.Config{RootCAs: smtpserver.RootCAs(), MinVersion: tls.VersionTLS12}
	if opts.Timeout == 0 {
		opts.Timeout = 3 * time.Second
	}
	m, err := mail.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func send(m *mail.Mailer, msg domain.Mail) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return m.Send(ctx, msg)
}

// checkDelivered parses raw and checks it is msg, link and all.
func checkDelivered(t *testing.T, raw []byte, subject string) smtpserver.Parsed {
	t.Helper()
	p, err := smtpserver.ParseMessage(raw)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, raw)
	}
	if p.Subject != subject || p.To != testTo.String() || p.ContentType != "multipart/alternative" {
		t.Errorf("subject %q to %q as %s", p.Subject, p.To, p.ContentType)
	}
	return p
}

// TestSMTP_aiosmtpd: a message reaches Debian's aiosmtpd intact, in the
// envelope and in the headers, its link alone on a line.
func TestSMTP_aiosmtpd(t *testing.T) {
	t.Parallel()
	srv := smtpserver.StartAiosmtpd(t)
	m := newSMTPMailer(t, srv.URL(), mail.Options{From: "Acme <accounts@acme.test>"})
	if err := send(m, mailFor(domain.MailVerifyEmail, "de-CH,de;q=0.9")); err != nil {
		t.Fatal(err)
	}
	if err := send(m, mailFor(domain.MailResetPassword, "en")); err != nil {
		t.Fatal(err)
	}
	srv.WaitFor(t, 2, 5*time.Second)
	got := srv.Received()
	if got[0].From != "accounts@acme.test" || len(got[0].To) != 1 || got[0].To[0] != testTo.String() {
		t.Errorf("envelope from %q to %v", got[0].From, got[0].To)
	}
	p := checkDelivered(t, got[0].Raw, "Bestätigen Sie Ihre E-Mail-Adresse")
	if smtpserver.LinkFrom(p.Text) != testLink {
		t.Errorf("link %q, want %q", smtpserver.LinkFrom(p.Text), testLink)
	}
	p = checkDelivered(t, got[1].Raw, "Reset your password")
	if smtpserver.LinkFrom(p.Text) != testLink {
		t.Errorf("link %q, want %q", smtpserver.LinkFrom(p.Text), testLink)
	}
}

// TestSMTP_aiosmtpd_STARTTLS: smtp:// without ?tls=none upgrades with
// STARTTLS, which this aiosmtpd requires before MAIL.
func TestSMTP_aiosmtpd_STARTTLS(t *testing.T) {
	t.Parallel()
	srv := smtpserver.StartAiosmtpdStartTLS(t)
	m := newSMTPMailer(t, srv.URL(), mail.Options{})
	if err := send(m, mailFor(domain.MailPasswordChanged, "en")); err != nil {
		t.Fatalf("%v\n%s", err, srv.Output())
	}
	checkDelivered(t, srv.WaitFor(t, 1, 5*time.Second)[0], "Your password was changed")
}

// TestSMTP_STARTTLS_required: a server that does not offer STARTTLS gets
// nothing unless the URL says ?tls=none or ?tls=opportunistic; the error
// is worth a retry (the server may be fixed), not a rejection.
func TestSMTP_STARTTLS_required(t *testing.T) {
	t.Parallel()
	srv := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	m := newSMTPMailer(t, "smtp://"+srv.Address(), mail.Options{})
	err := send(m, mailFor(domain.MailPasswordChanged, "en"))
	if err == nil || errors.Is(err, domain.ErrMailRejected) || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("%v, want a temporary error about STARTTLS", err)
	}
	if n := len(srv.Messages()); n != 0 {
		t.Fatalf("%d messages sent in plain text", n)
	}

	m = newSMTPMailer(t, "smtp://"+srv.Address()+"?tls=opportunistic", mail.Options{})
	if err := send(m, mailFor(domain.MailPasswordChanged, "en")); err != nil {
		t.Fatalf("opportunistic: %v", err)
	}
	srv.WaitFor(t, 1, time.Second)
}

// TestSMTP_STARTTLS_and_auth: with STARTTLS offered, the session is
// upgraded, then authenticated.
func TestSMTP_STARTTLS_and_auth(t *testing.T) {
	t.Parallel()
	srv := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{StartTLS: true, Username: "userd", Password: "pw:@/?"})
	m := newSMTPMailer(t, "smtp://userd:pw%3A%40%2F%3F@"+srv.Address(), mail.Options{})
	if err := send(m, mailFor(domain.MailPasswordChanged, "en")); err != nil {
		t.Fatal(err)
	}
	srv.WaitFor(t, 1, time.Second)
	if srv.Logins() != 1 {
		t.Errorf("%d logins, want 1", srv.Logins())
	}
}

// TestSMTP_implicit_TLS: smtps:// speaks TLS from the start, and
// authenticates; a wrong password is worth a retry, and its error does
// not show the password.
func TestSMTP_implicit_TLS(t *testing.T) {
	t.Parallel()
	srv := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{ImplicitTLS: true, Username: "userd", Password: "right-pw"})
	m := newSMTPMailer(t, srv.URL(), mail.Options{})
	if err := send(m, mailFor(domain.MailPasswordChanged, "en")); err != nil {
		t.Fatal(err)
	}
	checkDelivered(t, srv.WaitFor(t, 1, time.Second)[0], "Your password was changed")
	if srv.Logins() != 1 {
		t.Errorf("%d logins, want 1", srv.Logins())
	}

	m = newSMTPMailer(t, "smtps://userd:wrong-pw@"+srv.Address(), mail.Options{})
	err := send(m, mailFor(domain.MailPasswordChanged, "en"))
	if err == nil || errors.Is(err, domain.ErrMailRejected) || strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("wrong password: %v, want a temporary error without the password", err)
	}

	// A server whose certificate is not trusted gets nothing.
	m, err = mail.New(mail.Options{SMTPURL: srv.URL(), Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close() }()
	if err := send(m, mailFor(domain.MailPasswordChanged, "en")); err == nil || errors.Is(err, domain.ErrMailRejected) {
		t.Fatalf("untrusted certificate: %v, want a temporary error", err)
	}
	if n := len(srv.Messages()); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// TestSMTP_faults: a 5xx reply rejects the message for good; a 4xx
// reply, a connection dropped in DATA and a server that stalls are worth
// a retry, and the retry goes through once the server recovers.
func TestSMTP_faults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		mode      smtpserver.Mode
		permanent bool
	}{
		{"550_at_rcpt", smtpserver.Mode{Stage: smtpserver.StageRcpt, Code: 550}, true},
		{"554_at_mail", smtpserver.Mode{Stage: smtpserver.StageMail, Code: 554}, true},
		{"552_at_data", smtpserver.Mode{Stage: smtpserver.StageData, Code: 552}, true},
		{"421_at_mail", smtpserver.Mode{Stage: smtpserver.StageMail, Code: 421}, false},
		{"451_at_rcpt", smtpserver.Mode{Stage: smtpserver.StageRcpt, Code: 451}, false},
		{"451_at_data", smtpserver.Mode{Stage: smtpserver.StageData, Code: 451}, false},
		{"530_auth_required", smtpserver.Mode{Stage: smtpserver.StageMail, Code: 530}, false},
		{"dropped_in_data", smtpserver.Mode{Stage: smtpserver.StageData, Drop: true}, false},
		{"dropped_at_rcpt", smtpserver.Mode{Stage: smtpserver.StageRcpt, Drop: true}, false},
		{"stalled_at_data", smtpserver.Mode{Stage: smtpserver.StageData, Stall: 5 * time.Second}, false},
		{"stalled_at_mail", smtpserver.Mode{Stage: smtpserver.StageMail, Stall: 5 * time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
			m := newSMTPMailer(t, srv.URL(), mail.Options{Timeout: 500 * time.Millisecond})
			msg := mailFor(domain.MailResetPassword, "en")

			srv.SetMode(tt.mode)
			start := time.Now()
			err := send(m, msg)
			if err == nil {
				t.Fatal("sent")
			}
			t.Logf("error: %v", err)
			if errors.Is(err, domain.ErrMailRejected) != tt.permanent {
				t.Fatalf("%v: permanent %v, want %v", err, !tt.permanent, tt.permanent)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("the failure took %v", took)
			}
			if strings.Contains(err.Error(), "token=") {
				t.Errorf("the error shows the link: %v", err)
			}
			if n := len(srv.Messages()); n != 0 {
				t.Fatalf("%d messages accepted", n)
			}

			srv.SetMode(smtpserver.Mode{})
			if err := send(m, msg); err != nil {
				t.Fatalf("after recovery: %v", err)
			}
			p := checkDelivered(t, srv.WaitFor(t, 1, time.Second)[0], "Reset your password")
			if smtpserver.LinkFrom(p.Text) != testLink {
				t.Errorf("link %q", smtpserver.LinkFrom(p.Text))
			}
		})
	}
}

// TestSMTP_connection_reuse: messages share one connection; it is closed
// when idle, and a new one is made for the next message.
func TestSMTP_connection_reuse(t *testing.T) {
	t.Parallel()
	srv := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	m := newSMTPMailer(t, srv.URL(), mail.Options{IdleTimeout: 300 * time.Millisecond})
	for range 3 {
		if err := send(m, mailFor(domain.MailPasswordChanged, "en")); err != nil {
			t.Fatal(err)
		}
	}
	srv.WaitFor(t, 3, time.Second)
	if n := srv.Connections(); n != 1 {
		t.Fatalf("%d connections for 3 messages, want 1", n)
	}
	time.Sleep(600 * time.Millisecond)
	if err := send(m, mailFor(domain.MailPasswordChanged, "en")); err != nil {
		t.Fatal(err)
	}
	if n := srv.Connections(); n != 2 {
		t.Errorf("%d connections after an idle time, want 2", n)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := send(m, mailFor(domain.MailPasswordChanged, "en")); err == nil {
		t.Error("sent after Close")
	}
}

// TestSMTP_server_closed_idle_connection: a connection the server ended
// while idle is noticed before the message, which goes on a new one.
func TestSMTP_server_closed_idle_connection(t *testing.T) {
	t.Parallel()
	srv := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	m := newSMTPMailer(t, srv.URL(), mail.Options{})
	if err := send(m, mailFor(domain.MailPasswordChanged, "en")); err != nil {
		t.Fatal(err)
	}
	srv.CloseConnections()
	if err := send(m, mailFor(domain.MailPasswordChanged, "en")); err != nil {
		t.Fatalf("after the server closed the connection: %v", err)
	}
	srv.WaitFor(t, 2, time.Second)
	if n := srv.Connections(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestSMTP_context: a send whose context ends is abandoned at once, even
// in the middle of a command.
func TestSMTP_context(t *testing.T) {
	t.Parallel()
	srv := smtpserver.StartFaultServer(t, smtpserver.FaultOptions{})
	m := newSMTPMailer(t, srv.URL(), mail.Options{Timeout: 30 * time.Second})
	srv.SetMode(smtpserver.Mode{Stage: smtpserver.StageData, Stall: 20 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := m.Send(ctx, mailFor(domain.MailPasswordChanged, "en"))
	if err == nil || errors.Is(err, domain.ErrMailRejected) {
		t.Fatalf("%v, want a temporary error", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("abandoned after %v", took)
	}
	srv.SetMode(smtpserver.Mode{})
	if err := send(m, mailFor(domain.MailPasswordChanged, "en")); err != nil {
		t.Fatalf("the next send: %v", err)
	}
}

// TestSMTP_unreachable: no server is an error worth a retry; New does not
// connect, so a server down at start delays nothing else.
func TestSMTP_unreachable(t *testing.T) {
	t.Parallel()
	m := newSMTPMailer(t, "smtp://127.0.0.1:1?tls=none", mail.Options{})
	if err := send(m, mailFor(domain.MailPasswordChanged, "en")); err == nil || errors.Is(err, domain.ErrMailRejected) {
		t.Fatalf("%v, want a temporary error", err)
	}
}
