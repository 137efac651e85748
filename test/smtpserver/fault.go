package smtpserver

import (
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/userd/userd/test/logbuf"
)

// Stage is the SMTP command a fault hits.
type Stage string

// The stages of a message.
const (
	StageMail Stage = "MAIL"
	StageRcpt Stage = "RCPT"
	// StageData is the end of DATA: the reply to the whole message, after
	// the server has read it (or, with Drop, in the middle of reading it).
	StageData Stage = "DATA"
)

// Mode is how a FaultServer answers the messages to come. The zero Mode
// accepts every message.
type Mode struct {
	// Stage is where the fault hits.
	Stage Stage
	// Stall, when positive, makes the server wait this long at Stage
	// before it goes on (to Code, Drop, or the usual answer).
	Stall time.Duration
	// Code, when not zero, is the reply at Stage instead of success:
	// 421, 451, 550, ...
	Code int
	// Drop closes the connection at Stage without a reply; at StageData,
	// after reading part of the message.
	Drop bool
}

// FaultOptions configure StartFaultServer. The zero value is a server
// without TLS or AUTH.
type FaultOptions struct {
	// StartTLS offers STARTTLS (the certificate RootCAs trusts).
	StartTLS bool
	// ImplicitTLS speaks TLS from the first byte, as smtps:// expects.
	ImplicitTLS bool
	// Username and Password, when set, are required (AUTH PLAIN) before
	// MAIL.
	Username, Password string
}

// FaultServer is an in-process SMTP server (github.com/emersion/go-smtp)
// that fails as a test tells it to.
type FaultServer struct {
	opts    FaultOptions
	addr    string
	server  *smtp.Server
	inbox   inbox
	conns   atomic.Int64
	done    chan struct{}
	errLog  *logbuf.Buffer
	modeMu  sync.Mutex
	mode    Mode
	authsOK atomic.Int64

	sessionsMu sync.Mutex
	sessions   map[*session]struct{}
}

var _ Server = (*FaultServer)(nil)

// StartFaultServer runs a FaultServer on a free port of 127.0.0.1 until
// the test ends. It accepts every message until SetMode says otherwise.
func StartFaultServer(t testing.TB, opts FaultOptions) *FaultServer {
	t.Helper()
	s := &FaultServer{opts: opts, done: make(chan struct{}), errLog: &logbuf.Buffer{}, sessions: make(map[*session]struct{})}
	s.server = smtp.NewServer(smtp.BackendFunc(s.newSession))
	s.server.Domain = "localhost"
	s.server.ReadTimeout = 30 * time.Second
	s.server.WriteTimeout = 30 * time.Second
	s.server.ErrorLog = log.New(s.errLog, "", 0)
	// A test server on loopback: AUTH without TLS is the client's call.
	s.server.AllowInsecureAuth = true
	var tlsConf *tls.Config
	if opts.StartTLS || opts.ImplicitTLS {
		c, err := certificate()
		if err != nil {
			t.Fatal(err)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{c.tls}, MinVersion: tls.VersionTLS12}
	}
	if opts.StartTLS {
		s.server.TLSConfig = tlsConf
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if opts.ImplicitTLS {
		l = tls.NewListener(l, tlsConf)
	}
	s.addr = l.Addr().String()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.server.Serve(&countingListener{Listener: l, n: &s.conns})
	}()
	t.Cleanup(func() {
		close(s.done) // ends the stalls
		_ = s.server.Close()
		<-served
	})
	return s
}

// SetMode changes how the server answers from the next command on, on
// every connection.
func (s *FaultServer) SetMode(m Mode) {
	s.modeMu.Lock()
	defer s.modeMu.Unlock()
	s.mode = m
}

func (s *FaultServer) currentMode() Mode {
	s.modeMu.Lock()
	defer s.modeMu.Unlock()
	return s.mode
}

// CloseConnections closes every open connection at once, without a
// word, as a server does to idle clients.
func (s *FaultServer) CloseConnections() {
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	for sess := range s.sessions {
		_ = sess.conn.Conn().Close()
	}
}

// Connections counts the connections accepted so far.
func (s *FaultServer) Connections() int { return int(s.conns.Load()) }

// Address is host:port.
func (s *FaultServer) Address() string { return s.addr }

// URL reaches the server as its options require: smtps:// with implicit
// TLS, smtp:// (STARTTLS required) with StartTLS, else ?tls=none; with
// the user and password when it has them.
func (s *FaultServer) URL() string {
	userinfo := ""
	if s.opts.Username != "" {
		userinfo = s.opts.Username + ":" + s.opts.Password + "@"
	}
	switch {
	case s.opts.ImplicitTLS:
		return "smtps://" + userinfo + s.addr
	case s.opts.StartTLS:
		return "smtp://" + userinfo + s.addr
	}
	return "smtp://" + userinfo + s.addr + "?tls=none"
}

// Messages are the messages accepted so far, in order.
func (s *FaultServer) Messages() [][]byte { return raws(s.inbox.all()) }

// Received are the messages accepted so far with their envelopes.
func (s *FaultServer) Received() []Message { return s.inbox.all() }

// WaitFor waits for n messages; see Server.
func (s *FaultServer) WaitFor(t testing.TB, n int, timeout time.Duration) [][]byte {
	t.Helper()
	return waitFor(t, n, timeout, s.inbox.all, func() string { return "\ngo-smtp:\n" + s.errLog.String() })
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func (s *FaultServer) newSession(c *smtp.Conn) (smtp.Session, error) {
	sess := &session{server: s, conn: c}
	s.sessionsMu.Lock()
	s.sessions[sess] = struct{}{}
	s.sessionsMu.Unlock()
	if s.opts.Username != "" {
		return &authSession{session: sess}, nil
	}
	return sess, nil
}

// session is one connection's transaction.
type session struct {
	server *FaultServer
	conn   *smtp.Conn
	authed bool
	from   string
	to     []string
}

// errDropped is what a session returns after closing its connection.
var errDropped = errors.New("connection dropped by the fault server")

// fault applies the current mode at stage: nil to go on as usual.
func (s *session) fault(stage Stage, beforeDrop func()) error {
	m := s.server.currentMode()
	if m.Stage != stage {
		return nil
	}
	if m.Stall > 0 {
		select {
		case <-time.After(m.Stall):
		case <-s.server.done:
		}
	}
	switch {
	case m.Drop:
		if beforeDrop != nil {
			beforeDrop()
		}
		_ = s.conn.Conn().Close()
		return errDropped
	case m.Code != 0:
		return &smtp.SMTPError{Code: m.Code, EnhancedCode: smtp.EnhancedCodeNotSet,
			Message: "fault server: " + string(stage) + " answered " + stageText(m.Code)}
	}
	return nil
}

func stageText(code int) string {
	if code >= 500 {
		return "permanently"
	}
	return "temporarily"
}

func (s *session) Mail(from string, _ *smtp.MailOptions) error {
	if s.server.opts.Username != "" && !s.authed {
		return smtp.ErrAuthRequired
	}
	if err := s.fault(StageMail, nil); err != nil {
		return err
	}
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if err := s.fault(StageRcpt, nil); err != nil {
		return err
	}
	s.to = append(s.to, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	m := s.server.currentMode()
	if m.Stage == StageData && m.Drop {
		// Half the message, or what there is of it, then nothing.
		return s.fault(StageData, func() { _, _ = io.CopyN(io.Discard, r, 64) })
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if err := s.fault(StageData, nil); err != nil {
		return err
	}
	s.server.inbox.add(Message{From: s.from, To: append([]string(nil), s.to...), Raw: raw})
	return nil
}

func (s *session) Reset() { s.from, s.to = "", nil }

func (s *session) Logout() error {
	s.server.sessionsMu.Lock()
	defer s.server.sessionsMu.Unlock()
	delete(s.server.sessions, s)
	return nil
}

// authSession adds AUTH PLAIN, with the server's one user.
type authSession struct{ *session }

func (s *authSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *authSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, username, password string) error {
		if username != s.server.opts.Username || password != s.server.opts.Password {
			return smtp.ErrAuthFailed
		}
		s.authed = true
		s.server.authsOK.Add(1)
		return nil
	}), nil
}

// Logins counts the successful AUTHs so far.
func (s *FaultServer) Logins() int { return int(s.authsOK.Load()) }
