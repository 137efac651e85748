package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Limits of the claims hook (docs/claims.md).
const (
	// DefaultHookTimeout bounds one call of the claims hook, answer
	// included (the contract's 2 s); MinHookTimeout and MaxHookTimeout
	// bound USERD_CLAIMS_HOOK_TIMEOUT: a sign-in waits for it.
	DefaultHookTimeout = 2 * time.Second
	MinHookTimeout     = 100 * time.Millisecond
	MaxHookTimeout     = 30 * time.Second
	// hookAnswerLimit is the most of an answer read: the claims are at
	// most domain.MaxHookClaimsSize, and a refusal's message shorter.
	hookAnswerLimit = 64 << 10
	// hookIdleConns is how many idle connections to the hook are kept:
	// every sign-in and refresh calls it, and a new TLS connection costs
	// more than the call.
	hookIdleConns = 64
)

// HookOptions configure a ClaimsHook.
type HookOptions struct {
	// URL is the hook (USERD_CLAIMS_HOOK_URL): https, or http on a
	// loopback host (CheckHookURL).
	URL string
	// Secret signs the requests as Secret does webhooks
	// (USERD_CLAIMS_HOOK_SECRET).
	Secret string
	// Timeout bounds one call; zero means DefaultHookTimeout.
	Timeout time.Duration
	// Clock stamps webhook-timestamp and the body's timestamp.
	Clock ports.Clock
	// Transport carries the calls; nil means HookTransport(). Wiring
	// passes one so that it can be wrapped (traces).
	Transport http.RoundTripper
}

// ClaimsHook asks the operator's claims hook for the claims of a token.
// It is safe for concurrent use.
type ClaimsHook struct {
	url     string
	key     []byte
	timeout time.Duration
	clock   ports.Clock
	client  *http.Client
}

var _ ports.ClaimsHook = (*ClaimsHook)(nil)

// CheckHookURL checks a claims hook's URL as CheckURL does a receiver's,
// and further wants https unless the host is loopback: the hook's answer
// is not signed, and goes into tokens; only over TLS, or without leaving
// the machine, is it the hook's.
func CheckHookURL(raw string) error {
	if err := CheckURL(raw); err != nil {
		return err
	}
	u, _ := url.Parse(raw) // CheckURL parsed it
	if u.Scheme == "https" || loopbackHost(u.Hostname()) {
		return nil
	}
	return errors.New("must be https:// unless its host is loopback (localhost, 127.0.0.0/8, ::1): the hook's answer goes into tokens")
}

// loopbackHost reports whether host is localhost or a loopback address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HookTransport is the transport of the claims hook: the guarded dialer
// of the webhooks, and a pool of idle connections large enough for the
// sign-ins of a busy node.
func HookTransport() *http.Transport {
	t := guardedTransport()
	t.MaxIdleConns = hookIdleConns
	t.MaxIdleConnsPerHost = hookIdleConns
	return t
}

// NewClaimsHook returns a ClaimsHook, or an error naming the setting that
// is wrong.
func NewClaimsHook(opts HookOptions) (*ClaimsHook, error) {
	if err := CheckHookURL(opts.URL); err != nil {
		return nil, fmt.Errorf("USERD_CLAIMS_HOOK_URL %w", err)
	}
	key, err := ParseSecret(opts.Secret)
	if err != nil {
		return nil, fmt.Errorf("USERD_CLAIMS_HOOK_SECRET %w", err)
	}
	if opts.Clock == nil {
		return nil, errors.New("claims hook: a clock is required")
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultHookTimeout
	}
	transport := opts.Transport
	if transport == nil {
		transport = HookTransport()
	}
	return &ClaimsHook{url: opts.URL, key: key, timeout: timeout, clock: opts.Clock, client: &http.Client{
		Transport: transport,
		// A redirect is an answer that is not 200 or 403: the hook's
		// address is the operator's to change.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// Claims implements ports.ClaimsHook. Neither the request's body nor the
// answer's is ever put in an error: they hold the user's details.
func (h *ClaimsHook) Claims(ctx context.Context, r domain.ClaimsRequest) (domain.HookClaims, error) {
	now := h.clock.Now()
	e := r.Event("msg_"+string(domain.NewOutboxID(now)), now)
	body, err := e.Body()
	if err != nil {
		return domain.HookClaims{}, fmt.Errorf("claims hook body: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	req, err := signedRequest(ctx, h.url, h.key, e.ID, now.Unix(), body)
	if err != nil {
		return domain.HookClaims{}, fmt.Errorf("claims hook request: %w", err)
	}
	req.Header.Set("User-Agent", "userd-claims-hook")
	req.Header.Set("Accept", "application/json")
	res, err := h.client.Do(req) //nolint:gosec // G704: the hook is the operator's USERD_CLAIMS_HOOK_URL
	if err != nil {
		return domain.HookClaims{}, fmt.Errorf("%w: %w", domain.ErrHookUnavailable, withoutURL(err))
	}
	defer func() { _ = res.Body.Close() }() // read below as far as it is worth
	answer, err := io.ReadAll(io.LimitReader(res.Body, hookAnswerLimit+1))
	if err != nil {
		return domain.HookClaims{}, fmt.Errorf("%w: reading the answer: %w", domain.ErrHookUnavailable, err)
	}
	switch res.StatusCode {
	case http.StatusOK:
		if len(answer) > hookAnswerLimit {
			return domain.HookClaims{}, &domain.HookFailure{Reason: fmt.Sprintf("answer over %d bytes", hookAnswerLimit)}
		}
		return claimsOf(answer)
	case http.StatusForbidden:
		return domain.HookClaims{}, domain.NewSignInRefused(refusalMessage(answer))
	}
	return domain.HookClaims{}, fmt.Errorf("%w: answered %d", domain.ErrHookUnavailable, res.StatusCode)
}

// claimsOf reads a 200's {"claims":{…}}.
func claimsOf(answer []byte) (domain.HookClaims, error) {
	var a struct {
		Claims json.RawMessage `json:"claims"`
	}
	if err := json.Unmarshal(answer, &a); err != nil || a.Claims == nil {
		return domain.HookClaims{}, &domain.HookFailure{Reason: `answer is not {"claims":{…}}`}
	}
	return domain.ParseHookClaims(a.Claims)
}

// refusalMessage is the message of a 403's {"error":{"message"}}; empty
// when it has none (the refusal stands, with the default message).
func refusalMessage(answer []byte) string {
	var a struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(answer, &a) != nil {
		return ""
	}
	return a.Error.Message
}
