// Package smtpserver gives the tests of every package SMTP servers to send
// to, and the means to read what they received:
//
//   - StartAiosmtpd runs Debian's aiosmtpd (python3-aiosmtpd), a real
//     server in its own process, optionally with STARTTLS;
//   - StartFaultServer runs an in-process github.com/emersion/go-smtp
//     server whose answers a test sets and changes at run time (SetMode):
//     4xx and 5xx replies at MAIL, RCPT or DATA, a connection dropped in
//     the middle of DATA, a stall;
//   - ParseMessage and LinkFrom read a received message the way a mail
//     client would: net/mail, mime/multipart and the transfer encodings.
//
// Both servers listen on a free port of 127.0.0.1 and stop when the test
// ends.
package smtpserver

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// Server is what both test servers offer.
type Server interface {
	// Address is host:port.
	Address() string
	// URL is a USERD_SMTP_URL that reaches the server without TLS
	// (smtp://127.0.0.1:port?tls=none).
	URL() string
	// Messages are the messages received so far, in order, each as the
	// client sent it (the bytes of DATA, dot-unstuffed).
	Messages() [][]byte
	// Received is Messages with the envelope of each.
	Received() []Message
	// WaitFor waits until at least n messages have arrived and returns
	// them all, or fails the test (t.Fatalf) after timeout. Call it from
	// the test's goroutine.
	WaitFor(t testing.TB, n int, timeout time.Duration) [][]byte
}

// Message is one message a server received.
type Message struct {
	// From is the MAIL FROM address, To the RCPT TO addresses.
	From string
	To   []string
	// Raw is DATA as the client sent it.
	Raw []byte
}

// pollInterval is how often WaitFor looks.
const pollInterval = 10 * time.Millisecond

// waitFor polls received until it holds n messages.
func waitFor(t testing.TB, n int, timeout time.Duration, received func() []Message, diagnose func() string) [][]byte {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := received()
		if len(got) >= n {
			return raws(got)
		}
		if time.Now().After(deadline) {
			t.Fatalf("smtpserver: %d message(s) after %v, want %d%s", len(got), timeout, n, diagnose())
		}
		time.Sleep(pollInterval)
	}
}

func raws(msgs []Message) [][]byte {
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i] = m.Raw
	}
	return out
}

// inbox holds the messages of an in-process server.
type inbox struct {
	mu   sync.Mutex
	msgs []Message
}

func (b *inbox) add(m Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msgs = append(b.msgs, m)
}

func (b *inbox) all() []Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.msgs)
}
