// Package mail implements ports.Mailer: it renders a domain.Mail from the
// embedded templates (or those of USERD_MAIL_TEMPLATES) in the
// recipient's language, as a multipart/alternative message with a text and
// an HTML part, and hands it to an SMTP server with go-mail
// (USERD_SMTP_URL) or, without one, writes it as an .eml file into a
// directory (USERD_MAIL_DIR).
//
// A message the server refuses for good (a 5xx reply) comes back as an
// error wrapping domain.ErrMailRejected; anything else (a 4xx reply, a
// dropped or stalled connection, a server that is down) is worth a retry
// and comes back as a plain error. The outbox's sender decides what to do
// with either.
package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"strings"
	"sync/atomic"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Defaults of Options, as USERD_MAIL_FROM and USERD_MAIL_DIR document
// them.
const (
	DefaultFrom = "userd <no-reply@localhost>"
	DefaultDir  = "./mail"
	// DefaultTimeout bounds connecting (TLS and AUTH included) and then
	// each message sent.
	DefaultTimeout = 10 * time.Second
	// DefaultIdleTimeout is how long an unused connection stays open for
	// the next message: long enough for a burst, shorter than servers'
	// own idle limits (RFC 5321 asks them for 5 minutes at least).
	DefaultIdleTimeout = 30 * time.Second
)

// Options configure New. The zero value writes .eml files into DefaultDir
// from DefaultFrom with the embedded templates.
type Options struct {
	// SMTPURL is USERD_SMTP_URL (see ParseSMTPURL); empty writes .eml
	// files into Dir instead.
	SMTPURL string
	// From is USERD_MAIL_FROM, an RFC 5322 address with or without a
	// name; empty is DefaultFrom.
	From string
	// Dir is USERD_MAIL_DIR, where .eml files go without SMTPURL; empty
	// is DefaultDir. It is made (0700) at the first message.
	Dir string
	// TemplatesDir is USERD_MAIL_TEMPLATES, a directory of templates that
	// replaces the embedded ones (see loadTemplates for its layout);
	// empty uses the embedded ones.
	TemplatesDir string
	// Logger receives the names of the .eml files written; nil discards.
	Logger *slog.Logger

	// TLSConfig, when set, is used to verify the SMTP server instead of
	// the system's roots (tests give their own CA); ServerName is set
	// from the URL when empty.
	TLSConfig *tls.Config
	// Timeout and IdleTimeout replace DefaultTimeout and
	// DefaultIdleTimeout when positive.
	Timeout     time.Duration
	IdleTimeout time.Duration
}

// transport hands a rendered message to its destination.
type transport interface {
	deliver(ctx context.Context, msg *gomail.Msg, m domain.Mail) error
	close() error
}

// Mailer implements ports.Mailer. It is safe for concurrent use; Close
// ends its SMTP connection.
type Mailer struct {
	from      *netmail.Address
	templates *templates
	transport transport
	closed    atomic.Bool
}

var _ ports.Mailer = (*Mailer)(nil)

// New parses the templates and the settings and returns a Mailer. It does
// not connect: an SMTP server that is down at start only delays the
// messages. Its errors name the setting (USERD_SMTP_URL, USERD_MAIL_FROM)
// or the template file at fault, and never show a password.
func New(opts Options) (*Mailer, error) {
	if opts.From == "" {
		opts.From = DefaultFrom
	}
	if opts.Dir == "" {
		opts.Dir = DefaultDir
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	from, err := netmail.ParseAddress(opts.From)
	if err != nil {
		return nil, fmt.Errorf("USERD_MAIL_FROM: %q is not an address like %q", opts.From, DefaultFrom)
	}
	tmpl, err := loadTemplates(opts.TemplatesDir)
	if err != nil {
		return nil, fmt.Errorf("USERD_MAIL_TEMPLATES: %w", err)
	}
	m := &Mailer{from: from, templates: tmpl}
	if opts.SMTPURL == "" {
		m.transport = &emlWriter{dir: opts.Dir, log: opts.Logger}
		return m, nil
	}
	server, err := ParseSMTPURL(opts.SMTPURL)
	if err != nil {
		return nil, fmt.Errorf("USERD_SMTP_URL: %w", err)
	}
	if m.transport, err = newSMTPSender(server, opts); err != nil {
		return nil, fmt.Errorf("USERD_SMTP_URL %s: %w", server, err)
	}
	return m, nil
}

// Send renders m and delivers it. A message that can never be sent (an
// unknown template, an address the server refuses for good) is an error
// wrapping domain.ErrMailRejected; any other error is worth a retry.
func (m *Mailer) Send(ctx context.Context, mail domain.Mail) error {
	if m.closed.Load() {
		return errClosed
	}
	r, err := m.templates.render(mail)
	if err != nil {
		return err
	}
	msg, err := m.compose(mail, r)
	if err != nil {
		return err
	}
	if err := m.transport.deliver(ctx, msg, mail); err != nil {
		return fmt.Errorf("send %s: %w", mail.Template, err)
	}
	return nil
}

// Close ends the SMTP connection, if one is open; a Send after it fails
// (with an error worth a retry: another node, or the next start, sends
// the message).
func (m *Mailer) Close() error {
	m.closed.Store(true)
	return m.transport.close()
}

// compose builds the message: multipart/alternative, the text part first
// (RFC 2046: the richer part last).
func (m *Mailer) compose(mail domain.Mail, r rendered) (*gomail.Msg, error) {
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	msg.FromMailAddress(m.from)
	to, err := netmail.ParseAddress(mail.To.String())
	if err != nil {
		return nil, fmt.Errorf("%w: the recipient is not an address", domain.ErrMailRejected)
	}
	to.Name = oneLine(mail.Name)
	msg.ToMailAddress(to)
	msg.Subject(r.subject)
	msg.SetDateWithValue(time.Now())
	msg.SetMessageIDWithValue(messageID(m.from.Address))
	msg.SetGenHeader(gomail.HeaderContentLang, r.lang.String())
	// RFC 3834: no out-of-office replies to a machine.
	msg.SetGenHeader(gomail.Header("Auto-Submitted"), "auto-generated")
	msg.SetBodyString(gomail.TypeTextPlain, r.text)
	msg.AddAlternativeString(gomail.TypeTextHTML, r.html)
	return msg, nil
}

// messageID is a fresh Message-ID in the sender's domain, so that it says
// nothing about the host that sent it.
func messageID(from string) string {
	domainPart := "localhost"
	if i := strings.LastIndexByte(from, '@'); i >= 0 && i < len(from)-1 {
		domainPart = from[i+1:]
	}
	return randomName() + "@" + domainPart
}

// errClosed is the answer of a Send after Close.
var errClosed = errors.New("mailer closed")
