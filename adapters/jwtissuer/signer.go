package jwtissuer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/userd/userd/domain"
)

// claims are the claims of an access token.
type claims struct {
	jwt.RegisteredClaims
	// Audience shadows RegisteredClaims.Audience, both for encoding/json and
	// for the validator (see GetAudience). The contract wants aud as a single
	// string; golang-jwt writes one only while the package-wide
	// jwt.MarshalSingleStringAsArray is false, and flipping that would change
	// every other user of the library in the process. As a string field it
	// also makes a token whose aud is an array fail to decode, so only a
	// single string is accepted.
	Audience string   `json:"aud,omitempty"`
	Profiles []string `json:"profiles"`
	// The session claims: sid (the refresh-token family), auth_time (Unix
	// seconds of the sign-in), amr (RFC 8176) and acr. Tokens signed
	// before they existed have none, and are read as a password session.
	SessionID string           `json:"sid,omitempty"`
	AuthTime  *jwt.NumericDate `json:"auth_time,omitempty"`
	AMR       []string         `json:"amr,omitempty"`
	ACR       string           `json:"acr,omitempty"`
}

// GetAudience makes the validator check the shadowing Audience field.
func (c claims) GetAudience() (jwt.ClaimStrings, error) {
	if c.Audience == "" {
		return nil, nil
	}
	return jwt.ClaimStrings{c.Audience}, nil
}

// Issue returns a signed access token for u in session s, valid from now
// for the TTL, with the typ header of RFC 9068, the kid of the key that
// signs now, and the claims hook's extra claims. Before Start has loaded
// the keys it fails.
func (i *Issuer) Issue(_ context.Context, u domain.User, session domain.Session, extra domain.HookClaims) (domain.AccessToken, error) {
	ks := i.snapshot()
	if ks == nil {
		return domain.AccessToken{}, fmt.Errorf("issue access token: %w", errNotStarted)
	}
	if _, err := domain.ParseUserID(string(u.ID)); err != nil {
		return domain.AccessToken{}, fmt.Errorf("issue access token: %w", err)
	}
	jti, err := uuid.NewRandom()
	if err != nil {
		return domain.AccessToken{}, fmt.Errorf("issue access token: jti: %w", err)
	}
	// JWT times have whole seconds; truncating here makes ExpiresAt equal
	// to the exp claim.
	clockNow := i.clock.Now()
	now := clockNow.Truncate(time.Second)
	exp := now.Add(i.opts.TTL)
	c := claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    i.opts.Issuer,
			Subject:   u.ID.String(),
			ExpiresAt: jwt.NewNumericDate(exp),
			NotBefore: jwt.NewNumericDate(now),
			IssuedAt:  jwt.NewNumericDate(now),
			ID:        jti.String(),
		},
		Audience:  i.opts.Audience,
		Profiles:  u.Profiles.Canonical().Strings(),
		SessionID: session.ID,
		AMR:       session.AMR,
		ACR:       session.AMR.ACR(),
	}
	if !session.AuthTime.IsZero() {
		c.AuthTime = jwt.NewNumericDate(session.AuthTime.Truncate(time.Second))
	}

	key := ks.signer(clockNow)
	s, err := signToken(i.alg.method, key, c, extra)
	if err != nil {
		return domain.AccessToken{}, fmt.Errorf("issue access token: %w", err)
	}
	return domain.AccessToken{Token: s, ExpiresAt: exp}, nil
}

// signToken is what jwt.Token's SignedString does, with the key's header
// encoded beforehand (encodedHeader): the same bytes, less a JSON
// encoding of a map per token. extra's claims join c's.
func signToken(method jwt.SigningMethod, key verificationKey, c claims, extra domain.HookClaims) (string, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	payload = domain.MergeClaims(payload, extra)
	enc := base64.RawURLEncoding
	var b strings.Builder
	b.Grow(len(key.header) + 1 + enc.EncodedLen(len(payload)) + 1 + 128)
	b.WriteString(key.header)
	b.WriteByte('.')
	b.WriteString(enc.EncodeToString(payload))
	sig, err := signature(method, b.String(), key.sign)
	if err != nil {
		return "", err
	}
	b.WriteByte('.')
	b.WriteString(enc.EncodeToString(sig))
	return b.String(), nil
}

// encodedHeader is the first part of every token the key kid signs with
// method: the header jwt.NewWithClaims makes, with the typ of RFC 9068
// and the kid, encoded as golang-jwt encodes it (JSON with sorted keys,
// unpadded base64url).
func encodedHeader(method jwt.SigningMethod, kid string) string {
	h, err := json.Marshal(map[string]string{"alg": method.Alg(), "typ": TokenType, "kid": kid})
	if err != nil {
		panic(err) // a map of strings always encodes
	}
	return base64.RawURLEncoding.EncodeToString(h)
}
