package domain_test

import (
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

// The detail words of every event are stored and served; they must not
// drift.
func TestAuditEventConstructors(t *testing.T) {
	t.Parallel()
	a, s := domain.UserID("6740f1c2a1b2c3d4e5f60718"), domain.UserID("6740f1c2a1b2c3d4e5f60719")
	for _, tc := range []struct {
		name       string
		ev         domain.AuditEvent
		wantType   domain.AuditEventType
		actor, sub domain.UserID
		detail     string
	}{
		{"created_by_api", domain.UserCreatedEvent(a, s, both, domain.OriginAPI), domain.AuditUserCreated, a, s, "profiles=ROLE_ADMIN,ROLE_CUSTOMER"},
		{"created_by_operator", domain.UserCreatedEvent("", s, admins, domain.OriginOperator), domain.AuditUserCreated, "", s, "profiles=ROLE_ADMIN origin=operator"},
		{"created_by_import", domain.UserCreatedEvent("", s, customers, domain.OriginImport), domain.AuditUserCreated, "", s, "profiles=ROLE_CUSTOMER origin=import"},
		{"updated", domain.UserUpdatedEvent(a, s, []string{"email", "profiles"}), domain.AuditUserUpdated, a, s, "fields=email,profiles"},
		{"deleted", domain.UserDeletedEvent(a, s), domain.AuditUserDeleted, a, s, ""},
		{"login", domain.LoginSucceededEvent(s, domain.AMRPasswordOTP), domain.AuditLoginSucceeded, s, s, "via=login amr=pwd,otp,mfa"},
		{"login_failed", domain.LoginFailedEvent("", s, domain.CheckLogin, domain.FailureWrongPassword), domain.AuditLoginFailed, "", s, "via=login reason=wrong_password"},
		{"current_password_failed", domain.LoginFailedEvent(s, s, domain.CheckCurrentPassword, domain.FailureWrongPassword), domain.AuditLoginFailed, s, s, "via=current_password reason=wrong_password"},
		{"throttled_unknown", domain.LoginThrottledEvent("", "", domain.CheckLogin, domain.FailureUnknownEmail, 29*time.Second+time.Millisecond), domain.AuditLoginThrottled, "", "", "via=login reason=unknown_email retry_after=30s"},
		{"throttled_current_password", domain.LoginThrottledEvent(s, s, domain.CheckCurrentPassword, "", 30*time.Second), domain.AuditLoginThrottled, s, s, "via=current_password retry_after=30s"},
		{"unlocked", domain.LoginUnlockedEvent(a, s), domain.AuditLoginUnlocked, a, s, ""},
		{"reuse", domain.RefreshReuseDetectedEvent(s, "fam"), domain.AuditRefreshReuseDetected, "", s, "family=fam"},
		{"logout", domain.SessionRevokedEvent(s, s, domain.EndedByLogout, "fam"), domain.AuditSessionRevoked, s, s, "reason=logout family=fam"},
		{"credentials_changed", domain.SessionRevokedEvent(a, s, domain.EndedByCredentialChange, ""), domain.AuditSessionRevoked, a, s, "reason=credential_change scope=all"},
		{"key_by_operator", domain.KeyRotatedEvent("", "k1", "EdDSA", domain.OriginOperator), domain.AuditKeyRotated, "", "", "kid=k1 algorithm=EdDSA origin=operator"},
		{"reset_requested", domain.PasswordResetRequestedEvent("", s), domain.AuditPasswordResetRequested, "", s, ""},
		{"reset_sent_by_admin", domain.PasswordResetRequestedEvent(a, s), domain.AuditPasswordResetRequested, a, s, "by=admin"},
		{"passkey_renamed", domain.PasskeyRenamedEvent(s, "6740f1c2a1b2c3d4e5f6071a"), domain.AuditPasskeyRenamed, s, s, "passkey=6740f1c2a1b2c3d4e5f6071a"},
		{"key_by_admin", domain.KeyRotatedEvent(a, "k2", "ES256", domain.OriginAPI), domain.AuditKeyRotated, a, "", "kid=k2 algorithm=ES256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.ev.Type != tc.wantType || tc.ev.ActorID != tc.actor || tc.ev.SubjectID != tc.sub || tc.ev.Detail != tc.detail {
				t.Fatalf("event %+v\nwant type %s actor %q subject %q detail %q", tc.ev, tc.wantType, tc.actor, tc.sub, tc.detail)
			}
		})
	}
}
