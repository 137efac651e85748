package mailflow

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/smtpserver"
)

// TestMailDirWithoutSMTP: with no USERD_SMTP_URL, each message is an
// RFC 5322 .eml file in USERD_MAIL_DIR (the directory 0700, the file
// 0600) that a mail client reads as it would a delivered one; the log
// names the file and shows nothing of its content.
func TestMailDirWithoutSMTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := baseEnv(dir)
	env["USERD_LOG_LEVEL"] = "debug"
	mailDir := env["USERD_MAIL_DIR"]
	node := startNode(t, env)
	const email = "katherine@example.com"
	u := kit.Register(t, node.Base, "Katherine Johnson", email, userPassword)

	var files []string
	kit.Eventually(t, mailWait, "an .eml file in USERD_MAIL_DIR", func() bool {
		files, _ = filepath.Glob(filepath.Join(mailDir, "*.eml"))
		return len(files) > 0
	})
	// Nothing else is coming; anything else in the directory is a
	// leftover.
	kit.Eventually(t, 10*time.Second, "an empty backlog", func() bool { return backlog(t, node.Base) == 0 })
	entries, err := os.ReadDir(mailDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("USERD_MAIL_DIR holds %v, want the one message", names)
	}
	file := files[0]
	if fi, err := os.Stat(mailDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("USERD_MAIL_DIR: mode %v (%v), want 0700", fi.Mode().Perm(), err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", filepath.Base(file), fi.Mode().Perm())
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := parseAll(t, []smtpserver.Message{{Raw: raw}})[0]
	if m.Subject != subjectVerify {
		t.Errorf("the file's subject %q, want %q", m.Subject, subjectVerify)
	}
	checkMessage(t, m, email)
	token := linkToken(t, m, "/account/verify-email")

	log := node.Log.String()
	if !strings.Contains(log, filepath.Base(file)) {
		t.Errorf("the log does not name the file %s:\n%s", filepath.Base(file), log)
	}
	for _, content := range []string{token, subjectVerify, "Katherine Johnson"} {
		if strings.Contains(log, content) {
			t.Errorf("the log shows the message's content (%q):\n%s", content, log)
		}
	}

	r := kit.Send(t, http.MethodPost, node.Base+"/auth/email-verification/confirm", map[string]string{"token": token}, "")
	kit.Expect(t, "confirm with the file's token", r, http.StatusOK, "")
	if !strings.Contains(string(r.Body), u.ID) || !strings.Contains(string(r.Body), `"emailVerified":true`) {
		t.Errorf("confirm: %s", r.Body)
	}
}
