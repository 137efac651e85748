package mail_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/mail"
	"github.com/userd/userd/domain"
)

// copyTemplates copies the embedded templates (the repository's
// templates directory) into a fresh directory for a test to change.
func copyTemplates(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "templates")
	if err := os.CopyFS(dir, os.DirFS("templates")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTemplatesDir_overrides: USERD_MAIL_TEMPLATES replaces the embedded
// set; the languages are its directories.
func TestTemplatesDir_overrides(t *testing.T) {
	t.Parallel()
	dir := copyTemplates(t)
	writeFile(t, filepath.Join(dir, "en", "reset_password.subject.txt"), "Acme: a new password for {{.Name}}\n")
	writeFile(t, filepath.Join(dir, "en", "reset_password.txt"), "Hi {{.Name}},\n\n  {{.Link}}\n\nAcme\n")
	// Without German, a German reader gets English.
	if err := os.RemoveAll(filepath.Join(dir, "de")); err != nil {
		t.Fatal(err)
	}
	m, out := newFileMailer(t, mail.Options{TemplatesDir: dir})
	p := sendToFile(t, m, out, domain.Mail{To: testTo, Name: "Ada", Template: domain.MailResetPassword, Lang: "de",
		Data: map[string]string{"link": testLink}})
	if p.Subject != "Acme: a new password for Ada" || p.Header.Get("Content-Language") != "en" {
		t.Errorf("subject %q in %q", p.Subject, p.Header.Get("Content-Language"))
	}
	if p.Text != "Hi Ada,\n\n  "+testLink+"\n\nAcme\n" {
		t.Errorf("text part %q", p.Text)
	}
}

// TestTemplatesDir_refused_at_start: a directory the Mailer could not
// send every message from fails New, naming the file at fault.
func TestTemplatesDir_refused_at_start(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		file   string // the file the error names, under dir
		reason string
	}{
		{"missing_template", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "de", "reset_password.html")); err != nil {
				t.Fatal(err)
			}
		}, "de/reset_password.html", "missing"},
		{"does_not_parse", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "en", "verify_email.txt"), "Hello {{.Name\n{{.Link}}\n")
		}, "en/verify_email.txt", "verify_email.txt:2"},
		{"html_does_not_parse", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "de", "email_changed.html"), "<p>{{if .Name}}</p>")
		}, "de/email_changed.html", "unexpected EOF"},
		{"unknown_field", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "en", "email_changed.subject.txt"), "Now {{.NewAddress}}")
		}, "en/email_changed.subject.txt", "NewAddress"},
		{"link_not_alone", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "en", "verify_email.txt"), "Click {{.Link}} now.\n")
		}, "en/verify_email.txt", "alone on its own line"},
		{"empty_subject", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "de", "password_changed.subject.txt"), " \n")
		}, "de/password_changed.subject.txt", "empty"},
		{"no_english", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "en")); err != nil {
				t.Fatal(err)
			}
		}, "en", "English"},
		{"not_a_language", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "klingon!"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "klingon!", "not a language tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := copyTemplates(t)
			tt.change(t, dir)
			_, err := mail.New(mail.Options{TemplatesDir: dir})
			if err == nil {
				t.Fatal("New accepted the directory")
			}
			msg := err.Error()
			if !strings.Contains(msg, "USERD_MAIL_TEMPLATES") || !strings.Contains(msg, filepath.Join(dir, filepath.FromSlash(tt.file))) ||
				!strings.Contains(msg, tt.reason) {
				t.Errorf("error %q should name USERD_MAIL_TEMPLATES, %s and say %q", msg, tt.file, tt.reason)
			}
		})
	}
	if _, err := mail.New(mail.Options{TemplatesDir: filepath.Join(t.TempDir(), "nowhere")}); err == nil ||
		!strings.Contains(err.Error(), "USERD_MAIL_TEMPLATES") {
		t.Errorf("missing directory: %v", err)
	}
}
