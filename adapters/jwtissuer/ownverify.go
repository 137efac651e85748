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

// expandEd25519 returns an access-token key's public key as
// curve25519-voi checks it (decompressed and tabled once, when the key
// set is read); nil for the other algorithms, and for a key it cannot
// expand (crypto/ed25519 then decides, and refuses it as golang-jwt
// would).
func expandEd25519(method jwt.SigningMethod, verify any) *voied.ExpandedPublicKey {
	pub, ok := verify.(ed25519.PublicKey)
	if !ok || method != jwt.SigningMethodEdDSA || len(pub) != ed25519.PublicKeySize {
		return nil
	}
	x, err := voied.NewExpandedPublicKey(voied.PublicKey(pub))
	if err != nil {
		return nil
	}
	return x
}

// checkSignature is how parseOwn checks a signature made by k with
// method: golang-jwt's check for every algorithm but EdDSA; for EdDSA,
// curve25519-voi's on k's expanded key. That check costs about half of
// crypto/ed25519's (about 27 µs against 55 on this project's machines),
// and it is most of a read whose token is not in the verified-token
// cache (docs/decisions.md, "Our own tokens read without golang-jwt's
// parser; Ed25519 checked by curve25519-voi"). It returns nil when sig
// is k's signature of signing, and otherwise the error golang-jwt's
// SigningMethod.Verify returns.
func (k verificationKey) checkSignature(method jwt.SigningMethod, signing string, sig []byte) error {
	if k.ed25519 == nil {
		return method.Verify(signing, sig, k.verify)
	}
	// The message is only read (hashed): no copy of the token is made.
	msg := unsafe.Slice(unsafe.StringData(signing), len(signing)) //nolint:gosec // G103: read-only view of an immutable string
	if !voied.VerifyExpandedWithOptions(k.ed25519, msg, sig, voiStdLib) {
		return jwt.ErrEd25519Verification
	}
	return nil
}

// signature is method's signature of signing by key, as golang-jwt's
// SigningMethod.Sign makes it; for EdDSA with an ed25519.PrivateKey,
// curve25519-voi makes it, in about half the time of crypto/ed25519's
// (about 13 µs against 25 on this project's machines; 20 % of userd's
// CPU a refresh was crypto/ed25519's signing). Ed25519 signatures are
// deterministic (RFC 8032 §5.1.6): both libraries write the same bytes
// (TestEd25519Sign_agrees_with_the_standard_library).
func signature(method jwt.SigningMethod, signing string, key any) ([]byte, error) {
	priv, ok := key.(ed25519.PrivateKey)
	if !ok || method != jwt.SigningMethodEdDSA || len(priv) != ed25519.PrivateKeySize {
		return method.Sign(signing, key)
	}
	// The message is only read (hashed): no copy of the token is made.
	msg := unsafe.Slice(unsafe.StringData(signing), len(signing)) //nolint:gosec // G103: read-only view of an immutable string
	return voied.Sign(voied.PrivateKey(priv), msg), nil
}
