package domain

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"slices"
	"time"
)

// AuditEventType names a kind of security event. The values are stable:
// they are stored, served by GET /api/audit and counted in metrics.
type AuditEventType string

// The security events userd records.
const (
	// AuditUserCreated: an account was created (registration, an admin,
	// the bootstrap admin or `userd admin create`).
	AuditUserCreated AuditEventType = "user.created"
	// AuditUserUpdated: an account's fields changed; Detail names the
	// fields, never their values.
	AuditUserUpdated AuditEventType = "user.updated"
	// AuditUserDeleted: an account was deleted (its sessions with it).
	AuditUserDeleted AuditEventType = "user.deleted"
	// AuditLoginSucceeded: a password check opened a session.
	AuditLoginSucceeded AuditEventType = "login.succeeded"
	// AuditLoginFailed: a password check failed (login, or the
	// currentPassword of an update).
	AuditLoginFailed AuditEventType = "login.failed"
	// AuditLoginThrottled: a password check was refused unchecked because
	// the email is locked out after too many failures.
	AuditLoginThrottled AuditEventType = "login.throttled"
	// AuditLoginUnlocked: an admin lifted the lock-out of a user's email;
	// its failed password checks are forgotten.
	AuditLoginUnlocked AuditEventType = "login.unlocked"
	// AuditRefreshReuseDetected: a used refresh token was presented again
	// outside the grace window; its family is revoked.
	AuditRefreshReuseDetected AuditEventType = "refresh.reuse_detected"
	// AuditSessionRevoked: refresh-token families were ended (logout, reuse,
	// a change of credentials or profiles).
	AuditSessionRevoked AuditEventType = "session.revoked"
	// AuditKeyRotated: a new signing key was added (access tokens, or the
	// OpenID provider's).
	AuditKeyRotated AuditEventType = "key.rotated"
	// AuditEmailVerificationRequested: a verification link was sent at
	// someone's request (not at registration or a change of email).
	AuditEmailVerificationRequested AuditEventType = "email_verification.requested"
	// AuditEmailVerificationCompleted: a verification link was used; the
	// account's email is verified.
	AuditEmailVerificationCompleted AuditEventType = "email_verification.completed"
	// AuditPasswordResetRequested: a reset link was sent, at an anonymous
	// request or by an admin (ActorID, and by=admin in Detail).
	AuditPasswordResetRequested AuditEventType = "password_reset.requested"
	// AuditPasswordResetCompleted: a reset link set a new password; the
	// account's sessions ended.
	AuditPasswordResetCompleted AuditEventType = "password_reset.completed"
	// AuditMailGivenUp: a message could not be delivered and was given up
	// (refused by the server, or still failing after a day).
	AuditMailGivenUp AuditEventType = "mail.given_up"
	// AuditTOTPEnabled: a TOTP factor was confirmed; recovery codes were
	// made with it.
	AuditTOTPEnabled AuditEventType = "mfa.totp_enabled"
	// AuditTOTPDisabled: the user removed its TOTP factor.
	AuditTOTPDisabled AuditEventType = "mfa.totp_disabled"
	// AuditRecoveryCodesRenewed: new recovery codes replaced the old.
	AuditRecoveryCodesRenewed AuditEventType = "mfa.recovery_codes_renewed"
	// AuditRecoveryCodeUsed: a recovery code was spent (a login, or the
	// proof for a change of factors); Detail tells how many are left.
	AuditRecoveryCodeUsed AuditEventType = "mfa.recovery_code_used"
	// AuditMFAReset: an admin removed every factor and passkey of a user.
	AuditMFAReset AuditEventType = "mfa.reset"
	// AuditPasskeyRegistered: a passkey was added.
	AuditPasskeyRegistered AuditEventType = "passkey.registered"
	// AuditPasskeyRemoved: the user removed a passkey.
	AuditPasskeyRemoved AuditEventType = "passkey.removed"
	// AuditPasskeyRenamed: the user gave a passkey a new name; Detail
	// names the passkey by id, never by the name typed.
	AuditPasskeyRenamed AuditEventType = "passkey.renamed"
)

// AuditEventTypes lists every event type, in the order above.
var AuditEventTypes = []AuditEventType{
	AuditUserCreated, AuditUserUpdated, AuditUserDeleted,
	AuditLoginSucceeded, AuditLoginFailed, AuditLoginThrottled, AuditLoginUnlocked,
	AuditRefreshReuseDetected, AuditSessionRevoked, AuditKeyRotated,
	AuditEmailVerificationRequested, AuditEmailVerificationCompleted,
	AuditPasswordResetRequested, AuditPasswordResetCompleted, AuditMailGivenUp,
	AuditTOTPEnabled, AuditTOTPDisabled, AuditRecoveryCodesRenewed, AuditRecoveryCodeUsed,
	AuditMFAReset, AuditPasskeyRegistered, AuditPasskeyRemoved, AuditPasskeyRenamed,
	AuditOAuthClientCreated, AuditOAuthClientUpdated, AuditOAuthClientDeleted, AuditOAuthClientSecretRotated,
	AuditConsentGiven, AuditConsentRevoked,
	AuditIdentityProviderCreated, AuditIdentityProviderUpdated, AuditIdentityProviderDeleted,
	AuditIdentitySignIn, AuditIdentitySignInRefused, AuditIdentityLinked, AuditIdentityUnlinked,
	AuditTokenCreated, AuditTokenRevoked,
}

// ParseAuditEventType returns s as an event type when it is one of
// AuditEventTypes; ok is false for anything else.
func ParseAuditEventType(s string) (t AuditEventType, ok bool) {
	t = AuditEventType(s)
	return t, slices.Contains(AuditEventTypes, t)
}

// AuditEvent is one entry of the audit trail. It never holds a password, a
// token or a hash: Detail is built by userd from fixed words, ids and
// profile or field names, never from what a client typed.
type AuditEvent struct {
	ID   AuditID
	Time time.Time
	Type AuditEventType
	// ActorID is the signed-in user who acted; empty for an anonymous
	// caller or an operator's command.
	ActorID UserID
	// SubjectID is the user the event concerns; empty when there is none
	// (a failed login for an email nobody has, a key rotation).
	SubjectID UserID
	// ClientIP and RequestID come from the HTTP request (RequestMeta);
	// empty for the CLI.
	ClientIP  string
	RequestID string
	// Detail is a short space-separated list of key=value words.
	Detail string
}

// AuditID identifies an audit event: 32 lowercase hexadecimal characters
// encoding 16 bytes, 8 of big-endian Unix microseconds followed by 8 random
// bytes. Ids sort by time, which list order and cursors rely on.
type AuditID string

// auditIDLen is the length of an AuditID in characters.
const auditIDLen = 32

// ErrInvalidAuditID is returned for a string that is not 32 lowercase hex
// characters.
var ErrInvalidAuditID = errors.New("invalid audit event id")

// NewAuditID returns a fresh id for an event at t.
func NewAuditID(t time.Time) AuditID {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMicro()))
	// crypto/rand.Read never returns an error since Go 1.24; it panics instead.
	_, _ = rand.Read(b[8:])
	return AuditID(hex.EncodeToString(b[:]))
}

// ParseAuditID checks that s is 32 lowercase hexadecimal characters and
// returns it as an AuditID; anything else is ErrInvalidAuditID.
func ParseAuditID(s string) (AuditID, error) {
	if len(s) != auditIDLen {
		return "", ErrInvalidAuditID
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", ErrInvalidAuditID
		}
	}
	return AuditID(s), nil
}

// String returns the id in its 32-character form.
func (id AuditID) String() string { return string(id) }
