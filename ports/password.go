package ports

import "context"

// PasswordHasher hashes and verifies passwords.
type PasswordHasher interface {
	// Hash returns an encoded hash of password with the configured parameters.
	// It waits for a free hashing slot while ctx allows, and returns
	// domain.ErrUnavailable when none frees up in time, or ctx's error.
	Hash(ctx context.Context, password string) (string, error)
	// Verify reports whether password matches encoded, and whether encoded
	// should be replaced by a hash with the configured parameters (another
	// algorithm or other parameters). A wrong password is (false, false, nil),
	// and takes at least as long as against a hash with the configured
	// parameters, whatever encoded is: a login's timing must not tell an
	// imported account from one made here, nor from an unknown email, whose
	// password is checked against a dummy hash made with Hash.
	// Like Hash, it returns domain.ErrUnavailable or ctx's error when no
	// slot frees up in time; a hash it cannot read is any other error.
	Verify(ctx context.Context, encoded, password string) (ok bool, needsRehash bool, err error)
	// Normalize returns the form of password that Hash hashes (Unicode
	// NFKC), so that the password policy judges what is actually stored.
	Normalize(password string) string
	// CheckEncoded returns nil when encoded is a hash that Verify can check
	// passwords against (an algorithm it knows, a well-formed encoding,
	// parameters within its bounds) and that costs no more to check than a
	// hash with the configured parameters, and otherwise an error whose
	// message says why, for a person to read. Imports use it before storing
	// hashes made elsewhere: a costlier one would hold a hashing slot longer
	// at every guess, and answer a wrong password later than an unknown email.
	CheckEncoded(encoded string) error
}
