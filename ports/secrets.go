package ports

// SecretBox encrypts secrets kept at rest (server-held private keys, the
// refresh-token HMAC key) under the operator's secret keys, with
// authentication: a sealed value opens only under the key it was sealed
// with and with the same associated data, which binds it to one row (its
// id), so that a value copied to another row, or altered, does not open.
// There is a current key, which seals, and older keys, which only open,
// so that the operator can rotate the secret key. It is safe for
// concurrent use.
type SecretBox interface {
	// Seal encrypts plaintext under the current key, bound to
	// associatedData, and returns the sealed value (which says which key
	// sealed it). It returns domain.ErrSecretKeyMissing when the box has no
	// key.
	Seal(plaintext, associatedData []byte) ([]byte, error)
	// Open returns the plaintext of a value Seal returned for the same
	// associatedData. It returns an error wrapping
	// domain.ErrSecretKeyUnknown when the value was sealed under a key the
	// box does not hold, domain.ErrSecretInvalid when the value is not a
	// sealed value, was altered, or was sealed for other associated data,
	// and domain.ErrSecretKeyMissing when the box has no key.
	Open(sealed, associatedData []byte) ([]byte, error)
	// Current reports whether sealed was sealed under the current key in
	// the current format; re-encryption rewrites the values for which it
	// is false. It does not authenticate the value.
	Current(sealed []byte) bool
}
