package ports

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// LinkTokenStore keeps the hashes of the tokens sent in links (email
// verification, password reset, sign-in by email with its code). Every method may return an error wrapping
// domain.ErrUnavailable.
type LinkTokenStore interface {
	// Issue stores a new token. A token without a UserID is a sign-up's
	// (USERD_EMAIL_SIGNUP): bound to its email alone.
	Issue(ctx context.Context, t domain.LinkToken) error
	// Peek returns the token with the hash, provided it is of purpose,
	// unused and not expired, without using it; anything else is
	// domain.ErrInvalidLinkToken.
	Peek(ctx context.Context, hash string, purpose domain.LinkPurpose, now time.Time) (domain.LinkToken, error)
	// Use marks the token with the hash used at now and returns it, provided
	// it is of purpose, unused and not expired; anything else is
	// domain.ErrInvalidLinkToken and changes nothing. Two concurrent uses of
	// one token never both succeed. The caller checks the token against the
	// account (domain.LinkToken.Usable) within the same transaction.
	Use(ctx context.Context, hash string, purpose domain.LinkPurpose, now time.Time) (domain.LinkToken, error)
	// Void marks every unused token of the user and purpose used at now:
	// a new reset link voids the earlier ones.
	Void(ctx context.Context, user domain.UserID, purpose domain.LinkPurpose, now time.Time) error
	// UseCode uses the usable email sign-in token (purpose
	// domain.LinkEmailSignIn, unused, not expired) sent to email whose
	// CodeHash is codeHash, as Use does, and returns it. When none has it,
	// every usable sign-in token sent to email counts one wrong code, and
	// one that reaches domain.MaxEmailCodeFailures is voided (used at
	// now); the answer is domain.ErrInvalidLinkToken. Two concurrent uses
	// never both succeed, and concurrent wrong codes are each counted.
	UseCode(ctx context.Context, email domain.Email, codeHash string, now time.Time) (domain.LinkToken, error)
	// VoidTo marks every unused token of purpose sent to email used at
	// now: a new sign-in code voids the earlier ones, a sign-up's too.
	VoidTo(ctx context.Context, email domain.Email, purpose domain.LinkPurpose, now time.Time) error
	// RequestedTo is Requested for the sign-up tokens (no user) sent to
	// email: the mail budget of an address no account has.
	RequestedTo(ctx context.Context, email domain.Email, since time.Time) (int, time.Time, error)
	// Requested returns how many requested tokens (Requested set, any
	// purpose) the user was sent since since, and when the last one was:
	// the account's mail budget.
	Requested(ctx context.Context, user domain.UserID, since time.Time) (int, time.Time, error)
}
