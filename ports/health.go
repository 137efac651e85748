package ports

import "context"

// HealthChecker reports whether the store can serve requests.
type HealthChecker interface {
	// Ping returns nil when the store answers; an error wrapping
	// domain.ErrUnavailable otherwise.
	Ping(ctx context.Context) error
}
