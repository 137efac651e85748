package memory

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Mailer is an in-memory ports.Mailer: it keeps every message it is
// given, for tests that follow a link out of a message without a mail
// server.
type Mailer struct {
	mu   sync.Mutex
	sent []domain.Mail
}

var _ ports.Mailer = (*Mailer)(nil)

// Send implements ports.Mailer; it never fails.
func (m *Mailer) Send(_ context.Context, mail domain.Mail) error {
	mail.Data = maps.Clone(mail.Data)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, mail)
	return nil
}

// Sent returns the messages sent so far, oldest first.
func (m *Mailer) Sent() []domain.Mail {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.sent)
	for i := range out {
		out[i].Data = maps.Clone(out[i].Data)
	}
	return out
}
