package ports

import (
	"context"
	"encoding/json"
	"time"

	"github.com/userd/userd/domain"
)

// MFAStore keeps the second factors of users: the TOTP factor and the
// recovery codes. A TOTP secret is sealed at rest by a store that keeps it
// outside the process. Every method may return an error wrapping
// domain.ErrUnavailable, and joins the transaction of its context
// (ports.Transactor).
type MFAStore interface {
	// PutTOTP stores f as the user's pending TOTP factor, replacing a
	// pending one. It returns domain.ErrMFAAlreadyEnabled when the user
	// has a confirmed factor, and domain.ErrUserNotFound when there is no
	// such user.
	PutTOTP(ctx context.Context, f domain.TOTPFactor) error
	// TOTP returns the user's factor, pending or confirmed, or
	// domain.ErrMFANotEnabled when there is none.
	TOTP(ctx context.Context, user domain.UserID) (domain.TOTPFactor, error)
	// AcceptTOTPStep records that a code of step was accepted at at,
	// provided step is greater than the factor's LastStep; with confirm,
	// the factor must be pending and is confirmed (ConfirmedAt = at),
	// without it the factor must be confirmed. It is one conditional write:
	// of two concurrent acceptances of one step, on any nodes, one reports
	// true. It reports false (and writes nothing) otherwise, also when the
	// factor is missing or in the other state.
	AcceptTOTPStep(ctx context.Context, user domain.UserID, step int64, at time.Time, confirm bool) (bool, error)
	// DeleteTOTP removes the user's factor, pending or confirmed, and
	// reports whether a confirmed one was removed.
	DeleteTOTP(ctx context.Context, user domain.UserID) (bool, error)
	// ReplaceRecoveryCodes removes the user's recovery codes and stores
	// the hashes (domain.HashRecoveryCode) as the new ones.
	ReplaceRecoveryCodes(ctx context.Context, user domain.UserID, hashes []string, at time.Time) error
	// UseRecoveryCode marks the user's unused code with that hash used at
	// at, in one conditional write, and reports whether there was one.
	UseRecoveryCode(ctx context.Context, user domain.UserID, hash string, at time.Time) (bool, error)
	// DeleteRecoveryCodes removes the user's recovery codes.
	DeleteRecoveryCodes(ctx context.Context, user domain.UserID) error
	// Summary counts the user's factors: whether a confirmed TOTP factor
	// exists, the passkeys (those of the PasskeyStore of the same
	// database) and the unused recovery codes. An unknown user has none.
	Summary(ctx context.Context, user domain.UserID) (domain.MFASummary, error)
}

// MFAChallengeStore keeps the mfaTokens of logins waiting for their
// second step, by hash. Every method may return an error wrapping
// domain.ErrUnavailable, and joins the transaction of its context.
type MFAChallengeStore interface {
	// CreateChallenge stores c. It returns domain.ErrUserNotFound when
	// its user does not exist. A store may drop challenges that expired
	// before c was created.
	CreateChallenge(ctx context.Context, c domain.MFAChallenge) error
	// Challenge returns the challenge with the hash if it is usable at now
	// (domain.MFAChallenge.Usable), else domain.ErrInvalidMFAToken.
	Challenge(ctx context.Context, hash string, now time.Time) (domain.MFAChallenge, error)
	// FailChallenge counts one wrong code against the usable challenge
	// and returns it after; at domain.MFAChallengeMaxFailures it is void.
	// It returns domain.ErrInvalidMFAToken when the challenge is not
	// usable at now. Concurrent failures are all counted.
	FailChallenge(ctx context.Context, hash string, now time.Time) (domain.MFAChallenge, error)
	// UseChallenge marks the usable challenge used at now, in one
	// conditional write, and returns it; of concurrent uses one succeeds,
	// the others get domain.ErrInvalidMFAToken.
	UseChallenge(ctx context.Context, hash string, now time.Time) (domain.MFAChallenge, error)
}

// PasskeyStore keeps the passkeys of users and the ceremonies begun to
// register or use them. Every method may return an error wrapping
// domain.ErrUnavailable, and joins the transaction of its context.
type PasskeyStore interface {
	// CreatePasskey stores p. It returns domain.ErrPasskeyExists when a
	// passkey with its credential id exists (of any user), and
	// domain.ErrUserNotFound when its user does not.
	CreatePasskey(ctx context.Context, p domain.Passkey) error
	// Passkeys returns the user's passkeys, oldest first.
	Passkeys(ctx context.Context, user domain.UserID) ([]domain.Passkey, error)
	// PasskeyByCredentialID returns the passkey with the credential id,
	// or domain.ErrPasskeyNotFound.
	PasskeyByCredentialID(ctx context.Context, credentialID []byte) (domain.Passkey, error)
	// RecordPasskeyUse stores the counter, the credential record and the
	// time of a verified assertion, provided the counter moved forward
	// (or both the stored and the new counter are 0: an authenticator
	// that keeps none), in one conditional write, and reports whether it
	// did. A false answer means a concurrent or replayed assertion, or a
	// cloned authenticator.
	RecordPasskeyUse(ctx context.Context, id domain.PasskeyID, signCount uint32, credential []byte, at time.Time) (bool, error)
	// RenamePasskey sets the name of the user's passkey, in one
	// conditional write, and returns the passkey as it is now; another
	// user's passkey, or a missing one, is domain.ErrPasskeyNotFound. The
	// name is stored as given: the caller has checked it
	// (domain.ParsePasskeyName).
	RenamePasskey(ctx context.Context, user domain.UserID, id domain.PasskeyID, name string) (domain.Passkey, error)
	// DeletePasskey removes the user's passkey, or returns
	// domain.ErrPasskeyNotFound (also for another user's passkey).
	DeletePasskey(ctx context.Context, user domain.UserID, id domain.PasskeyID) error
	// DeletePasskeys removes every passkey of the user and returns how
	// many there were.
	DeletePasskeys(ctx context.Context, user domain.UserID) (int, error)
	// CreateCeremony stores a begun ceremony. It returns
	// domain.ErrUserNotFound when the ceremony names a user that does not
	// exist. A store may drop ceremonies that expired before c began.
	CreateCeremony(ctx context.Context, c domain.PasskeyCeremony) error
	// TakeCeremony removes and returns the ceremony with the id and
	// purpose, if it has not expired at now, in one conditional write: a
	// ceremony is finished at most once, on any node. Anything else is
	// domain.ErrInvalidPasskey.
	TakeCeremony(ctx context.Context, id string, purpose domain.CeremonyPurpose, now time.Time) (domain.PasskeyCeremony, error)
}

// OneTimePasswords makes TOTP secrets and checks their codes, with the
// domain's parameters (domain.TOTPPeriod, TOTPDigits, TOTPSkewSteps,
// SHA-1).
type OneTimePasswords interface {
	// NewSecret returns a random secret of domain.TOTPSecretSize bytes,
	// its base32 form (no padding) and the otpauth URI that names the
	// adapter's issuer and account.
	NewSecret(account string) (secret []byte, encoded, uri string, err error)
	// Match returns the time step within domain.TOTPSkewSteps of now's
	// whose code is code and that is greater than after, the latest such
	// step if several; false when there is none. It compares in constant
	// time.
	Match(secret []byte, code string, now time.Time, after int64) (int64, bool)
}

// PasskeyLookup finds the account and passkeys a WebAuthn assertion names:
// the user handle (the user id's 12 bytes) and the credential id. It
// returns domain.ErrInvalidPasskey when there is no such user or passkey.
type PasskeyLookup func(ctx context.Context, userHandle, credentialID []byte) (domain.User, []domain.Passkey, error)

// PasskeyRelyingParty runs the relying party's side of WebAuthn
// ceremonies: it makes the options a browser passes to
// navigator.credentials.create/get, and verifies what comes back. A
// ceremony's state is the adapter's own; the application stores it
// between the two halves. Malformed responses are
// domain.ErrMalformedPasskeyCredential; every other refusal wraps
// domain.ErrInvalidPasskey.
type PasskeyRelyingParty interface {
	// BeginRegistration returns the publicKey creation options for a new
	// passkey of user (a resident key required, user verification
	// preferred, existing credentials excluded) and the ceremony's state.
	BeginRegistration(user domain.User, existing []domain.Passkey) (options json.RawMessage, state []byte, err error)
	// FinishRegistration verifies a RegistrationResponseJSON against the
	// state and returns the passkey it makes, with CredentialID,
	// Credential and SignCount set.
	FinishRegistration(user domain.User, state []byte, response json.RawMessage) (domain.Passkey, error)
	// BeginLogin returns the publicKey request options and the state of a
	// login: a discoverable one (no allowCredentials) when allowed is
	// empty, else one limited to allowed, all of one user.
	BeginLogin(user *domain.User, allowed []domain.Passkey) (options json.RawMessage, state []byte, err error)
	// FinishLogin verifies an AuthenticationResponseJSON against the state,
	// finding the credential with lookup, and returns the assertion; a
	// signature counter that did not move forward is refused.
	FinishLogin(ctx context.Context, state []byte, response json.RawMessage, lookup PasskeyLookup) (domain.PasskeyAssertion, error)
}
