package domain

import "errors"

// Errors of secrets sealed at rest (ports.SecretBox): server-held keys and
// other secrets are stored encrypted under an operator's secret key, bound
// to the row that holds them.
var (
	// ErrSecretKeyUnknown: a stored secret was sealed under a secret key
	// that is not among the configured ones (a key removed too early, or
	// the wrong key given).
	ErrSecretKeyUnknown = errors.New("sealed under a secret key that is not configured")
	// ErrSecretInvalid: a stored secret is not a sealed value of a known
	// format, or fails authentication: it was altered, or moved from the
	// row it was sealed for.
	ErrSecretInvalid = errors.New("sealed secret is invalid or was altered")
	// ErrSecretKeyMissing: there is no secret key to seal or open with.
	ErrSecretKeyMissing = errors.New("no secret key")
)
