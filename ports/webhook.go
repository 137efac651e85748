package ports

import (
	"context"

	"github.com/userd/userd/domain"
)

// WebhookSender posts events to the configured receiver, signed per
// Standard Webhooks. It is safe for concurrent use.
type WebhookSender interface {
	// Send posts e once. A non-2xx answer, a timeout or a refused
	// connection is an error (worth a retry); the result is the answer
	// when there was one.
	Send(ctx context.Context, e domain.WebhookEvent) (domain.WebhookResult, error)
}
