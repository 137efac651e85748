package jwtissuer

import (
	"crypto/ed25519"
	"unsafe"

	"github.com/golang-jwt/jwt/v5"
	voied "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// voiStdLib makes curve25519-voi accept exactly the signatures
// crypto/ed25519 accepts: cofactorless, S below the group order, R
// compared as bytes (TestEd25519Check_agrees_with_the_standard_library).
var voiStdLib = &voied.Options{Verify: voied.VerifyOptionsStdLib}

// signatureCheck is how parseOwn checks a signature made by a key of
// ours: golang-jwt's check for every algorithm but EdDSA; for EdDSA,
// curve25519-voi's, on the public key decompressed and tabled once, when
// the key set is read. That check costs about half of crypto/ed25519's
// (about 27 µs against 55 on this project's machines), and it is most of
// a read whose token is not in the verified-token cache
// (docs/decisions.md, "Ed25519 checks by curve25519-voi").
type signatureCheck struct {
	method jwt.SigningMethod
	verify any
	// ed25519 is the key expanded for curve25519-voi; nil for the other
	// algorithms, and for a key it cannot expand (crypto/ed25519 then
	// decides, and refuses it as golang-jwt would).
	ed25519 *voied.ExpandedPublicKey
}

func newSignatureCheck(method jwt.SigningMethod, verify any) signatureCheck {
	c := signatureCheck{method: method, verify: verify}
	if pub, ok := verify.(ed25519.PublicKey); ok && method == jwt.SigningMethodEdDSA && len(pub) == ed25519.PublicKeySize {
		if x, err := voied.NewExpandedPublicKey(voied.PublicKey(pub)); err == nil {
			c.ed25519 = x
		}
	}
	return c
}

// check returns nil when sig is the key's signature of signing, and
// otherwise the error golang-jwt's SigningMethod.Verify returns.
func (c signatureCheck) check(signing string, sig []byte) error {
	if c.ed25519 == nil {
		return c.method.Verify(signing, sig, c.verify)
	}
	// The message is only read (hashed): no copy of the token is made.
	msg := unsafe.Slice(unsafe.StringData(signing), len(signing)) //nolint:gosec // G103: read-only view of an immutable string
	if !voied.VerifyExpandedWithOptions(c.ed25519, msg, sig, voiStdLib) {
		return jwt.ErrEd25519Verification
	}
	return nil
}
