// Package totp implements ports.OneTimePasswords with
// github.com/pquerna/otp: TOTP secrets, their otpauth URIs (the Key URI
// Format of Google Authenticator, which authenticator apps read from a QR
// code) and the check of a code, with the domain's parameters: HMAC-SHA-1,
// 6 digits, 30 s steps, one step of skew each way, 20-byte secrets.
package totp

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	pqtotp "github.com/pquerna/otp/totp"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// encoding is the base32 of secrets: RFC 4648's alphabet without padding,
// what authenticator apps expect (a 20-byte secret needs none anyway).
var encoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// codeOpts are the parameters of a code.
var codeOpts = hotp.ValidateOpts{Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// OneTimePasswords implements ports.OneTimePasswords. Build it with New; it
// is safe for concurrent use when its random source is.
type OneTimePasswords struct {
	issuer string
	random io.Reader
}

var _ ports.OneTimePasswords = (*OneTimePasswords)(nil)

// issuerRefused are the characters an issuer may not hold: a colon
// separates issuer and account in the URI's label, and pquerna/otp
// escapes the issuer parameter with url.PathEscape, which leaves &, ; and +
// as they are, so that a reader of the URI would cut the issuer at & or ;
// and read + as a space.
const issuerRefused = ":&;+"

// New returns the adapter for an issuer, the name an authenticator app
// shows above the account. random is the source of secrets; nil means
// crypto/rand. An empty issuer, or one holding any of : & ; +, is refused.
func New(issuer string, random io.Reader) (*OneTimePasswords, error) {
	if strings.TrimSpace(issuer) == "" {
		return nil, errors.New("totp: the issuer is empty")
	}
	if strings.ContainsAny(issuer, issuerRefused) {
		return nil, fmt.Errorf("totp: the issuer %q holds one of %q, which an otpauth URI cannot carry as they are", issuer, issuerRefused)
	}
	if random == nil {
		random = rand.Reader
	}
	return &OneTimePasswords{issuer: issuer, random: random}, nil
}

// NewSecret returns a secret of domain.TOTPSecretSize random bytes, its
// base32 form and the otpauth URI of the issuer and account, e.g.
// otpauth://totp/Example:ada@example.com?algorithm=SHA1&digits=6&issuer=Example&period=30&secret=…
func (o *OneTimePasswords) NewSecret(account string) (secret []byte, encoded, uri string, err error) {
	secret = make([]byte, domain.TOTPSecretSize)
	if _, err := io.ReadFull(o.random, secret); err != nil {
		return nil, "", "", fmt.Errorf("totp secret: %w", err)
	}
	key, err := pqtotp.Generate(pqtotp.GenerateOpts{
		Issuer:      o.issuer,
		AccountName: account,
		Period:      uint(domain.TOTPPeriod / time.Second),
		SecretSize:  domain.TOTPSecretSize,
		Secret:      secret,
		Digits:      otp.DigitsSix,
		Algorithm:   otp.AlgorithmSHA1,
	})
	if err != nil {
		return nil, "", "", fmt.Errorf("totp key: %w", err)
	}
	return secret, key.Secret(), key.URL(), nil
}

// Match returns the greatest step within domain.TOTPSkewSteps of now's
// whose code is code and that is greater than after. The code of every
// step of the window is computed and compared, in constant time, whatever
// the outcome, so that the time taken tells nothing about which step
// matched or whether one did. A code that is not domain.TOTPDigits digits
// never matches. Each call computes three HMAC-SHA-1, whatever the code
// (BenchmarkMatch; its figures in docs/performance.md).
func (o *OneTimePasswords) Match(secret []byte, code string, now time.Time, after int64) (int64, bool) {
	code, ok := domain.ParseTOTPCode(code)
	if !ok || len(secret) == 0 {
		return 0, false
	}
	encoded := encoding.EncodeToString(secret)
	current := domain.TOTPStep(now)
	var best int64
	found := 0
	for step := current - domain.TOTPSkewSteps; step <= current+domain.TOTPSkewSteps; step++ {
		if step < 0 {
			continue // before 1970: no code
		}
		want, err := hotp.GenerateCodeCustom(encoded, uint64(step), codeOpts)
		if err != nil {
			return 0, false // cannot happen: encoded is our own base32
		}
		m := subtle.ConstantTimeCompare([]byte(want), []byte(code))
		if step <= after {
			m = 0
		}
		// The steps rise: a later match replaces an earlier one, without
		// a branch on the comparison.
		mask := -int64(m)
		best = best&^mask | step&mask
		found |= m
	}
	return best, found == 1
}
