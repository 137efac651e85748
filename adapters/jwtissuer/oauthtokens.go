package jwtissuer

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

var _ ports.OAuthTokens = (*ProviderTokens)(nil)

// ProviderTokens makes and checks the OpenID provider's tokens with the
// provider's keys (ProviderKeys): access tokens of RFC 9068 and ID tokens.
// Access tokens are signed with EdDSA when the access tokens of userd are
// (one Ed25519 signature costs about a fortieth of an RSA-2048 one, and a
// code exchange signs an ID token too), else RS256; ID tokens with the
// client's algorithm. Their issuer is the provider's (the public URL), so
// that neither passes for one of userd's own access tokens, whose issuer,
// audience and profiles claim they lack. It is safe for concurrent use.
type ProviderTokens struct {
	keys  *ProviderKeys
	clock ports.Clock
	// verified spares a repeated token its signature check (oauthcache.go).
	verified *verifiedAccessTokens
	issuer   string
	ttl      time.Duration
	leeway   time.Duration
	parser   *jwt.Parser
}

// NewProviderTokens returns the provider's tokens over i's keys, with
// issuer as their iss (the provider's issuer: USERD_PUBLIC_URL without a
// trailing slash). Access tokens live as long as i's.
func NewProviderTokens(i *Issuer, issuer string) *ProviderTokens {
	return &ProviderTokens{keys: i.ProviderKeys(), clock: i.clock, verified: newVerifiedAccessTokens(),
		issuer: issuer, ttl: i.opts.TTL, leeway: i.opts.Leeway,
		parser: jwt.NewParser(jwt.WithValidMethods([]string{EdDSA, RS256}), jwt.WithIssuer(issuer),
			jwt.WithLeeway(i.opts.Leeway), jwt.WithIssuedAt(), jwt.WithTimeFunc(i.clock.Now))}
}

// Algorithms implements ports.OAuthTokens.
func (p *ProviderTokens) Algorithms() []string { return p.keys.Algorithms() }

// AccessTokenTTL implements ports.OAuthTokens.
func (p *ProviderTokens) AccessTokenTTL() time.Duration { return p.ttl }

// accessClaims are the claims of an access token of the provider (RFC
// 9068 §2.2).
type accessClaims struct {
	jwt.RegisteredClaims
	ClientID  string           `json:"client_id"`
	Scope     string           `json:"scope"`
	SessionID string           `json:"sid,omitempty"`
	AuthTime  *jwt.NumericDate `json:"auth_time,omitempty"`
	AMR       []string         `json:"amr,omitempty"`
	ACR       string           `json:"acr,omitempty"`
}

// IssueAccessToken implements ports.OAuthTokens.
func (p *ProviderTokens) IssueAccessToken(_ context.Context, c domain.OAuthAccessClaims) (string, error) {
	alg := RS256
	for _, a := range p.keys.Algorithms() {
		if a == EdDSA {
			alg = EdDSA
		}
	}
	ac := accessClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: p.issuer, Subject: c.Subject, Audience: jwt.ClaimStrings{c.ClientID.String()},
			ExpiresAt: jwt.NewNumericDate(c.ExpiresAt), IssuedAt: jwt.NewNumericDate(c.IssuedAt), ID: c.ID,
		},
		ClientID: c.ClientID.String(), Scope: strings.Join(domain.ScopeStrings(c.Scopes), " "),
		SessionID: c.SessionID, AMR: c.AMR,
	}
	if c.ForUser() {
		ac.AuthTime = jwt.NewNumericDate(c.AuthTime)
		ac.ACR = c.AMR.ACR()
	}
	return p.sign(alg, TokenType, withExtra(ac, c.Extra))
}

// idClaims are the claims of an ID token (OpenID Connect Core §2, §5.1).
type idClaims struct {
	jwt.RegisteredClaims
	Nonce         string           `json:"nonce,omitempty"`
	AuthTime      *jwt.NumericDate `json:"auth_time,omitempty"`
	ACR           string           `json:"acr,omitempty"`
	AMR           []string         `json:"amr,omitempty"`
	SessionID     string           `json:"sid,omitempty"`
	AccessHash    string           `json:"at_hash,omitempty"`
	AuthorizedBy  string           `json:"azp,omitempty"`
	Name          *string          `json:"name,omitempty"`
	UpdatedAt     *int64           `json:"updated_at,omitempty"`
	Email         *string          `json:"email,omitempty"`
	EmailVerified *bool            `json:"email_verified,omitempty"`
	Profiles      []string         `json:"profiles,omitempty"`
}

// IssueIDToken implements ports.OAuthTokens.
func (p *ProviderTokens) IssueIDToken(_ context.Context, c domain.IDTokenClaims, alg, accessToken string) (string, error) {
	ic := idClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: p.issuer, Subject: c.Subject.String(), Audience: jwt.ClaimStrings{c.ClientID.String()},
			ExpiresAt: jwt.NewNumericDate(c.ExpiresAt), IssuedAt: jwt.NewNumericDate(c.IssuedAt),
		},
		Nonce: c.Nonce, AuthTime: jwt.NewNumericDate(c.AuthTime), ACR: c.AMR.ACR(), AMR: c.AMR,
		SessionID: c.SessionID, AuthorizedBy: c.ClientID.String(),
		Name: c.User.Name, Email: c.User.Email, EmailVerified: c.User.EmailVerified, Profiles: c.User.Profiles,
	}
	if c.User.UpdatedAt != nil {
		t := c.User.UpdatedAt.Unix()
		ic.UpdatedAt = &t
	}
	if accessToken != "" {
		h, err := tokenHash(alg, accessToken)
		if err != nil {
			return "", err
		}
		ic.AccessHash = h
	}
	return p.sign(alg, "JWT", withExtra(ic, c.Extra))
}

// tokenHash is the at_hash of token for a JWS algorithm (OpenID Connect
// Core §3.1.3.6): the left half of its hash, in base64url. RS256 hashes
// with SHA-256; EdDSA with Ed25519 with SHA-512, the hash Ed25519 itself
// uses (OpenID Connect's errata and every library that signs ID tokens
// with EdDSA).
func tokenHash(alg, token string) (string, error) {
	var h hash.Hash
	switch alg {
	case RS256:
		h = sha256.New()
	case EdDSA:
		h = sha512.New()
	default:
		return "", fmt.Errorf("provider tokens: no at_hash for %s", alg)
	}
	h.Write([]byte(token))
	sum := h.Sum(nil)
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2]), nil
}

// sign signs claims with the key of alg that signs now, with the typ
// header typ.
func (p *ProviderTokens) sign(alg, typ string, claims jwt.Claims) (string, error) {
	kid, key, err := p.keys.SigningKey(alg)
	if err != nil {
		return "", err
	}
	method := jwt.GetSigningMethod(alg)
	if method == nil {
		return "", fmt.Errorf("provider tokens: unknown algorithm %s", alg)
	}
	t := jwt.NewWithClaims(method, claims)
	t.Header["kid"], t.Header["typ"] = kid, typ
	// What t.SignedString does, with the signature of signature
	// (curve25519-voi's for EdDSA). golang-jwt's methods assert the
	// key's dynamic type (*rsa.PrivateKey, or a crypto.Signer for EdDSA).
	signing, err := t.SigningString()
	if err != nil {
		return "", fmt.Errorf("provider tokens: sign: %w", err)
	}
	sig, err := signature(method, signing, key)
	if err != nil {
		return "", fmt.Errorf("provider tokens: sign: %w", err)
	}
	return signing + "." + t.EncodeSegment(sig), nil
}

// errNotProviderToken: a token the provider did not make as this kind.
var errNotProviderToken = errors.New("not a token of the provider")

// VerifyAccessToken implements ports.OAuthTokens.
func (p *ProviderTokens) VerifyAccessToken(_ context.Context, token string) (domain.OAuthAccessClaims, error) {
	now := p.clock.Now()
	if c, ok := p.verified.get(token, now, p.published); ok {
		return c, nil
	}
	var c accessClaims
	var kid string
	keyFor := p.keyFor(TokenType)
	if _, err := p.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		kid, _ = t.Header["kid"].(string)
		return keyFor(t)
	}); err != nil {
		return domain.OAuthAccessClaims{}, invalid(err)
	}
	if c.IssuedAt == nil || c.ExpiresAt == nil || c.ExpiresAt.Sub(c.IssuedAt.Time) > p.ttl+p.leeway {
		return domain.OAuthAccessClaims{}, invalid(errLongLifetime)
	}
	client, err := domain.ParseOAuthClientID(c.ClientID)
	if err != nil || c.Subject == "" {
		return domain.OAuthAccessClaims{}, invalid(errNotProviderToken)
	}
	amr, ok := domain.ParseAMR(c.AMR)
	if c.SessionID != "" && (!ok || c.ACR != amr.ACR()) {
		return domain.OAuthAccessClaims{}, invalid(errBadSession)
	}
	var scopes []domain.OAuthScope
	for _, s := range strings.Fields(c.Scope) {
		scopes = append(scopes, domain.OAuthScope(s))
	}
	out := domain.OAuthAccessClaims{Subject: c.Subject, ClientID: client, Scopes: scopes, SessionID: c.SessionID,
		ID: c.ID, IssuedAt: c.IssuedAt.Time, ExpiresAt: c.ExpiresAt.Time}
	if c.SessionID != "" {
		out.AMR = amr
		if c.AuthTime != nil {
			out.AuthTime = c.AuthTime.Time
		}
	}
	p.verified.put(token, kid, out, now)
	return out, nil
}

// VerifyIDTokenHint implements ports.OAuthTokens.
func (p *ProviderTokens) VerifyIDTokenHint(_ context.Context, token string) (domain.IDTokenClaims, error) {
	var c idClaims
	parser := jwt.NewParser(jwt.WithValidMethods([]string{EdDSA, RS256}), jwt.WithIssuer(p.issuer),
		jwt.WithoutClaimsValidation())
	if _, err := parser.ParseWithClaims(token, &c, p.keyFor("JWT")); err != nil {
		return domain.IDTokenClaims{}, invalid(err)
	}
	if c.Issuer != p.issuer || len(c.Audience) != 1 {
		return domain.IDTokenClaims{}, invalid(errNotProviderToken)
	}
	sub, err := domain.ParseUserID(c.Subject)
	if err != nil {
		return domain.IDTokenClaims{}, invalid(errBadSubject)
	}
	client, err := domain.ParseOAuthClientID(c.Audience[0])
	if err != nil {
		return domain.IDTokenClaims{}, invalid(errNotProviderToken)
	}
	return domain.IDTokenClaims{Subject: sub, ClientID: client, SessionID: c.SessionID}, nil
}

// keyFor is the jwt.Keyfunc of the provider's tokens of type typ: the
// public key of the kid among those published now, of the token's
// algorithm.
func (p *ProviderTokens) keyFor(typ string) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		for _, h := range forbiddenHeaders {
			if _, ok := t.Header[h]; ok {
				return nil, errForbiddenHeader
			}
		}
		got, _ := t.Header["typ"].(string)
		if !strings.EqualFold(got, typ) && !strings.EqualFold(got, "application/"+typ) {
			return nil, errWrongType
		}
		kid, _ := t.Header["kid"].(string)
		if kid == "" {
			return nil, errMissingKID
		}
		var found any
		p.keys.PublicKeys(func(k, alg string, key crypto.PublicKey) {
			if k == kid && alg == t.Method.Alg() {
				found = key
			}
		})
		if found == nil {
			return nil, errUnknownKID
		}
		return found, nil
	}
}

// extraClaims are a token's claims with the claims hook's joined to them.
type extraClaims struct {
	jwt.Claims
	extra domain.HookClaims
}

// withExtra is c with extra's claims, or c itself when there are none.
func withExtra(c jwt.Claims, extra domain.HookClaims) jwt.Claims {
	if extra.Empty() {
		return c
	}
	return extraClaims{Claims: c, extra: extra}
}

// MarshalJSON encodes the token's claims and joins the hook's.
func (c extraClaims) MarshalJSON() ([]byte, error) {
	payload, err := json.Marshal(c.Claims)
	if err != nil {
		return nil, err
	}
	return domain.MergeClaims(payload, c.extra), nil
}
