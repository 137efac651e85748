package mailflow

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/userdproc"
)

// TestBadMailConfigurationFailsStart: a mail setting or template that
// userd could not send with refuses `userd serve` at once, with a
// non-zero exit code and a message on stderr that names the setting or
// the file, and never shows the SMTP password.
func TestBadMailConfigurationFailsStart(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup returns the settings to add to baseEnv, given a copy of
		// the embedded templates in templates to change.
		setup func(t *testing.T, templates string) map[string]string
		// names are what stderr must say.
		names []string
	}{
		{"smtp_url_port_not_a_number", func(*testing.T, string) map[string]string {
			return map[string]string{"USERD_SMTP_URL": "smtp://mail.example.test:notaport"}
		}, []string{"USERD_SMTP_URL"}},
		{"smtp_url_with_password_and_bad_port", func(*testing.T, string) map[string]string {
			return map[string]string{"USERD_SMTP_URL": "smtp://mailer:Sw0rdfish-Secret@mail.example.test:notaport"}
		}, []string{"USERD_SMTP_URL"}},
		{"smtp_url_unknown_scheme", func(*testing.T, string) map[string]string {
			return map[string]string{"USERD_SMTP_URL": "http://mail.example.test:25"}
		}, []string{"USERD_SMTP_URL"}},
		{"smtp_url_unknown_tls_mode", func(*testing.T, string) map[string]string {
			return map[string]string{"USERD_SMTP_URL": "smtp://mail.example.test:25?tls=sometimes"}
		}, []string{"USERD_SMTP_URL"}},
		{"mail_from_not_an_address", func(*testing.T, string) map[string]string {
			return map[string]string{"USERD_MAIL_FROM": "userd at localhost"}
		}, []string{"USERD_MAIL_FROM"}},
		{"templates_directory_missing", func(_ *testing.T, templates string) map[string]string {
			return map[string]string{"USERD_MAIL_TEMPLATES": filepath.Join(templates, "nowhere")}
		}, []string{"nowhere"}},
		{"template_missing", func(t *testing.T, templates string) map[string]string {
			remove(t, filepath.Join(templates, "de", "password_changed.html"))
			return map[string]string{"USERD_MAIL_TEMPLATES": templates}
		}, []string{filepath.Join("de", "password_changed.html")}},
		{"template_does_not_parse", func(t *testing.T, templates string) map[string]string {
			write(t, filepath.Join(templates, "en", "reset_password.txt"), "Hello {{.Name\n\n{{.Link}}\n")
			return map[string]string{"USERD_MAIL_TEMPLATES": templates}
		}, []string{filepath.Join("en", "reset_password.txt")}},
		{"html_template_does_not_parse", func(t *testing.T, templates string) map[string]string {
			write(t, filepath.Join(templates, "de", "verify_email.html"), "<p>{{if .Name}}</p>")
			return map[string]string{"USERD_MAIL_TEMPLATES": templates}
		}, []string{filepath.Join("de", "verify_email.html")}},
		{"link_not_alone_on_its_line", func(t *testing.T, templates string) map[string]string {
			write(t, filepath.Join(templates, "en", "verify_email.txt"), "Click {{.Link}} now.\n")
			return map[string]string{"USERD_MAIL_TEMPLATES": templates}
		}, []string{filepath.Join("en", "verify_email.txt")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			templates := filepath.Join(dir, "templates")
			if err := os.CopyFS(templates, os.DirFS(filepath.Join("..", "..", "adapters", "mail", "templates"))); err != nil {
				t.Fatal(err)
			}
			env := baseEnv(dir)
			for k, v := range tc.setup(t, templates) {
				env[k] = v
			}
			node := userdproc.New(t, binary, env)
			start := time.Now()
			code, stdout, stderr := node.Run("", "serve")
			if code == 0 {
				t.Fatalf("serve exited 0; stdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("serve took %v to give up", took)
			}
			for _, name := range tc.names {
				if !strings.Contains(stderr, name) {
					t.Errorf("stderr does not name %s:\n%s", name, stderr)
				}
			}
			if strings.Contains(stdout+stderr, "Sw0rdfish-Secret") {
				t.Errorf("the output shows the SMTP password:\n%s%s", stdout, stderr)
			}
			if conn, err := net.DialTimeout("tcp", node.Addr, time.Second); err == nil {
				_ = conn.Close()
				t.Error("something listens on the address of the node that failed to start")
			}
			if _, err := os.Stat(filepath.Join(dir, "mail")); err == nil {
				t.Error("the failed start made the mail directory")
			}
		})
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
