package mail_test

import (
	"strings"
	"testing"

	"github.com/userd/userd/adapters/mail"
)

func TestParseSMTPURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		want  mail.Server
		shown string
	}{
		{"smtp://mail.example.com", mail.Server{Host: "mail.example.com", Port: 587, TLS: mail.TLSRequired},
			"smtp://mail.example.com:587"},
		{"smtp://relay:25?tls=none", mail.Server{Host: "relay", Port: 25, TLS: mail.TLSNone}, "smtp://relay:25?tls=none"},
		{"smtp://relay:25?tls=opportunistic", mail.Server{Host: "relay", Port: 25, TLS: mail.TLSOpportunistic},
			"smtp://relay:25?tls=opportunistic"},
		{"smtp://relay:2525?tls=required", mail.Server{Host: "relay", Port: 2525, TLS: mail.TLSRequired}, "smtp://relay:2525"},
		{"smtps://apikey:p%40ss%3Aw0rd@smtp.example.com", mail.Server{Host: "smtp.example.com", Port: 465,
			Username: "apikey", Password: "p@ss:w0rd", TLS: mail.TLSImplicit}, "smtps://apikey@smtp.example.com:465"},
		{"smtp://u:p@[::1]:1025/", mail.Server{Host: "::1", Port: 1025, Username: "u", Password: "p", TLS: mail.TLSRequired},
			"smtp://u@[::1]:1025"},
	}
	for _, tt := range tests {
		got, err := mail.ParseSMTPURL(tt.in)
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.in, got, tt.want)
		}
		if got.String() != tt.shown {
			t.Errorf("%s shown as %s, want %s", tt.in, got.String(), tt.shown)
		}
	}
}

// TestNew_bad_SMTP_URL: the error names the setting and says what is
// wrong, and never shows the password.
func TestNew_bad_SMTP_URL(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-pw"
	tests := []struct{ name, url, reason string }{
		{"scheme", "http://u:" + secret + "@host:25", "smtp or smtps"},
		{"no_scheme", "u:" + secret + "@host:25", "smtp://[user:pass@]host:port"},
		{"no_host", "smtp://u:" + secret + "@:25", "no host"},
		{"port", "smtp://u:" + secret + "@host:99999", "port"},
		{"port_word", "smtp://u:" + secret + "@host:smtp", "smtp://[user:pass@]host:port"},
		{"bad_escape", "smtp://u:" + secret + "%zz@host:25", "smtp://[user:pass@]host:port"},
		{"user_only", "smtp://u@host:25", "user and a password"},
		{"password_only", "smtp://:" + secret + "@host:25", "user and a password"},
		{"tls_value", "smtp://u:" + secret + "@host:25?tls=maybe", "not none, opportunistic or required"},
		{"tls_twice", "smtp://u:" + secret + "@host:25?tls=none&tls=none", "more than once"},
		{"smtps_tls_none", "smtps://u:" + secret + "@host?tls=none", "smtps"},
		{"unknown_parameter", "smtp://u:" + secret + "@host:25?auth=plain", "unknown parameter"},
		{"path", "smtp://u:" + secret + "@host:25/inbox", "path"},
		{"garbage", "::" + secret, "smtp://[user:pass@]host:port"},
	}
	for _, tt := range tests {
		_, err := mail.New(mail.Options{SMTPURL: tt.url})
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "USERD_SMTP_URL") || !strings.Contains(msg, tt.reason) {
			t.Errorf("%s: %q should name USERD_SMTP_URL and say %q", tt.name, msg, tt.reason)
		}
		if strings.Contains(msg, secret) || strings.Contains(msg, "s3cr3t") {
			t.Errorf("%s: %q shows the password", tt.name, msg)
		}
	}
}
