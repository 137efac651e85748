package main

import (
	"io"
	"net"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// smtpSink is a local SMTP server that accepts every message and counts
// them: the mail server of a started userd, so that the sender's work is
// real (a TCP connection, the SMTP dialogue, the message bytes) and its
// rate can be read off the count.
type smtpSink struct {
	srv *smtp.Server
	ln  net.Listener

	mu       sync.Mutex
	received int64
	last     time.Time
}

func startSMTPSink() (*smtpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &smtpSink{ln: ln}
	s.srv = smtp.NewServer(s)
	s.srv.Domain = "localhost"
	s.srv.AllowInsecureAuth = true
	s.srv.ReadTimeout, s.srv.WriteTimeout = time.Minute, time.Minute
	go func() { _ = s.srv.Serve(ln) }() // ends with Close
	return s, nil
}

// url is the USERD_SMTP_URL of the sink.
func (s *smtpSink) url() string { return "smtp://" + s.ln.Addr().String() + "?tls=none" }

// count returns how many messages arrived, and when the last one did.
func (s *smtpSink) count() (int64, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received, s.last
}

func (s *smtpSink) close() { _ = s.srv.Close() }

// NewSession implements smtp.Backend.
func (s *smtpSink) NewSession(*smtp.Conn) (smtp.Session, error) { return sinkSession{s}, nil }

// sinkSession takes any sender and recipient, and counts each message
// once its data is read.
type sinkSession struct{ s *smtpSink }

func (sinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (sinkSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (sinkSession) Reset()                               {}
func (sinkSession) Logout() error                        { return nil }

func (ss sinkSession) Data(r io.Reader) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	ss.s.mu.Lock()
	ss.s.received++
	ss.s.last = time.Now()
	ss.s.mu.Unlock()
	return nil
}
