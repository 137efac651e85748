package domain

import "context"

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
}

type requestMetaKey struct{}

// WithRequestMeta returns a copy of ctx that carries m.
func WithRequestMeta(ctx context.Context, m RequestMeta) context.Context {
	return context.WithValue(ctx, requestMetaKey{}, m)
}

// RequestMetaFrom returns the RequestMeta of ctx; the zero value when there
// is none.
func RequestMetaFrom(ctx context.Context) RequestMeta {
	m, _ := ctx.Value(requestMetaKey{}).(RequestMeta)
	return m
}
