package domain

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// The constructors below are the only way userd builds audit events, so
// that each type always carries the same detail words. Detail holds only
// userd's own words, ids and names, never a value a client typed. Time, id
// and the request's metadata are stamped when the event is recorded.

// Origin says through which door an account was created or a key rotated,
// when it was not the HTTP API.
type Origin string

// Origins.
const (
	// OriginAPI: the HTTP API; no origin word is recorded.
	OriginAPI Origin = ""
	// OriginOperator: the bootstrap admin or a `userd` command.
	OriginOperator Origin = "operator"
	// OriginImport: `userd users import`.
	OriginImport Origin = "import"
	// OriginRegistration: the OpenID provider's dynamic registration
	// (RFC 7591), open to anyone when it is on.
	OriginRegistration Origin = "registration"
	// OriginIdentityProvider: the first sign-in of a person through
	// another identity provider (autoCreate).
	OriginIdentityProvider Origin = "idp"
	// OriginEmailSignUp: the first right code or link sent to an email
	// no account had (USERD_EMAIL_SIGNUP).
	OriginEmailSignUp Origin = "email_sign_up"
)

// PasswordCheck names where a password was checked against an account.
type PasswordCheck string

// Password checks.
const (
	// CheckLogin: POST /auth/login.
	CheckLogin PasswordCheck = "login"
	// CheckCurrentPassword: the currentPassword of an update (or of a TOTP
	// enrolment).
	CheckCurrentPassword PasswordCheck = "current_password"
	// CheckSecondFactor: the second step of a login (POST /auth/login/mfa,
	// or a passkey after a password).
	CheckSecondFactor PasswordCheck = "second_factor"
	// CheckFactorCode: a TOTP or recovery code by which a signed-in user
	// proves itself, to turn TOTP off or renew its recovery codes.
	CheckFactorCode PasswordCheck = "factor_code"
	// CheckEmailCode: a sign-in code sent by mail (POST
	// /auth/email-code/verify).
	CheckEmailCode PasswordCheck = "email_code"
)

// LoginFailure says why a password check failed.
type LoginFailure string

// Login failures.
const (
	FailureWrongPassword LoginFailure = "wrong_password"
	// FailureUnknownEmail: no account has the email; the event names none.
	FailureUnknownEmail LoginFailure = "unknown_email"
	// FailureMalformedEmail: the string could not be an email at all; not
	// even it is kept.
	FailureMalformedEmail LoginFailure = "malformed_email"
	// FailureAccountDisabled: the password was right, the account disabled.
	FailureAccountDisabled LoginFailure = "account_disabled"
	// FailureEmailNotVerified: the password was right, the deployment
	// requires a verified email and the account's is not.
	FailureEmailNotVerified LoginFailure = "email_not_verified"
	// FailureWrongCode: a wrong TOTP or recovery code in a login's second
	// step, or a wrong sign-in code sent by mail.
	FailureWrongCode LoginFailure = "wrong_code"
	// FailureWrongPasskey: a passkey assertion that did not verify.
	FailureWrongPasskey LoginFailure = "wrong_passkey"
)

// SessionEnd says why sessions were ended.
type SessionEnd string

// Reasons for ending sessions.
const (
	// EndedByLogout: the holder of the refresh token logged out.
	EndedByLogout SessionEnd = "logout"
	// EndedByReuse: a refresh token was reused; its family is burnt.
	EndedByReuse SessionEnd = "reuse"
	// EndedByCredentialChange: the account's password, email or profiles
	// changed, or it was disabled; every session ends.
	EndedByCredentialChange SessionEnd = "credential_change" //nolint:gosec // G101: the name of a reason sessions end, not a credential
	// EndedByPasswordReset: a reset link set a new password.
	EndedByPasswordReset SessionEnd = "password_reset"
	// EndedByMFAReset: an admin removed the account's second factors.
	EndedByMFAReset SessionEnd = "mfa_reset"
	// EndedByRevocation: the user, or an admin, ended the session by its
	// id (DELETE /api/users/{id}/sessions[/{sid}]).
	EndedByRevocation SessionEnd = "revoked"
)

// UserCreatedEvent records that actor (empty for an anonymous or operator
// caller) created the account subject with the profiles.
func UserCreatedEvent(actor, subject UserID, profiles Profiles, origin Origin) AuditEvent {
	return AuditEvent{Type: AuditUserCreated, ActorID: actor, SubjectID: subject,
		Detail: detail("profiles", strings.Join(profiles.Strings(), ","), "origin", string(origin))}
}

// UserUpdatedEvent records that actor changed the fields (names, never
// values) of subject.
func UserUpdatedEvent(actor, subject UserID, fields []string) AuditEvent {
	return AuditEvent{Type: AuditUserUpdated, ActorID: actor, SubjectID: subject,
		Detail: detail("fields", strings.Join(fields, ","))}
}

// UserDeletedEvent records that actor deleted subject.
func UserDeletedEvent(actor, subject UserID) AuditEvent {
	return AuditEvent{Type: AuditUserDeleted, ActorID: actor, SubjectID: subject}
}

// LoginSucceededEvent records that user signed in, and how (the session's
// amr, e.g. "pwd,otp,mfa").
func LoginSucceededEvent(user UserID, amr AMR) AuditEvent {
	return AuditEvent{Type: AuditLoginSucceeded, ActorID: user, SubjectID: user,
		Detail: detail("via", string(CheckLogin), "amr", strings.Join(amr, ","))}
}

// LoginFailedEvent records that a password check for subject (empty when no
// account has the email) failed, at a login or for actor's currentPassword.
func LoginFailedEvent(actor, subject UserID, via PasswordCheck, why LoginFailure) AuditEvent {
	return AuditEvent{Type: AuditLoginFailed, ActorID: actor, SubjectID: subject,
		Detail: detail("via", string(via), "reason", string(why))}
}

// LoginThrottledEvent records that a password check was refused unchecked
// because the email is locked out for wait more. why is FailureUnknownEmail
// for an email that no account has, and empty otherwise.
func LoginThrottledEvent(actor, subject UserID, via PasswordCheck, why LoginFailure, wait time.Duration) AuditEvent {
	return AuditEvent{Type: AuditLoginThrottled, ActorID: actor, SubjectID: subject,
		Detail: detail("via", string(via), "reason", string(why), "retry_after", seconds(wait))}
}

// LoginUnlockedEvent records that the admin actor lifted the lock-out of
// subject's email: its failed password checks are forgotten, whether or
// not they had locked it.
func LoginUnlockedEvent(actor, subject UserID) AuditEvent {
	return AuditEvent{Type: AuditLoginUnlocked, ActorID: actor, SubjectID: subject}
}

// RefreshReuseDetectedEvent records that a used refresh token of subject's
// family was presented again outside the grace window.
func RefreshReuseDetectedEvent(subject UserID, family string) AuditEvent {
	return AuditEvent{Type: AuditRefreshReuseDetected, SubjectID: subject, Detail: detail("family", family)}
}

// SessionRevokedEvent records that the session family of subject ended, or
// every session of subject when family is empty.
func SessionRevokedEvent(actor, subject UserID, why SessionEnd, family string) AuditEvent {
	scope := ""
	if family == "" {
		scope = "all"
	}
	return AuditEvent{Type: AuditSessionRevoked, ActorID: actor, SubjectID: subject,
		Detail: detail("reason", string(why), "family", family, "scope", scope)}
}

// KeyRotatedEvent records that actor (empty for the operator) added the
// signing key kid (of access tokens, or of the OpenID provider).
func KeyRotatedEvent(actor UserID, kid, algorithm string, origin Origin) AuditEvent {
	return AuditEvent{Type: AuditKeyRotated, ActorID: actor,
		Detail: detail("kid", kid, "algorithm", algorithm, "origin", string(origin))}
}

// EmailVerificationRequestedEvent records that a verification link was
// sent to subject at someone's request.
func EmailVerificationRequestedEvent(subject UserID) AuditEvent {
	return AuditEvent{Type: AuditEmailVerificationRequested, SubjectID: subject}
}

// EmailVerificationCompletedEvent records that subject used a
// verification link.
func EmailVerificationCompletedEvent(subject UserID) AuditEvent {
	return AuditEvent{Type: AuditEmailVerificationCompleted, ActorID: subject, SubjectID: subject}
}

// PasswordResetRequestedEvent records that a reset link was sent to
// subject: at an anonymous request (actor empty: whoever asked is not
// known, only that someone typed the email), or by the admin actor.
func PasswordResetRequestedEvent(actor, subject UserID) AuditEvent {
	by := ""
	if actor != "" {
		by = "admin"
	}
	return AuditEvent{Type: AuditPasswordResetRequested, ActorID: actor, SubjectID: subject,
		Detail: detail("by", by)}
}

// PasswordResetCompletedEvent records that subject set a new password
// with a reset link.
func PasswordResetCompletedEvent(subject UserID) AuditEvent {
	return AuditEvent{Type: AuditPasswordResetCompleted, ActorID: subject, SubjectID: subject}
}

// MailGivenUpEvent records that a message of the template to subject
// (empty when the address is no account's) was given up; why is
// "rejected" (the server refused it) or "expired" (still failing after a
// day).
func MailGivenUpEvent(subject UserID, template MailTemplate, why string) AuditEvent {
	return AuditEvent{Type: AuditMailGivenUp, SubjectID: subject,
		Detail: detail("template", string(template), "reason", why)}
}

// TOTPEnabledEvent records that subject confirmed a TOTP factor.
func TOTPEnabledEvent(subject UserID) AuditEvent {
	return AuditEvent{Type: AuditTOTPEnabled, ActorID: subject, SubjectID: subject}
}

// TOTPDisabledEvent records that subject removed its TOTP factor.
func TOTPDisabledEvent(subject UserID) AuditEvent {
	return AuditEvent{Type: AuditTOTPDisabled, ActorID: subject, SubjectID: subject}
}

// RecoveryCodesRenewedEvent records that subject replaced its recovery
// codes.
func RecoveryCodesRenewedEvent(subject UserID) AuditEvent {
	return AuditEvent{Type: AuditRecoveryCodesRenewed, ActorID: subject, SubjectID: subject}
}

// RecoveryCodeUsedEvent records that a recovery code of subject was spent,
// and how many are left.
func RecoveryCodeUsedEvent(subject UserID, left int) AuditEvent {
	return AuditEvent{Type: AuditRecoveryCodeUsed, ActorID: subject, SubjectID: subject,
		Detail: detail("left", strconv.Itoa(left))}
}

// MFAResetEvent records that actor removed every second factor of subject:
// a TOTP factor (totp), and passkeys passkeys.
func MFAResetEvent(actor, subject UserID, totp bool, passkeys int) AuditEvent {
	return AuditEvent{Type: AuditMFAReset, ActorID: actor, SubjectID: subject,
		Detail: detail("totp", strconv.FormatBool(totp), "passkeys", strconv.Itoa(passkeys))}
}

// PasskeyRegisteredEvent records that subject added the passkey.
func PasskeyRegisteredEvent(subject UserID, passkey PasskeyID) AuditEvent {
	return AuditEvent{Type: AuditPasskeyRegistered, ActorID: subject, SubjectID: subject,
		Detail: detail("passkey", string(passkey))}
}

// PasskeyRemovedEvent records that subject removed the passkey.
func PasskeyRemovedEvent(subject UserID, passkey PasskeyID) AuditEvent {
	return AuditEvent{Type: AuditPasskeyRemoved, ActorID: subject, SubjectID: subject,
		Detail: detail("passkey", string(passkey))}
}

// PasskeyRenamedEvent records that subject renamed the passkey. The new
// name is left out: the user typed it.
func PasskeyRenamedEvent(subject UserID, passkey PasskeyID) AuditEvent {
	return AuditEvent{Type: AuditPasskeyRenamed, ActorID: subject, SubjectID: subject,
		Detail: detail("passkey", string(passkey))}
}

// detail joins key=value words, leaving out empty values.
func detail(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv[i])
		b.WriteByte('=')
		b.WriteString(kv[i+1])
	}
	return b.String()
}

// seconds renders a wait as whole seconds, rounded up: "30s".
func seconds(d time.Duration) string {
	return strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10) + "s"
}
