package federation

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// discoveryTTL is how long what discovery found of a provider is kept: a
// provider that moves its endpoints is followed within the hour, and its
// keys are fetched again by go-oidc whenever a token names a new one.
const discoveryTTL = time.Hour

// discovery is what discovery found of an oidc provider, for the settings
// it was found with.
type discovery struct {
	provider  *oidc.Provider
	authStyle oauth2.AuthStyle
	// issuer, clientID and updatedAt are the provider's settings at
	// discovery: a change of any is a new provider.
	issuer    string
	clientID  string
	updatedAt time.Time
	expires   time.Time
}

// provider returns what discovery found of p, from the cache while it
// holds for p's settings. A failure is not kept: the next flow tries
// again, so a provider that was down works as soon as it is back.
func (c *Client) provider(ctx context.Context, p domain.IdentityProvider) (*discovery, error) {
	now := c.clock.Now()
	c.mu.Lock()
	d, ok := c.discovered[p.Slug]
	c.mu.Unlock()
	if ok && d.issuer == p.Issuer && d.clientID == p.ClientID && d.updatedAt.Equal(p.UpdatedAt) && now.Before(d.expires) {
		return d, nil
	}

	// The provider keeps the client for its key set's fetches, which
	// outlive this request.
	provider, err := oidc.NewProvider(oidc.ClientContext(ctx, c.http), p.Issuer)
	if err != nil {
		if _, ok := errors.AsType[*oidc.IssuerMismatchError](err); ok {
			return nil, c.refuse(ctx, p, domain.RefusedIssuerMismatch, fmt.Errorf("discovery: %w", err))
		}
		return nil, c.refuse(ctx, p, domain.RefusedProviderUnreachable, withoutBody("discovery", err))
	}
	var metadata struct {
		AuthMethods []string `json:"token_endpoint_auth_methods_supported"`
	}
	if err := provider.Claims(&metadata); err != nil {
		return nil, c.refuse(ctx, p, domain.RefusedProviderUnreachable, fmt.Errorf("discovery: %w", err))
	}
	d = &discovery{
		provider:  provider,
		authStyle: authStyle(metadata.AuthMethods),
		issuer:    p.Issuer,
		clientID:  p.ClientID,
		updatedAt: p.UpdatedAt,
		expires:   now.Add(discoveryTTL),
	}
	c.mu.Lock()
	// Drop what is past its time, so that the slugs of deleted
	// providers do not stay.
	for slug, old := range c.discovered {
		if !now.Before(old.expires) {
			delete(c.discovered, slug)
		}
	}
	c.discovered[p.Slug] = d
	c.mu.Unlock()
	return d, nil
}

// authStyle is how the client authenticates at the token endpoint: as
// the provider's metadata says, client_secret_basic by default (OpenID
// Connect Discovery §3). It is decided, not probed: x/oauth2's probe
// would spend the code on a refusal.
func authStyle(methods []string) oauth2.AuthStyle {
	if len(methods) > 0 && !slices.Contains(methods, "client_secret_basic") && slices.Contains(methods, "client_secret_post") {
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleInHeader
}

// oidcConfig is the OAuth 2 client of p at the provider d.
func oidcConfig(p domain.IdentityProvider, d *discovery, redirectURI string) *oauth2.Config {
	endpoint := d.provider.Endpoint()
	endpoint.AuthStyle = d.authStyle
	scopes := p.Scopes
	if len(scopes) == 0 {
		scopes = domain.DefaultOIDCProviderScopes
	}
	if !slices.Contains(scopes, oidc.ScopeOpenID) {
		// Without it the provider gives no ID token, and every sign-in
		// would fail at the exchange.
		scopes = append([]string{oidc.ScopeOpenID}, scopes...)
	}
	return &oauth2.Config{
		ClientID:     p.ClientID,
		ClientSecret: p.ClientSecret,
		Endpoint:     endpoint,
		RedirectURL:  redirectURI,
		Scopes:       scopes,
	}
}

func (c *Client) oidcAuthCodeURL(ctx context.Context, p domain.IdentityProvider, req ports.FederationRequest) (string, error) {
	d, err := c.provider(ctx, p)
	if err != nil {
		return "", err
	}
	return oidcConfig(p, d, req.RedirectURI).AuthCodeURL(req.State,
		oidc.Nonce(req.Nonce), oauth2.S256ChallengeOption(req.CodeVerifier)), nil
}

func (c *Client) oidcExchange(ctx context.Context, p domain.IdentityProvider, req ports.FederationRequest, code string) (domain.ExternalIdentity, error) {
	d, err := c.provider(ctx, p)
	if err != nil {
		return domain.ExternalIdentity{}, err
	}
	ctx = oidc.ClientContext(ctx, c.http)
	token, err := oidcConfig(p, d, req.RedirectURI).Exchange(ctx, code, oauth2.VerifierOption(req.CodeVerifier))
	if err != nil {
		return domain.ExternalIdentity{}, c.refuse(ctx, p, exchangeReason(err), exchangeError(err))
	}
	raw, _ := token.Extra("id_token").(string)
	if raw == "" {
		return domain.ExternalIdentity{}, c.refuse(ctx, p, domain.RefusedCodeExchange, errors.New("the token endpoint gave no id_token"))
	}

	verifier := d.provider.Verifier(&oidc.Config{ClientID: p.ClientID, Now: c.clock.Now})
	idToken, err := verifier.Verify(ctx, raw)
	if err != nil {
		reason := verifyReason(err, raw, d.issuer, p.ClientID)
		if reason == domain.RefusedProviderUnreachable {
			// go-oidc's words for a key set it could not read end with
			// the answer's body.
			err = withoutBody("key set", err)
		}
		return domain.ExternalIdentity{}, c.refuse(ctx, p, reason, fmt.Errorf("id token: %w", err))
	}
	// An empty nonce matches nothing: a flow always has one.
	if req.Nonce == "" || subtle.ConstantTimeCompare([]byte(idToken.Nonce), []byte(req.Nonce)) != 1 {
		return domain.ExternalIdentity{}, c.refuse(ctx, p, domain.RefusedNonceMismatch, errors.New("id token: the nonce is not the flow's"))
	}
	var claims profileClaims
	if err := idToken.Claims(&claims); err != nil {
		return domain.ExternalIdentity{}, c.refuse(ctx, p, domain.RefusedInvalidIDToken, fmt.Errorf("id token claims: %w", err))
	}
	if idToken.Subject == "" {
		return domain.ExternalIdentity{}, c.refuse(ctx, p, domain.RefusedInvalidProfile, errors.New("id token: no sub"))
	}

	if claims.Email == "" && d.provider.UserInfoEndpoint() != "" {
		info, err := c.userInfo(ctx, d, token)
		if err != nil {
			return domain.ExternalIdentity{}, c.refuse(ctx, p, profileReason(err), err)
		}
		// Userinfo about another subject is not this person's
		// (OpenID Connect Core §5.3.2).
		if info.Subject == idToken.Subject {
			claims.Email, claims.EmailVerified = info.Email, info.EmailVerified
			claims.EmailDomainOwnerVerified = info.EmailDomainOwnerVerified
			if claims.Name == "" {
				claims.Name = info.Name
			}
			if claims.PreferredUsername == "" {
				claims.PreferredUsername = info.PreferredUsername
			}
		}
	}
	return claims.identity(idToken.Subject), nil
}

// userInfo reads the provider's userinfo with the access token.
func (c *Client) userInfo(ctx context.Context, d *discovery, token *oauth2.Token) (profileClaims, error) {
	info, err := d.provider.UserInfo(ctx, oauth2.StaticTokenSource(token))
	if err != nil {
		return profileClaims{}, withoutBody("userinfo", err)
	}
	var claims profileClaims
	if err := info.Claims(&claims); err != nil {
		return profileClaims{}, fmt.Errorf("userinfo claims: %w", err)
	}
	return claims, nil
}

// profileClaims are the claims of an ID token or userinfo that make an
// identity.
type profileClaims struct {
	Subject       string       `json:"sub"`
	Email         string       `json:"email"`
	EmailVerified flexibleBool `json:"email_verified"`
	// EmailDomainOwnerVerified is Microsoft Entra ID's optional claim
	// xms_edov: the email's domain is verified by the tenant that owns
	// it. Entra sends no email_verified; with this claim configured, an
	// email of the tenant's own domain counts as verified.
	EmailDomainOwnerVerified flexibleBool `json:"xms_edov"`
	Name                     string       `json:"name"`
	PreferredUsername        string       `json:"preferred_username"`
}

// identity is the identity of the claims, with the subject sub.
func (pc profileClaims) identity(sub string) domain.ExternalIdentity {
	id := domain.ExternalIdentity{Subject: sub, Name: pc.Name}
	if id.Name == "" {
		id.Name = pc.PreferredUsername
	}
	// An address userd cannot hold is no address: nothing may be
	// matched or created by it.
	if email, msg := domain.ParseEmail(pc.Email); msg == "" {
		id.Email, id.EmailVerified = email, bool(pc.EmailVerified) || bool(pc.EmailDomainOwnerVerified)
	}
	return id
}

// flexibleBool is email_verified as providers send it: a boolean, or the
// string "true" (Amazon Cognito, some Azure set-ups). Anything else is
// false, not an error: a claim userd cannot read vouches for nothing.
type flexibleBool bool

func (b *flexibleBool) UnmarshalJSON(raw []byte) error {
	switch strings.ToLower(string(raw)) {
	case "true", `"true"`:
		*b = true
	default:
		*b = false
	}
	return nil
}

// statusInMessage finds the HTTP status that go-oidc writes before an
// answer's body in the errors of its requests ("503 Service
// Unavailable: <body>", "get keys failed: 503 Service Unavailable <body>").
var statusInMessage = regexp.MustCompile(`(?:^|: )([1-5][0-9]{2}) [A-Z]`)

// withoutBody is a failed request of go-oidc's with what go-oidc quoted
// of the answer left out: an error page may echo the request, its
// access token included, and errors reach the log. A failure to connect
// keeps its chain (a *url.Error names the URL, never a body).
func withoutBody(what string, err error) error {
	if networkFailure(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	msg := err.Error()
	if strings.Contains(msg, errBodyTooLarge.Error()) {
		return fmt.Errorf("%s: %w", what, errBodyTooLarge)
	}
	status := 0
	if m := statusInMessage.FindStringSubmatch(msg); m != nil {
		status, _ = strconv.Atoi(m[1])
	}
	return &answerError{what: what, status: status}
}

// exchangeReason is the reason of a failed redemption of a code: the
// provider not answering (or failing itself, 5xx) is unreachable; any
// other answer refused the code.
func exchangeReason(err error) string {
	if networkFailure(err) {
		return domain.RefusedProviderUnreachable
	}
	if r, ok := errors.AsType[*oauth2.RetrieveError](err); ok && r.Response != nil && r.Response.StatusCode >= 500 {
		return domain.RefusedProviderUnreachable
	}
	return domain.RefusedCodeExchange
}

// exchangeError is what is kept of a failed redemption: the status and
// the OAuth error code, never the answer's body.
func exchangeError(err error) error {
	if r, ok := errors.AsType[*oauth2.RetrieveError](err); ok {
		status := 0
		if r.Response != nil {
			status = r.Response.StatusCode
		}
		return fmt.Errorf("token endpoint: status %d, error %q", status, r.ErrorCode)
	}
	return fmt.Errorf("token endpoint: %w", err)
}

// verifyReason names the check of an ID token that go-oidc's verifier
// failed. go-oidc types only the expiry (*oidc.TokenExpiredError) and
// words the rest, in this order: the JWT's form and algorithm ("oidc:
// malformed jwt"), the signature ("failed to verify signature", with
// "fetching keys" when the key set could not be read), then issuer,
// audience and expiry. A failure after the signature is told from the
// claims themselves, which the signature then vouches for; the tests
// hold each case, so that a new wording of go-oidc fails them rather than
// a reason.
func verifyReason(err error, raw, issuer, clientID string) string {
	if _, ok := errors.AsType[*oidc.TokenExpiredError](err); ok {
		return domain.RefusedTokenExpired
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "failed to verify signature"):
		if strings.Contains(msg, "fetching keys") {
			return domain.RefusedProviderUnreachable
		}
		return domain.RefusedInvalidSignature
	case strings.Contains(msg, "unexpected signature algorithm"):
		// A token signed with an algorithm the provider does not use
		// (none, or HS256 under a public key) is a forged signature.
		return domain.RefusedInvalidSignature
	case strings.HasPrefix(msg, "oidc: malformed jwt"):
		return domain.RefusedInvalidIDToken
	}
	var claims struct {
		Issuer   string          `json:"iss"`
		Audience json.RawMessage `json:"aud"`
	}
	if payload, ok := unverifiedPayload(raw); !ok || json.Unmarshal(payload, &claims) != nil {
		return domain.RefusedInvalidIDToken
	}
	if claims.Issuer != issuer {
		return domain.RefusedIssuerMismatch
	}
	if !audienceHolds(claims.Audience, clientID) {
		return domain.RefusedAudienceMismatch
	}
	return domain.RefusedInvalidIDToken
}

// unverifiedPayload is the payload of a compact JWS, read without its
// signature: only for naming a failure go-oidc found past the signature.
func unverifiedPayload(raw string) ([]byte, bool) {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	return payload, err == nil
}

// audienceHolds reports whether an aud claim, a string or an array of
// them, names clientID.
func audienceHolds(aud json.RawMessage, clientID string) bool {
	var one string
	if json.Unmarshal(aud, &one) == nil {
		return one == clientID
	}
	var many []string
	return json.Unmarshal(aud, &many) == nil && slices.Contains(many, clientID)
}
