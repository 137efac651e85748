package mail_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/mail"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/smtpserver"
)

// A name and a link that HTML must escape.
const (
	hostileName = `Ada <script>alert(1)</script> & "Co"`
	testLink    = "https://app.example/account/verify-email?x=1&token=AbC_dEf-123"
	testTo      = domain.Email("ada@example.com")
)

// newFileMailer returns a Mailer that writes .eml files into a fresh
// directory, and that directory.
func newFileMailer(t *testing.T, opts mail.Options) (*mail.Mailer, string) {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = filepath.Join(t.TempDir(), "mail")
	}
	m, err := mail.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, opts.Dir
}

// sendToFile sends msg through a file Mailer and parses the one file it
// writes.
func sendToFile(t *testing.T, m *mail.Mailer, dir string, msg domain.Mail) smtpserver.Parsed {
	t.Helper()
	before, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	if err := m.Send(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	if len(after) != len(before)+1 {
		t.Fatalf("%d .eml files after a send, want %d", len(after), len(before)+1)
	}
	var name string
	for _, n := range after {
		if !slices.Contains(before, n) {
			name = n
		}
	}
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := smtpserver.ParseMessage(raw)
	if err != nil {
		t.Fatalf("parse %s: %v\n%s", name, err, raw)
	}
	return p
}

func mailFor(template domain.MailTemplate, lang string) domain.Mail {
	m := domain.Mail{To: testTo, User: "user-1", Name: hostileName, Template: template, Lang: lang}
	switch template {
	case domain.MailVerifyEmail, domain.MailResetPassword:
		m.Data = map[string]string{"link": testLink}
	case domain.MailEmailSignIn:
		m.Data = map[string]string{"link": testLink, "code": "042917"}
	case domain.MailEmailChanged:
		m.Data = map[string]string{"new_email": "ada.new@example.com"}
	}
	return m
}

// TestRender_every_template_in_every_language: each message is
// multipart/alternative, text then HTML, from USERD_MAIL_FROM to the
// account, in the language asked for, with its link alone on a line of
// the text part, and with every value escaped in the HTML part.
func TestRender_every_template_in_every_language(t *testing.T) {
	t.Parallel()
	subjects := map[string]map[domain.MailTemplate]string{
		"en": {
			domain.MailVerifyEmail:     "Confirm your email address",
			domain.MailResetPassword:   "Reset your password",
			domain.MailEmailChanged:    "Your email address was changed",
			domain.MailPasswordChanged: "Your password was changed",
			domain.MailEmailSignIn:     "Your sign-in code: 042917",
		},
		"de": {
			domain.MailVerifyEmail:     "Bestätigen Sie Ihre E-Mail-Adresse",
			domain.MailResetPassword:   "Passwort zurücksetzen",
			domain.MailEmailChanged:    "Ihre E-Mail-Adresse wurde geändert",
			domain.MailPasswordChanged: "Ihr Passwort wurde geändert",
			domain.MailEmailSignIn:     "Ihr Anmeldecode: 042917",
		},
	}
	m, dir := newFileMailer(t, mail.Options{})
	for lang, bySubject := range subjects {
		for template, subject := range bySubject {
			t.Run(lang+"_"+string(template), func(t *testing.T) {
				p := sendToFile(t, m, dir, mailFor(template, lang))
				if p.ContentType != "multipart/alternative" || !slices.Equal(p.Parts, []string{"text/plain", "text/html"}) {
					t.Errorf("content type %s, parts %v; want multipart/alternative of text/plain, text/html", p.ContentType, p.Parts)
				}
				if p.From != "no-reply@localhost" || p.To != testTo.String() {
					t.Errorf("from %q to %q", p.From, p.To)
				}
				if p.Subject != subject {
					t.Errorf("subject %q, want %q", p.Subject, subject)
				}
				if got := p.Header.Get("Content-Language"); got != lang {
					t.Errorf("Content-Language %q, want %q", got, lang)
				}
				for _, h := range []string{"Date", "Message-ID", "MIME-Version"} {
					if p.Header.Get(h) == "" {
						t.Errorf("no %s header", h)
					}
				}
				if p.Header.Get("User-Agent") != "" || p.Header.Get("X-Mailer") != "" {
					t.Error("the message names the library that made it")
				}
				switch {
				case template == domain.MailVerifyEmail:
					// It goes to an address not verified yet: no greeting
					// by a name that whoever gave the address chose.
					if strings.Contains(p.Text, "Ada") || strings.Contains(p.HTML, "Ada") {
						t.Errorf("the verification message shows the name:\n%s", p.Text)
					}
				// The text part is text: the name as it is.
				case !strings.Contains(p.Text, hostileName):
					t.Errorf("text part lacks the name:\n%s", p.Text)
				// The HTML part escapes it, and the link.
				case strings.Contains(p.HTML, "<script>") || !strings.Contains(p.HTML, "&lt;script&gt;"):
					t.Errorf("name not escaped in the HTML part:\n%s", p.HTML)
				}
				hasLink := template == domain.MailVerifyEmail || template == domain.MailResetPassword || template == domain.MailEmailSignIn
				if template == domain.MailEmailSignIn && (!strings.Contains(p.Text, "042917") || !strings.Contains(p.HTML, "042917")) {
					t.Errorf("the sign-in message lacks its code:\n%s", p.Text)
				}
				if hasLink {
					if got := smtpserver.LinkFrom(p.Text); got != testLink {
						t.Errorf("link in the text part %q, want %q alone on a line:\n%s", got, testLink, p.Text)
					}
					if !strings.Contains(p.HTML, `href="https://app.example/account/verify-email?x=1&amp;token=AbC_dEf-123"`) {
						t.Errorf("HTML part lacks the escaped link:\n%s", p.HTML)
					}
				} else if smtpserver.LinkFrom(p.Text) != "" {
					t.Errorf("a notice with a link:\n%s", p.Text)
				}
				if template == domain.MailEmailChanged && (!strings.Contains(p.Text, "ada.new@example.com") || !strings.Contains(p.HTML, "ada.new@example.com")) {
					t.Error("the notice of a change of email does not name the new address")
				}
				if strings.Contains(p.HTML, "http://") || strings.Contains(p.HTML, "src=") {
					t.Error("the HTML part loads something from outside")
				}
			})
		}
	}
}

// TestRender_message_to_an_address_not_verified: the application gives
// no name (domain.User.Addressee) and, in the notice of a change of email
// to an old address never verified, no new address: the message greets
// nobody by name, has no display name in To, and says that the account
// registered with the address moved on, in both languages.
func TestRender_message_to_an_address_not_verified(t *testing.T) {
	t.Parallel()
	m, dir := newFileMailer(t, mail.Options{})
	for lang, moved := range map[string]string{"en": "now has another email", "de": "hat jetzt eine andere"} {
		for _, template := range []domain.MailTemplate{domain.MailVerifyEmail, domain.MailEmailChanged} {
			t.Run(lang+"_"+string(template), func(t *testing.T) {
				msg := mailFor(template, lang)
				msg.Name = ""
				if template == domain.MailEmailChanged {
					msg.Data = nil
				}
				p := sendToFile(t, m, dir, msg)
				if to := p.Header.Get("To"); to != "<"+testTo.String()+">" && to != testTo.String() {
					t.Errorf("To %q, want the bare address", to)
				}
				if strings.Contains(p.Text, "Hello ") || strings.Contains(p.Text, "Guten Tag ") {
					t.Errorf("a greeting by name:\n%s", p.Text)
				}
				if template != domain.MailEmailChanged {
					return
				}
				flat := strings.Join(strings.Fields(p.Text), " ")
				if !strings.Contains(flat, moved) || !strings.Contains(p.HTML, moved) {
					t.Errorf("the notice does not say the account moved on (%q):\n%s", moved, p.Text)
				}
				if strings.Contains(flat, " to .") || strings.Contains(flat, " zu ") || strings.Contains(p.HTML, "<strong></strong>") {
					t.Errorf("the notice names an empty new address:\n%s\n%s", p.Text, p.HTML)
				}
			})
		}
	}
}

// TestRender_language: the language is the best of the Accept-Language
// value (or plain tag) the request had; English when none is known.
func TestRender_language(t *testing.T) {
	t.Parallel()
	m, dir := newFileMailer(t, mail.Options{})
	tests := []struct{ name, lang, want string }{
		{"swiss_german_header", "de-CH,de;q=0.9", "de"},
		{"tag", "de", "de"},
		{"region_tag", "de-AT", "de"},
		{"french", "fr", "en"},
		{"empty", "", "en"},
		{"english_region", "en-GB", "en"},
		{"second_choice", "fr-FR,fr;q=0.9,de;q=0.8", "de"},
		{"weights_over_order", "en;q=0.5,de;q=0.9", "de"},
		{"cut_short", "de;q=0.9,en;q=0.8,xx-toolongsubtagxxx", "de"},
		{"garbage", "!!@@##", "en"},
		{"wildcard", "*", "en"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := sendToFile(t, m, dir, mailFor(domain.MailPasswordChanged, tt.lang))
			if got := p.Header.Get("Content-Language"); got != tt.want {
				t.Errorf("Lang %q: written in %q, want %q", tt.lang, got, tt.want)
			}
		})
	}
}

// TestSend_refuses_what_can_never_be_sent: an unknown template or a
// verification without its link is rejected for good.
func TestSend_refuses_what_can_never_be_sent(t *testing.T) {
	t.Parallel()
	m, _ := newFileMailer(t, mail.Options{})
	for name, msg := range map[string]domain.Mail{
		"unknown_template": {To: testTo, Template: "welcome_gift"},
		"no_link":          {To: testTo, Template: domain.MailResetPassword},
		"bad_address":      {To: "not an address", Template: domain.MailPasswordChanged},
	} {
		if err := m.Send(context.Background(), msg); !errors.Is(err, domain.ErrMailRejected) {
			t.Errorf("%s: %v, want domain.ErrMailRejected", name, err)
		}
	}
}

// TestFrom: USERD_MAIL_FROM is the sender, and its domain that of the
// Message-ID; a From that is no address is refused at start.
func TestFrom(t *testing.T) {
	t.Parallel()
	m, dir := newFileMailer(t, mail.Options{From: "Acme Accounts <accounts@acme.test>"})
	p := sendToFile(t, m, dir, mailFor(domain.MailPasswordChanged, "en"))
	if p.From != "accounts@acme.test" || !strings.Contains(p.Header.Get("From"), "Acme Accounts") {
		t.Errorf("From: %q", p.Header.Get("From"))
	}
	if id := p.Header.Get("Message-ID"); !strings.HasSuffix(id, "@acme.test>") {
		t.Errorf("Message-ID %q not in the sender's domain", id)
	}
	if _, err := mail.New(mail.Options{From: "no address here"}); err == nil || !strings.Contains(err.Error(), "USERD_MAIL_FROM") {
		t.Errorf("bad From: %v, want an error naming USERD_MAIL_FROM", err)
	}
}
