package domain

import "time"

// FactorProof is what a caller must show, beside its access token, to add
// or remove a second factor of its own account. A token alone (stolen from
// a browser, or left signed in on a shared computer) must never add a way
// in that outlives the password, nor take one away: the person proves
// themselves again.
type FactorProof int

// Proofs of a change of factors.
const (
	// ProofSession: the session itself proves the person; nothing else is
	// asked.
	ProofSession FactorProof = iota
	// ProofPassword: the account's current password, checked under the
	// per-email lock-out like a login's.
	ProofPassword
)

// HasPassword reports whether the account can sign in with a password. An
// account that only ever signed in another way (a passkey, a provider)
// has none, and proves itself by its session instead.
func (u *User) HasPassword() bool { return u.PasswordHash != "" }

// FactorChange is a change of an account's second factors, as the proof
// it needs depends on it.
type FactorChange int

// Changes of second factors.
const (
	// AddFactor: a passkey is registered, or a TOTP factor enrolled.
	AddFactor FactorChange = iota
	// RemoveFactor: a passkey is removed. (A TOTP factor is removed with
	// one of its own codes, which proves more than a password.)
	RemoveFactor
)

// ProofToChangeFactors says what p must show to make change to its own
// account u at now, given whether its request carries a password:
//   - a removal by a session that signed in with a second factor (acr
//     aal2) needs nothing more, when no password is sent;
//   - an account that has a second factor already needs a strong session
//     (aal2, or signed in within RecentSignIn), password or not: else a
//     thief who also knows the password would add a way in, or take one
//     away, that the second factor was meant to guard;
//   - then an account with a password must send it (ProofPassword), and
//     one without needs a strong session (ProofSession).
//
// A session that is not strong enough is ErrRecentSignInRequired.
func (p *Principal) ProofToChangeFactors(u User, change FactorChange, passwordSent bool, now time.Time) (FactorProof, error) {
	strong := p.Session.Strong(now)
	switch {
	case change == RemoveFactor && !passwordSent && p.Session.AMR.ACR() == ACRMultiFactor:
		return ProofSession, nil
	case u.MFAEnabled && !strong:
		return 0, ErrRecentSignInRequired
	case u.HasPassword():
		return ProofPassword, nil
	case !strong:
		return 0, ErrRecentSignInRequired
	}
	return ProofSession, nil
}
