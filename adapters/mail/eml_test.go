package mail_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/mail"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/logbuf"
	"github.com/userd/userd/test/smtpserver"
)

// TestEML: without an SMTP server each message is an .eml file of its
// own, readable by its owner only, in a directory made for the owner
// only; the log names the file and shows nothing of the message.
func TestEML(t *testing.T) {
	t.Parallel()
	var logged logbuf.Buffer
	dir := filepath.Join(t.TempDir(), "deep", "mail")
	m, _ := newFileMailer(t, mail.Options{Dir: dir, Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
	const token = "SECRET-TOKEN-never-in-the-log"
	link := "https://app.example/account/reset-password?token=" + token
	for range 3 {
		if err := m.Send(context.Background(), domain.Mail{To: testTo, Name: "Ada", Template: domain.MailResetPassword,
			Data: map[string]string{"link": link}}); err != nil {
			t.Fatal(err)
		}
	}
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o700 {
		t.Errorf("directory mode %o, want 700", perm)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("%d files, want 3 .eml files (and no temporary ones)", len(entries))
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".eml") {
			t.Errorf("file %s", e.Name())
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s: mode %o, want 600", e.Name(), perm)
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		p, err := smtpserver.ParseMessage(raw)
		if err != nil {
			t.Fatal(err)
		}
		if smtpserver.LinkFrom(p.Text) != link || p.To != testTo.String() {
			t.Errorf("%s: link %q to %q", e.Name(), smtpserver.LinkFrom(p.Text), p.To)
		}
		if !strings.Contains(logged.String(), e.Name()) {
			t.Errorf("the log does not name %s:\n%s", e.Name(), logged.String())
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Send(context.Background(), mailFor(domain.MailPasswordChanged, "en")); err == nil {
		t.Error("written after Close")
	}
	for _, secret := range []string{token, "Ada", testTo.String(), "Someone asked"} {
		if strings.Contains(logged.String(), secret) {
			t.Errorf("the log shows %q:\n%s", secret, logged.String())
		}
	}
}

// TestEML_unwritable: a directory that cannot be made is an error worth
// a retry (the operator can fix it), not a rejection.
func TestEML_unwritable(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "")
	m, _ := newFileMailer(t, mail.Options{Dir: filepath.Join(file, "mail")})
	err := m.Send(context.Background(), mailFor(domain.MailPasswordChanged, "en"))
	if err == nil {
		t.Fatal("sent into a directory under a file")
	}
	if strings.Contains(err.Error(), domain.ErrMailRejected.Error()) {
		t.Errorf("%v: a full or unwritable disk is no rejection", err)
	}
}
