package kit

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"sync"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Upstream stands for the identity providers people sign in with, in the
// tests of the application and of the adapters that drive it: the real
// adapter (adapters/federation) is tested against real providers in
// test/idpflow. A flow's authorization URL names the provider, and
// carries the flow's state, nonce and S256 challenge; the test plays the
// person at the provider with Approve or Answer, which give the code the
// provider would send back. Exchange refuses a code it did not give, a
// code given for another provider, and a verifier whose challenge is not
// the flow's, as a provider does.
type Upstream struct {
	mu sync.Mutex
	// flows are the flows begun, by state.
	flows map[string]ports.FederationRequest
	// answers are the codes given, each with its flow's state and what
	// its exchange yields.
	answers map[string]upstreamAnswer
	// down, when set, is what AuthCodeURL fails with.
	down error
	// base, when set, is where the authorization URLs point instead of
	// https://{slug}.idp.test: base/{slug}/authorize, a server of the
	// test that a real browser can reach (SetAuthorizeBase).
	base string
}

type upstreamAnswer struct {
	provider, state string
	identity        domain.ExternalIdentity
	err             error
}

var _ ports.IdentityProviderClient = (*Upstream)(nil)

// NewUpstream returns a stand-in with no flow begun.
func NewUpstream() *Upstream {
	return &Upstream{flows: map[string]ports.FederationRequest{}, answers: map[string]upstreamAnswer{}}
}

// AuthCodeURL implements ports.IdentityProviderClient: https://{slug}.idp.test/authorize
// with the flow's parameters.
func (u *Upstream) AuthCodeURL(_ context.Context, p domain.IdentityProvider, req ports.FederationRequest) (string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.down != nil {
		return "", domain.FederationRefused(domain.RefusedProviderUnreachable, u.down)
	}
	u.flows[req.State] = req
	sum := sha256.Sum256([]byte(req.CodeVerifier))
	q := url.Values{"client_id": {p.ClientID}, "redirect_uri": {req.RedirectURI}, "state": {req.State},
		"nonce": {req.Nonce}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"}, "response_type": {"code"}}
	if u.base != "" {
		return u.base + "/" + p.Slug + "/authorize?" + q.Encode(), nil
	}
	return "https://" + p.Slug + ".idp.test/authorize?" + q.Encode(), nil
}

// SetAuthorizeBase points the authorization URLs at base/{slug}/authorize,
// a server of the test that plays the provider for a real browser.
func (u *Upstream) SetAuthorizeBase(base string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.base = base
}

// Exchange implements ports.IdentityProviderClient.
func (u *Upstream) Exchange(_ context.Context, p domain.IdentityProvider, req ports.FederationRequest, code string) (domain.ExternalIdentity, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	a, ok := u.answers[code]
	if !ok || a.provider != p.Slug || a.state != req.State {
		return domain.ExternalIdentity{}, domain.FederationRefused(domain.RefusedCodeExchange, errors.New("unknown code"))
	}
	delete(u.answers, code)
	if flow := u.flows[a.state]; flow.CodeVerifier != req.CodeVerifier || flow.RedirectURI != req.RedirectURI {
		return domain.ExternalIdentity{}, domain.FederationRefused(domain.RefusedCodeExchange, errors.New("wrong verifier"))
	}
	return a.identity, a.err
}

// Approve is the person signing in at the provider of authURL as
// identity: the code the provider sends back with the flow's state.
func (u *Upstream) Approve(authURL string, identity domain.ExternalIdentity) (code, state string) {
	return u.Answer(authURL, identity, nil)
}

// Answer is Approve whose exchange then fails with err (a
// *domain.FederationRefusedError, as the adapter's checks of the ID
// token fail) when err is set.
func (u *Upstream) Answer(authURL string, identity domain.ExternalIdentity, err error) (code, state string) {
	loc, perr := url.Parse(authURL)
	if perr != nil {
		panic(perr)
	}
	state = loc.Query().Get("state")
	provider, ok := strings.CutSuffix(loc.Hostname(), ".idp.test")
	if !ok {
		// base/{slug}/authorize
		parts := strings.Split(strings.TrimSuffix(loc.Path, "/authorize"), "/")
		provider = parts[len(parts)-1]
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	code = hex.EncodeToString(b)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.answers[code] = upstreamAnswer{provider: provider, state: state, identity: identity, err: err}
	return code, state
}

// SetDown makes AuthCodeURL fail with err (nil: it serves again), as for
// a provider whose discovery cannot be read.
func (u *Upstream) SetDown(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.down = err
}
