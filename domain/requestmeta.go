package domain

import (
	"context"
	"time"
)

// RequestMeta is what the driving side knows about the request a use case
// serves, for the audit trail: the request id (as in the logs and the
// X-Request-Id header) and the client's IP address. The HTTP adapter puts it
// into the request's context; the CLI has none.
type RequestMeta struct {
	RequestID string
	ClientIP  string
	// Lang is the request's Accept-Language, as the client sent it (cut
	// to a sane length): the language of any message the request causes.
	Lang string
	// UserAgent is the request's User-Agent, as SessionUserAgent keeps
	// it: what a session opened by the request shows.
	UserAgent string
	// SessionLimits are the limits of a session the request opens, when
	// its client keeps shorter ones than the deployment's (the web
	// pages); zero for the deployment's.
	SessionLimits SessionLimits
}

// SessionLimits are the limits that a client keeps on the sessions it
// opens, which the store then keeps as well, so that a session its
// client has let lapse also ends where the server lists and refreshes
// sessions, whether or not the client ever comes back. A zero field
// leaves the deployment's lifetime.
type SessionLimits struct {
	// Absolute ends the session that long after its sign-in (at most
	// the deployment's session lifetime).
	Absolute time.Duration
	// Idle ends the session that long after its client's last request.
	// The store sees only the refreshes, which such a client makes at
	// least once per access-token lifetime while it is used: the store
	// ends the session once Idle, an access token's lifetime, the
	// verifier's leeway and the refresh reuse grace have passed since
	// the last refresh, by which time the client has certainly ended it
	// and every access token of it has expired.
	Idle time.Duration
}

// RequestMetaKey is the context key of the RequestMeta. WithRequestMeta
// stores one under it; a context type of an adapter's own that holds
// the meta already (the HTTP adapter's request scope) may answer it with
// a *RequestMeta instead, which saves a copy of the meta and a context
// on every request.
type RequestMetaKey struct{}

// WithRequestMeta returns a copy of ctx that carries m.
func WithRequestMeta(ctx context.Context, m RequestMeta) context.Context {
	return context.WithValue(ctx, RequestMetaKey{}, m)
}

// RequestMetaFrom returns the RequestMeta of ctx; the zero value when there
// is none.
func RequestMetaFrom(ctx context.Context) RequestMeta {
	switch m := ctx.Value(RequestMetaKey{}).(type) {
	case RequestMeta:
		return m
	case *RequestMeta:
		if m != nil {
			return *m
		}
	}
	return RequestMeta{}
}
