// Package federation speaks to the identity providers people sign in with
// (ports.IdentityProviderClient, contract-identity.md section 2): the
// driven side of "sign in with another provider".
//
// An OpenID provider is found by discovery from its issuer and its ID
// token verified by github.com/coreos/go-oidc (signature against the
// provider's JWKS, which go-oidc caches and fetches again when it meets a
// new key, then issuer, audience and expiry); the nonce is compared here.
// The code is redeemed with golang.org/x/oauth2, with PKCE S256 for every
// provider. GitHub has no ID token: its user and emails come from its API
// with the access token, and the identity is GitHub's numeric user id and
// the primary email it has verified.
//
// Every failure is a *domain.FederationRefusedError naming the check that
// failed. What the adapter sends and receives never reaches the log: no
// code, token, ID token or secret, only a provider's slug and a reason.
package federation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Limits of a conversation with a provider.
const (
	// requestTimeout bounds one request to a provider, its answer
	// included: a person waits on the callback meanwhile.
	requestTimeout = 10 * time.Second
	// dialTimeout bounds the connection to a provider.
	dialTimeout = 5 * time.Second
	// maxBodyBytes is the most of an answer that is read: a discovery
	// document, a key set, a token answer or a profile is a few KiB, and
	// a provider that sends more holds no memory.
	maxBodyBytes = 1 << 20
)

// Options configure a Client.
type Options struct {
	// HTTPClient speaks to the providers; nil is one with the timeouts
	// above. Its answers are read up to maxBodyBytes either way.
	HTTPClient *http.Client
	// WrapTransport, when set, wraps the client's transport (cmd's
	// tracing: each call to a provider a span, carrying its traceparent).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Logger receives a line per refusal: the provider's slug and the
	// reason, nothing of the exchange. Nil discards.
	Logger *slog.Logger
	// Clock dates the discovery cache and checks an ID token's expiry;
	// nil is the system clock.
	Clock ports.Clock
}

// Client is a ports.IdentityProviderClient. It is safe for concurrent
// use.
type Client struct {
	http  *http.Client
	log   *slog.Logger
	clock ports.Clock

	mu sync.Mutex
	// discovered holds what discovery found of each oidc provider, by
	// slug.
	discovered map[string]*discovery
}

var _ ports.IdentityProviderClient = (*Client)(nil)

// New returns a Client.
func New(opts Options) *Client {
	client := opts.HTTPClient
	if client == nil {
		client = defaultHTTPClient()
	}
	// A copy, so that the caller's client keeps its own transport.
	bounded := *client
	next := bounded.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	if opts.WrapTransport != nil {
		next = opts.WrapTransport(next)
	}
	bounded.Transport = boundedTransport{next: next}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	clock := opts.Clock
	if clock == nil {
		clock = systemClock{}
	}
	return &Client{http: &bounded, log: logger, clock: clock, discovered: map[string]*discovery{}}
}

// AuthCodeURL is the provider's authorization URL for the flow req.
func (c *Client) AuthCodeURL(ctx context.Context, p domain.IdentityProvider, req ports.FederationRequest) (string, error) {
	switch p.Kind {
	case domain.IdentityProviderOIDC:
		return c.oidcAuthCodeURL(ctx, p, req)
	case domain.IdentityProviderGitHub:
		return c.gitHubAuthCodeURL(p, req), nil
	}
	return "", fmt.Errorf("identity provider %q: unknown kind %q", p.Slug, p.Kind)
}

// Exchange redeems the callback's code and returns the identity the
// provider vouches for.
func (c *Client) Exchange(ctx context.Context, p domain.IdentityProvider, req ports.FederationRequest, code string) (domain.ExternalIdentity, error) {
	switch p.Kind {
	case domain.IdentityProviderOIDC:
		return c.oidcExchange(ctx, p, req, code)
	case domain.IdentityProviderGitHub:
		return c.gitHubExchange(ctx, p, req, code)
	}
	return domain.ExternalIdentity{}, fmt.Errorf("identity provider %q: unknown kind %q", p.Slug, p.Kind)
}

// refuse logs a refusal by the provider's slug and reason alone, and
// returns it.
func (c *Client) refuse(ctx context.Context, p domain.IdentityProvider, reason string, err error) error {
	c.log.LogAttrs(ctx, slog.LevelInfo, "identity provider refused",
		slog.String("provider", p.Slug), slog.String("reason", reason))
	return domain.FederationRefused(reason, err)
}

// networkFailure reports whether err is the provider not answering
// (a refused connection, a name that does not resolve, a timeout) rather
// than an answer.
func networkFailure(err error) bool {
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	// net/http's client wraps every failure of a round trip in a
	// *url.Error, a net.Error itself; an error that lost its type keeps
	// the context's end.
	return errors.Is(err, context.DeadlineExceeded)
}

// answerError is an answer of a provider that was not the one asked for:
// a status that is not 2xx, or (status 0) a body that could not be read.
// It holds nothing of the body.
type answerError struct {
	what   string
	status int
}

func (e *answerError) Error() string {
	if e.status == 0 {
		return e.what + ": the provider's answer could not be read"
	}
	return fmt.Sprintf("%s: the provider answered %d", e.what, e.status)
}

// profileReason is the reason of a failed read of a profile (userinfo,
// GitHub's API): the provider not answering, or failing itself (5xx), is
// unreachable; any other failure is a profile that could not be read.
func profileReason(err error) string {
	if networkFailure(err) {
		return domain.RefusedProviderUnreachable
	}
	if a, ok := errors.AsType[*answerError](err); ok && a.status >= 500 {
		return domain.RefusedProviderUnreachable
	}
	return domain.RefusedInvalidProfile
}

// defaultHTTPClient is the client of Options.HTTPClient's nil.
func defaultHTTPClient() *http.Client {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = dialer.DialContext
	transport.TLSHandshakeTimeout = dialTimeout
	transport.ResponseHeaderTimeout = requestTimeout
	return &http.Client{Timeout: requestTimeout, Transport: transport}
}

// boundedTransport cuts every answer's body at maxBodyBytes, for the
// libraries that read a body whole (go-oidc reads discovery, keys and
// userinfo with io.ReadAll).
type boundedTransport struct{ next http.RoundTripper }

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxBodyBytes}
	return resp, nil
}

// errBodyTooLarge is an answer longer than maxBodyBytes.
var errBodyTooLarge = errors.New("the provider's answer exceeds 1 MiB")

// boundedBody reads at most left bytes of a body, then fails: a cut
// answer must not parse as a shorter, different one.
type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells an answer of exactly the limit from a
		// longer one.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, errBodyTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// systemClock is Options.Clock's nil.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now().UTC() }
