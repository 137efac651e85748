package mail_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/mail"
	"github.com/userd/userd/domain"
)

// TestRender_factor_notices: the notices of a second factor added or
// removed say which kind, in English and German, and name no passkey.
func TestRender_factor_notices(t *testing.T) {
	t.Parallel()
	tests := []struct {
		template domain.MailTemplate
		factor   string
		lang     string
		subject  string
		says     string
	}{
		{domain.MailFactorAdded, domain.FactorPasskey, "en", "A passkey was added to your account", "signs in to the account without the password"},
		{domain.MailFactorAdded, domain.FactorTOTP, "en", "Two-step verification was turned on", "An authenticator app was set up"},
		{domain.MailFactorRemoved, domain.FactorPasskey, "en", "A passkey was removed from your account", "it no longer signs"},
		{domain.MailFactorRemoved, domain.FactorTOTP, "en", "Two-step verification with an app was turned off", "was turned off"},
		{domain.MailFactorRemoved, domain.FactorAll, "en", "Your second factors were removed", "An administrator removed every second factor"},
		{domain.MailFactorAdded, domain.FactorPasskey, "de", "Ihrem Konto wurde ein Passkey hinzugefügt", "ohne das Passwort an"},
		{domain.MailFactorAdded, domain.FactorTOTP, "de", "Die Anmeldung in zwei Schritten wurde eingeschaltet", "Authenticator-App eingerichtet"},
		{domain.MailFactorRemoved, domain.FactorPasskey, "de", "Von Ihrem Konto wurde ein Passkey entfernt", "meldet nicht mehr"},
		{domain.MailFactorRemoved, domain.FactorTOTP, "de", "Die Anmeldung in zwei Schritten mit einer App wurde ausgeschaltet", "ausgeschaltet"},
		{domain.MailFactorRemoved, domain.FactorAll, "de", "Ihre zweiten Faktoren wurden entfernt", "Die Administration hat alle zweiten Faktoren"},
	}
	m, dir := newFileMailer(t, mail.Options{})
	for _, tt := range tests {
		t.Run(tt.lang+"_"+string(tt.template)+"_"+tt.factor, func(t *testing.T) {
			p := sendToFile(t, m, dir, domain.Mail{To: testTo, User: "user-1", Name: "Ada", Template: tt.template,
				Lang: tt.lang, Data: map[string]string{"factor": tt.factor}})
			if p.Subject != tt.subject {
				t.Errorf("subject %q, want %q", p.Subject, tt.subject)
			}
			text := strings.Join(strings.Fields(p.Text), " ")
			if !strings.Contains(text, tt.says) || !strings.Contains(text, testTo.String()) {
				t.Errorf("text part does not say %q of %s:\n%s", tt.says, testTo, p.Text)
			}
			if !strings.Contains(strings.Join(strings.Fields(p.HTML), " "), tt.says) {
				t.Errorf("HTML part does not say %q:\n%s", tt.says, p.HTML)
			}
		})
	}
}

// TestTemplatesDir_new_messages_fall_back: a directory written before
// the factor notices existed (none of their files) still starts, and
// sends them in the embedded words of its language; a message with only
// some of its files is still refused.
func TestTemplatesDir_new_messages_fall_back(t *testing.T) {
	t.Parallel()
	dir := copyTemplates(t)
	for _, lang := range []string{"en", "de"} {
		for _, name := range []string{"factor_added", "factor_removed"} {
			for _, suffix := range []string{".subject.txt", ".txt", ".html"} {
				if err := os.Remove(filepath.Join(dir, lang, name+suffix)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	m, out := newFileMailer(t, mail.Options{TemplatesDir: dir})
	p := sendToFile(t, m, out, domain.Mail{To: testTo, Template: domain.MailFactorAdded, Lang: "de",
		Data: map[string]string{"factor": domain.FactorPasskey}})
	if p.Subject != "Ihrem Konto wurde ein Passkey hinzugefügt" {
		t.Errorf("subject %q, want the embedded German one", p.Subject)
	}

	partial := copyTemplates(t)
	if err := os.Remove(filepath.Join(partial, "en", "factor_removed.txt")); err != nil {
		t.Fatal(err)
	}
	_, err := mail.New(mail.Options{TemplatesDir: partial})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(partial, "en", "factor_removed.txt")) {
		t.Errorf("a message with a file missing: %v, want an error naming the file", err)
	}
}
