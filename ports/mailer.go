package ports

import (
	"context"

	"github.com/userd/userd/domain"
)

// Mailer renders a message from its template in its language and hands it
// to the mail server (or, without one, writes it to a file).
type Mailer interface {
	// Send delivers m. An error wrapping domain.ErrMailRejected means the
	// server refused it for good; any other error is worth a retry later.
	Send(ctx context.Context, m domain.Mail) error
}
