// Package webhook posts userd's events to one receiver, signed as the
// Standard Webhooks specification says (https://www.standardwebhooks.com):
// the headers webhook-id, webhook-timestamp and webhook-signature, the
// signature "v1," and the base64 HMAC-SHA256 of "id.timestamp.body" under
// the secret's bytes.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Limits of one delivery.
const (
	// DefaultTimeout bounds a delivery, answer included (the contract's
	// 10 s).
	DefaultTimeout = 10 * time.Second
	// resultBodyLimit is how much of an answer is kept, for the logs and
	// `userd webhooks test`.
	resultBodyLimit = 1 << 10
	// drainLimit is how much of an answer is read at most, so that the
	// connection can be reused; a receiver that sends more is cut off, and
	// never holds memory or the sender.
	drainLimit = 64 << 10
	// secretPrefix starts a Standard Webhooks secret.
	secretPrefix = "whsec_"
)

// Options configure a Sender.
type Options struct {
	// URL is the receiver (USERD_WEBHOOK_URL): http or https.
	URL string
	// Secret is "whsec_" and the base64 of 24 to 64 bytes
	// (USERD_WEBHOOK_SECRET).
	Secret string
	// Timeout bounds one delivery; zero means DefaultTimeout.
	Timeout time.Duration
	// Clock stamps webhook-timestamp with the time of the attempt.
	Clock ports.Clock
	// Transport, when set, replaces http.DefaultTransport's clone (tests).
	Transport http.RoundTripper
	// WrapTransport, when set, wraps the transport (cmd's tracing: each
	// delivery's request a span, carrying its traceparent).
	WrapTransport func(http.RoundTripper) http.RoundTripper
}

// Sender posts events to one receiver.
type Sender struct {
	url    string
	key    []byte
	clock  ports.Clock
	client *http.Client
}

var _ ports.WebhookSender = (*Sender)(nil)

// CheckURL checks a receiver URL: absolute, http or https, with a host
// that the sender may reach (checkHost).
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return errors.New("must be an absolute http:// or https:// URL")
	}
	if u.User != nil {
		return errors.New("must not hold credentials: put them in the receiver's own check of the signature")
	}
	return checkHost(u.Hostname())
}

// ParseSecret returns the key of a Standard Webhooks secret: "whsec_" and
// the standard base64 of 24 to 64 bytes.
func ParseSecret(s string) ([]byte, error) {
	enc, ok := strings.CutPrefix(s, secretPrefix)
	if !ok {
		return nil, errors.New(`must start with "whsec_"`)
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, errors.New(`must be "whsec_" and the base64 of 24 to 64 bytes`)
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("holds %d bytes; must hold 24 to 64", len(key))
	}
	return key, nil
}

// New returns a Sender, or an error naming the setting that is wrong.
func New(opts Options) (*Sender, error) {
	if err := CheckURL(opts.URL); err != nil {
		return nil, fmt.Errorf("USERD_WEBHOOK_URL %w", err)
	}
	key, err := ParseSecret(opts.Secret)
	if err != nil {
		return nil, fmt.Errorf("USERD_WEBHOOK_SECRET %w", err)
	}
	if opts.Clock == nil {
		return nil, errors.New("webhook: a clock is required")
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	transport := opts.Transport
	if transport == nil {
		transport = guardedTransport()
	}
	if opts.WrapTransport != nil {
		transport = opts.WrapTransport(transport)
	}
	return &Sender{
		url:   opts.URL,
		key:   key,
		clock: opts.Clock,
		client: &http.Client{
			Timeout:   timeout,
			Transport: transport,
			// A redirect is an answer that is not 2xx: the receiver's
			// address is the operator's to change, not the receiver's.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Sign returns the webhook-signature of a delivery of body with id at ts.
func Sign(key []byte, id string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Send implements ports.WebhookSender. webhook-timestamp is the time of
// this attempt (receivers refuse old timestamps), while the body's
// timestamp is the event's.
func (s *Sender) Send(ctx context.Context, e domain.WebhookEvent) (domain.WebhookResult, error) {
	body, err := e.Body()
	if err != nil {
		return domain.WebhookResult{}, fmt.Errorf("webhook body: %w", err)
	}
	req, err := signedRequest(ctx, s.url, s.key, e.ID, s.clock.Now().Unix(), body)
	if err != nil {
		return domain.WebhookResult{}, fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("User-Agent", "userd-webhooks")
	res, err := s.client.Do(req) //nolint:gosec // G704: the receiver is the operator's USERD_WEBHOOK_URL
	if err != nil {
		return domain.WebhookResult{}, fmt.Errorf("webhook delivery: %w", withoutURL(err))
	}
	defer func() { _ = res.Body.Close() }() // read below as far as it is worth; nothing to add on close
	kept, _ := io.ReadAll(io.LimitReader(res.Body, resultBodyLimit))
	_, _ = io.CopyN(io.Discard, res.Body, drainLimit)
	result := domain.WebhookResult{Status: res.StatusCode, Body: kept}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return result, fmt.Errorf("webhook delivery: receiver answered %d", res.StatusCode)
	}
	return result, nil
}

// signedRequest is the POST of body to target as Standard Webhooks signs
// it: webhook-id id, webhook-timestamp ts, webhook-signature under key.
func signedRequest(ctx context.Context, target string, key []byte, id string, ts int64, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", Sign(key, id, ts, body))
	return req, nil
}

// withoutURL is err of a request without the URL: its query may hold a
// token, so the error says which part failed, not the URL.
func withoutURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}
