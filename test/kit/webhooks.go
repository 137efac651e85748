package kit

import (
	"context"
	"net/http"
	"slices"
	"sync"

	"github.com/userd/userd/domain"
)

// WebhookRecorder is a webhook receiver for AppParts' deps
// (Deps.Webhooks): it keeps every event it is sent and answers 204.
type WebhookRecorder struct {
	mu     sync.Mutex
	events []domain.WebhookEvent
}

// Send keeps e.
func (w *WebhookRecorder) Send(_ context.Context, e domain.WebhookEvent) (domain.WebhookResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, e)
	return domain.WebhookResult{Status: http.StatusNoContent}, nil
}

// Sent returns the events sent so far, in the order they came.
func (w *WebhookRecorder) Sent() []domain.WebhookEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}
