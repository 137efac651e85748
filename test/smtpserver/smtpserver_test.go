package smtpserver

import (
	"net/smtp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseMessage(t *testing.T) {
	t.Parallel()
	raw := strings.ReplaceAll(`From: "Acme" <accounts@acme.test>
To: =?utf-8?q?J=C3=B6rg?= <joerg@example.com>, ada@example.com
Subject: =?UTF-8?q?Best=C3=A4tigen?=
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary=outer

--outer
Content-Type: multipart/alternative; boundary="inner"

--inner
Content-Type: text/plain; charset=UTF-8
Content-Transfer-Encoding: quoted-printable

Gr=C3=BC=C3=9Fe,

https://app.example/account/verify-email?token=3DAbCdEfGhIjKlMnOpQrStUvWxYz012=
3456789

--inner
Content-Type: text/html; charset=UTF-8
Content-Transfer-Encoding: base64

PHA+R3LDvMOfZTwvcD4=
--inner--
--outer
Content-Type: application/octet-stream
Content-Transfer-Encoding: 7bit

x
--outer--
`, "\n", "\r\n")
	p, err := ParseMessage([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if p.From != "accounts@acme.test" || p.To != "joerg@example.com, ada@example.com" || p.Subject != "Bestätigen" {
		t.Errorf("from %q to %q subject %q", p.From, p.To, p.Subject)
	}
	if p.ContentType != "multipart/mixed" || !slices.Equal(p.Parts, []string{"text/plain", "text/html", "application/octet-stream"}) {
		t.Errorf("%s of %v", p.ContentType, p.Parts)
	}
	const link = "https://app.example/account/verify-email?token=AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
	if p.Text != "Grüße,\n\n"+link+"\n" {
		t.Errorf("text %q", p.Text)
	}
	if p.HTML != "<p>Grüße</p>" {
		t.Errorf("html %q", p.HTML)
	}
	if got := LinkFrom(p.Text); got != link {
		t.Errorf("LinkFrom = %q", got)
	}

	if _, err := ParseMessage([]byte("Content-Type: multipart/alternative\r\n\r\nx")); err == nil {
		t.Error("a multipart without a boundary parsed")
	}
}

func TestLinkFrom(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"see https://a.example/x here\n":           "",
		"intro\n  https://a.example/x?t=1  \nend":  "https://a.example/x?t=1",
		"ftp://a.example/x\nhttp://b.example/\n":   "http://b.example/",
		"https://\nhttps://c.example/p#f":          "https://c.example/p#f",
		"no link at all":                           "",
		"https://a.example/one\nhttps://b.example": "https://a.example/one",
	} {
		if got := LinkFrom(text); got != want {
			t.Errorf("LinkFrom(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestServers: both servers take a message from net/smtp and give it
// back byte for byte, with its envelope.
func TestServers(t *testing.T) {
	t.Parallel()
	servers := map[string]func(t *testing.T) Server{
		"aiosmtpd": func(t *testing.T) Server { return StartAiosmtpd(t) },
		"fault":    func(t *testing.T) Server { return StartFaultServer(t, FaultOptions{}) },
	}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := start(t)
			msg := "From: a@example.com\r\nTo: b@example.com\r\nSubject: hi\r\n\r\n.leading dot\r\nbody\r\n"
			if err := smtp.SendMail(srv.Address(), nil, "a@example.com", []string{"b@example.com"}, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			got := srv.WaitFor(t, 1, 5*time.Second)
			if string(got[0]) != msg {
				t.Errorf("received %q, want %q", got[0], msg)
			}
			r := srv.Received()[0]
			if r.From != "a@example.com" || !slices.Equal(r.To, []string{"b@example.com"}) {
				t.Errorf("envelope %q → %v", r.From, r.To)
			}
			if !strings.HasPrefix(srv.URL(), "smtp://"+srv.Address()) {
				t.Errorf("URL %s", srv.URL())
			}
		})
	}
}

// TestFaultServer_modes: SetMode takes effect at once and can be undone.
func TestFaultServer_modes(t *testing.T) {
	t.Parallel()
	srv := StartFaultServer(t, FaultOptions{})
	send := func() error {
		return smtp.SendMail(srv.Address(), nil, "a@example.com", []string{"b@example.com"}, []byte("Subject: x\r\n\r\nx\r\n"))
	}
	srv.SetMode(Mode{Stage: StageRcpt, Code: 550})
	if err := send(); err == nil || !strings.Contains(err.Error(), "550") {
		t.Errorf("550 at RCPT: %v", err)
	}
	srv.SetMode(Mode{Stage: StageData, Drop: true})
	if err := send(); err == nil {
		t.Error("dropped in DATA: sent")
	}
	srv.SetMode(Mode{Stage: StageMail, Code: 421, Stall: 100 * time.Millisecond})
	start := time.Now()
	if err := send(); err == nil || !strings.Contains(err.Error(), "421") || time.Since(start) < 100*time.Millisecond {
		t.Errorf("421 after a stall at MAIL: %v after %v", err, time.Since(start))
	}
	srv.SetMode(Mode{})
	if err := send(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Messages()); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
	if n := srv.Connections(); n != 4 {
		t.Errorf("%d connections, want 4", n)
	}
}
