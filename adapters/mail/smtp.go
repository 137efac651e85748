package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	gomail "github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"

	"github.com/userd/userd/domain"
)

// smtpSender is the transport to an SMTP server. It keeps one connection
// open across messages (the sender loop sends them one after another) and
// closes it after idle without a message, on an error, and on close.
//
// go-mail's Client holds the settings only: the connection is the
// sender's own (DialToSMTPClientWithContext, SendWithSMTPClient), so that
// it can drop one that failed and abandon a send whose context ends.
type smtpSender struct {
	server  Server
	client  *gomail.Client
	tlsConf *tls.Config
	timeout time.Duration
	idle    time.Duration

	mu sync.Mutex
	// conn is the open session, nil when none is; raw is the TCP
	// connection under it, closed to abandon a send at once.
	conn *smtp.Client
	raw  net.Conn
	// dialed is the TCP connection dial made last, even when the session
	// on it failed: go-mail does not close it then.
	dialed   net.Conn
	lastUsed time.Time
	timer    *time.Timer
	closed   bool
}

func newSMTPSender(server Server, opts Options) (*smtpSender, error) {
	s := &smtpSender{server: server, timeout: opts.Timeout, idle: opts.IdleTimeout}
	s.tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
	if opts.TLSConfig != nil {
		s.tlsConf = opts.TLSConfig.Clone()
	}
	if s.tlsConf.ServerName == "" {
		s.tlsConf.ServerName = server.Host
	}
	policy := gomail.TLSMandatory
	switch server.TLS {
	case TLSOpportunistic:
		policy = gomail.TLSOpportunistic
	case TLSNone, TLSImplicit:
		// Implicit TLS is dial's: the session starts on a TLS connection.
		policy = gomail.NoTLS
	}
	copts := []gomail.Option{
		gomail.WithPort(server.Port),
		gomail.WithTimeout(s.timeout),
		gomail.WithTLSPolicy(policy),
		gomail.WithTLSConfig(s.tlsConf),
		gomail.WithDialContextFunc(s.dial),
	}
	if server.Username != "" {
		// PLAIN and LOGIN, as servers offer them; go-mail sends neither
		// over a connection without TLS (but to localhost).
		copts = append(copts, gomail.WithUsername(server.Username), gomail.WithPassword(server.Password),
			gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthPlain, gomail.SMTPAuthLogin))
	}
	client, err := gomail.NewClient(server.Host, copts...)
	if err != nil {
		return nil, err
	}
	s.client = client
	return s, nil
}

// dial connects for go-mail, with TLS from the start for smtps://, and
// keeps the TCP connection (under s.mu, which deliver holds).
func (s *smtpSender) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: s.timeout}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	s.dialed = conn
	if s.server.TLS != TLSImplicit {
		return conn, nil
	}
	tconn := tls.Client(conn, s.tlsConf)
	if err := tconn.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return tconn, nil
}

// deliver sends msg on the open connection, or a new one. A connection
// the server closed while idle is noticed before anything is sent (go-mail
// checks it with NOOP), and the message goes on a new one.
func (s *smtpSender) deliver(ctx context.Context, msg *gomail.Msg, _ domain.Mail) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	reused := s.conn != nil
	err := s.sendOnce(ctx, msg)
	if err != nil && reused && notSent(err) && ctx.Err() == nil {
		err = s.sendOnce(ctx, msg)
	}
	if err != nil {
		return classify(err)
	}
	s.lastUsed = time.Now()
	if s.timer == nil {
		s.timer = time.AfterFunc(s.idle, s.closeIdle)
	} else {
		s.timer.Reset(s.idle)
	}
	return nil
}

// sendOnce sends msg, connecting first if need be. Any error drops the
// connection: after a 4xx, a timeout or a half-written message, a new one
// is the safe start for the next message.
func (s *smtpSender) sendOnce(ctx context.Context, msg *gomail.Msg) error {
	if s.conn == nil {
		if err := s.connect(ctx); err != nil {
			return err
		}
	}
	raw := s.raw
	stop := context.AfterFunc(ctx, func() { _ = raw.Close() })
	err := s.client.SendWithSMTPClient(s.conn, msg)
	if !stop() || err != nil {
		s.drop()
	}
	if err != nil && msg.IsDelivered() {
		// The server took the message (250 after DATA); only the RSET
		// after it failed. Sending it again would send it twice.
		return nil
	}
	return err
}

// connect opens a session: TCP, EHLO, STARTTLS (unless the URL says not
// to) and AUTH (with a user).
func (s *smtpSender) connect(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.dialed = nil
	conn, err := s.client.DialToSMTPClientWithContext(ctx)
	if err != nil {
		if s.dialed != nil {
			_ = s.dialed.Close()
			s.dialed = nil
		}
		return fmt.Errorf("connect to %s: %w", s.server.Address(), err)
	}
	s.conn, s.raw, s.dialed = conn, s.dialed, nil
	return nil
}

// drop forgets the connection without a word to the server.
func (s *smtpSender) drop() {
	if s.raw != nil {
		_ = s.raw.Close()
	}
	s.conn, s.raw = nil, nil
}

// quit ends the connection politely, within the timeout.
func (s *smtpSender) quit() {
	if s.conn == nil {
		return
	}
	// Best effort: the server may have gone already.
	_ = s.conn.UpdateDeadline(s.timeout)
	_ = s.conn.Quit()
	s.drop()
}

// closeIdle ends a connection unused for the idle time.
func (s *smtpSender) closeIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && time.Since(s.lastUsed) >= s.idle {
		s.quit()
	}
}

func (s *smtpSender) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.quit()
	return nil
}

// notSent says whether err came before the message began: go-mail found
// the connection dead (NOOP) before MAIL FROM.
func notSent(err error) bool {
	var se *gomail.SendError
	return errors.As(err, &se) && se.Reason == gomail.ErrConnCheck
}

// codeAuthRequired (RFC 4954) refuses the session, not the message: the
// operator has to give USERD_SMTP_URL a user, and the message can wait.
const codeAuthRequired = 530

// classify wraps an SMTP 5xx reply to the message in
// domain.ErrMailRejected: the server refused it for good. Everything else
// (4xx, a dropped or stalled connection, no server, a failed STARTTLS or
// AUTH) is worth a retry and stays a plain error.
func classify(err error) error {
	var se *gomail.SendError
	if errors.As(err, &se) {
		if code := se.ErrorCode(); code >= 500 && code < 600 && code != codeAuthRequired {
			return fmt.Errorf("%w: %w", domain.ErrMailRejected, err)
		}
	}
	return err
}
