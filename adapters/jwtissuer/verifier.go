package jwtissuer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/userd/userd/domain"
)

// forbiddenHeaders are JOSE header parameters that point at key material or
// demand extensions. Keys come from our store by kid only, so a token
// carrying any of them was not made by us; refusing it outright closes the
// door on libraries or proxies downstream that might honour them.
var forbiddenHeaders = []string{"jku", "jwk", "x5u", "x5c", "x5t", "x5t#S256", "crit"}

// Reasons for rejecting a token, wrapped together with domain.ErrInvalidToken.
var (
	errForbiddenHeader = errors.New("forbidden header parameter")
	errMissingKID      = errors.New("missing kid")
	errWrongType       = errors.New("typ is not at+jwt")
	errUnknownKID      = errors.New("unknown kid")
	errRetiredKID      = errors.New("key retired")
	errMissingIAT      = errors.New("missing iat")
	errLongLifetime    = errors.New("lifetime longer than the access-token ttl")
	errBadSubject      = errors.New("sub is not a user id")
	errBadProfiles     = errors.New("missing or unknown profiles")
	errBadSession      = errors.New("amr or acr not of a session of ours")
)

// Verify checks token and returns its principal. Any failure is an error
// wrapping domain.ErrInvalidToken; its message never contains the token.
func (i *Issuer) Verify(ctx context.Context, token string) (domain.Principal, error) {
	now := i.clock.Now()
	if p, kid, ok := i.verified.get(token, now); ok {
		// A cached token is only as good as its key: one retired or
		// removed since is verified again, and refused.
		if _, err := i.lookupAt(kid, now); err == nil {
			return p, nil
		}
		i.verified.remove(token)
	}
	c, kid, decided, err := i.parseOwn(token, now)
	if !decided {
		c, kid, err = i.parseJWT(ctx, token)
	}
	if err != nil {
		return domain.Principal{}, invalid(err)
	}
	// WithIssuedAt only checks an iat that is present.
	if c.IssuedAt == nil {
		return domain.Principal{}, invalid(errMissingIAT)
	}
	// No token of ours lives longer than the TTL (the leeway allows for a
	// node whose clock differs): a longer one was made with a key that
	// leaked, to outlive the key's retirement and every session end.
	if c.ExpiresAt.Sub(c.IssuedAt.Time) > i.opts.TTL+i.opts.Leeway {
		return domain.Principal{}, invalid(errLongLifetime)
	}
	// The domain errors of the parsers are not wrapped: errors.Is must not
	// find ErrInvalidID or ErrInvalidProfile, which mean a bad request.
	id, err := domain.ParseUserID(c.Subject)
	if err != nil {
		return domain.Principal{}, invalid(errBadSubject)
	}
	if c.Profiles == nil {
		return domain.Principal{}, invalid(errBadProfiles)
	}
	profiles, err := domain.ParseProfiles(c.Profiles)
	if err != nil {
		return domain.Principal{}, invalid(errBadProfiles)
	}
	amr, ok := domain.ParseAMR(c.AMR)
	if !ok || (c.ACR != "" && c.ACR != amr.ACR()) {
		return domain.Principal{}, invalid(errBadSession)
	}
	session := domain.Session{ID: c.SessionID, AMR: amr}
	if c.AuthTime != nil {
		session.AuthTime = c.AuthTime.Time
	}
	p := domain.Principal{UserID: id, Profiles: profiles, Session: session}
	i.verified.put(token, kid, p, c.ExpiresAt.Time, now)
	return p, nil
}

// parseJWT reads token with golang-jwt's parser: every check of the
// header (keyFor), the signature and the registered claims.
func (i *Issuer) parseJWT(ctx context.Context, token string) (claims, string, error) {
	var kid string
	var c claims
	_, err := i.parser.ParseWithClaims(token, &c, func(t *jwt.Token) (any, error) {
		k, err := i.keyFor(ctx, t)
		kid, _ = t.Header["kid"].(string)
		return k, err
	})
	return c, kid, err
}

// parseOwn reads, without golang-jwt's parser, a token whose header is
// byte for byte the one a current key of ours writes (verificationKey's
// header): such a header has our alg, typ and kid and nothing else, so
// decoding it into a map and checking it, as the parser and keyFor do,
// would find what is already known. That decoding is about a fifth of
// a verification after the signature (docs/performance.md).
//
// It decides only what it is sure of, and decided is false otherwise: a
// token it accepts passes every check parseJWT makes, with the same
// claims and kid; one whose signature does not verify is refused as
// parseJWT refuses it, so that a forged token costs one signature check.
// Any other token (another header, a retired key, a malformed part,
// claims the validator refuses) is parseJWT's, which gives the reason.
// FuzzParseOwn holds the two to that.
func (i *Issuer) parseOwn(token string, now time.Time) (c claims, kid string, decided bool, err error) {
	header, rest, ok := strings.Cut(token, ".")
	if !ok {
		return claims{}, "", false, nil
	}
	payload, sigPart, ok := strings.Cut(rest, ".")
	if !ok || strings.Contains(sigPart, ".") {
		return claims{}, "", false, nil
	}
	key, ok := i.snapshot().byHeader(header)
	if !ok || key.retired(now) {
		return claims{}, "", false, nil
	}
	claimBytes, err := strictBase64URL.DecodeString(payload)
	if err != nil {
		return claims{}, "", false, nil
	}
	if c, ok = decodeOwnClaims(claimBytes); !ok && json.Unmarshal(claimBytes, &c) != nil {
		return claims{}, "", false, nil
	}
	sig, err := strictBase64URL.DecodeString(sigPart)
	if err != nil {
		return claims{}, "", false, nil
	}
	if err := key.checkSignature(i.alg.method, token[:len(header)+1+len(payload)], sig); err != nil {
		return claims{}, "", true, fmt.Errorf("%w: %w", jwt.ErrTokenSignatureInvalid, err)
	}
	if i.validator.Validate(c) != nil {
		return claims{}, "", false, nil
	}
	return c, key.kid, true, nil
}

// strictBase64URL decodes a token's segments as the parser does with
// WithStrictDecoding: canonical unpadded base64url only. Made once, not
// on every token (Strict returns a copy of the encoding).
var strictBase64URL = base64.RawURLEncoding.Strict()

func invalid(reason error) error {
	return fmt.Errorf("%w: %w", domain.ErrInvalidToken, reason)
}

// keyFor is the jwt.Keyfunc: it runs after the algorithm check and before
// the signature check.
func (i *Issuer) keyFor(ctx context.Context, t *jwt.Token) (any, error) {
	for _, h := range forbiddenHeaders {
		if _, ok := t.Header[h]; ok {
			return nil, errForbiddenHeader
		}
	}
	// RFC 9068, section 4: an access token says so, so that no other JWT
	// signed with our keys (there is none today; an ID token or a signed
	// link tomorrow) can pass for one.
	if typ, _ := t.Header["typ"].(string); !strings.EqualFold(typ, TokenType) && !strings.EqualFold(typ, "application/"+TokenType) {
		return nil, errWrongType
	}
	kid, _ := t.Header["kid"].(string)
	if kid == "" {
		return nil, errMissingKID
	}
	if k, err := i.lookup(kid); !errors.Is(err, errUnknownKID) {
		return k, err
	}
	return i.reloadForMiss(ctx, kid)
}
