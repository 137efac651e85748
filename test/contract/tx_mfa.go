package contract

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

// txSecondFactors is the part of the Transactor contract about the stores
// of second factors.
func txSecondFactors(t *testing.T, newStores func(t *testing.T) TxStores) {
	// The stores of second factors join too: their writes and changes
	// commit with the transaction, and their refusals leave it usable.
	t.Run("second_factors_commit", func(t *testing.T) {
		t.Parallel()
		s := newStores(t)
		u := newUser(at(0))
		mustCreate(t, s.Users, u)
		f := newTOTP(u.ID, at(0))
		p := newPasskey(u.ID, at(0))
		mustCreatePasskey(t, s.Passkeys, p)
		ch := newChallenge(u, at(0))
		err := within(t, s, func(ctx context.Context) error {
			stranger := domain.NewUserID(at(0))
			if err := s.MFA.PutTOTP(ctx, newTOTP(stranger, at(0))); !errors.Is(err, domain.ErrUserNotFound) {
				t.Errorf("PutTOTP(unknown user) = %v, want ErrUserNotFound", err)
			}
			dup := newPasskey(u.ID, at(time.Second))
			dup.CredentialID = p.CredentialID
			if err := s.Passkeys.CreatePasskey(ctx, dup); !errors.Is(err, domain.ErrPasskeyExists) {
				t.Errorf("CreatePasskey(a registered credential) = %v, want ErrPasskeyExists", err)
			}
			if err := s.Challenges.CreateChallenge(ctx, newChallenge(newUser(at(0)), at(0))); !errors.Is(err, domain.ErrUserNotFound) {
				t.Errorf("CreateChallenge(unknown user) = %v, want ErrUserNotFound", err)
			}
			if err := s.MFA.PutTOTP(ctx, f); err != nil {
				t.Errorf("PutTOTP: %v", err)
			}
			if ok, err := s.MFA.AcceptTOTPStep(ctx, u.ID, 100, at(time.Minute), true); err != nil || !ok {
				t.Errorf("AcceptTOTPStep = %v, %v", ok, err)
			}
			if err := s.MFA.ReplaceRecoveryCodes(ctx, u.ID, []string{"h1", "h2"}, at(0)); err != nil {
				t.Errorf("ReplaceRecoveryCodes: %v", err)
			}
			if ok, err := s.MFA.UseRecoveryCode(ctx, u.ID, "h1", at(time.Minute)); err != nil || !ok {
				t.Errorf("UseRecoveryCode = %v, %v", ok, err)
			}
			if err := s.Challenges.CreateChallenge(ctx, ch); err != nil {
				t.Errorf("CreateChallenge: %v", err)
			}
			if _, err := s.Challenges.FailChallenge(ctx, ch.Hash, at(time.Minute)); err != nil {
				t.Errorf("FailChallenge: %v", err)
			}
			// Reads inside see the transaction's writes.
			if got, err := s.MFA.Summary(ctx, u.ID); err != nil || got != (domain.MFASummary{TOTP: true, Passkeys: 1, RecoveryCodesLeft: 1}) {
				t.Errorf("Summary inside = %+v, %v", got, err)
			}
			if got, err := s.Challenges.Challenge(ctx, ch.Hash, at(time.Minute)); err != nil || got.Failures != 1 {
				t.Errorf("Challenge inside = %d failures, %v; want 1", got.Failures, err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("WithinTx: %v", err)
		}
		f.ConfirmedAt, f.LastStep = ptrTo(at(time.Minute)), 100
		checkStoredTOTP(t, s.MFA, f)
		checkSummary(t, s.MFA, u.ID, domain.MFASummary{TOTP: true, Passkeys: 1, RecoveryCodesLeft: 1})
		if got, err := s.Challenges.Challenge(t.Context(), ch.Hash, at(time.Minute)); err != nil || got.Failures != 1 {
			t.Errorf("Challenge after the commit = %d failures, %v; want 1", got.Failures, err)
		}
		checkPasskeys(t, s.Passkeys, u.ID, p)
	})

	t.Run("second_factors_rollback", func(t *testing.T) {
		t.Parallel()
		s := newStores(t)
		ctx := t.Context()
		u := newUser(at(0))
		mustCreate(t, s.Users, u)
		// Rows of before the transaction, which it changes.
		p := newPasskey(u.ID, at(0))
		mustCreatePasskey(t, s.Passkeys, p)
		ch := newChallenge(u, at(0))
		if err := s.Challenges.CreateChallenge(ctx, ch); err != nil {
			t.Fatalf("CreateChallenge: %v", err)
		}
		c := newCeremony(u.ID, domain.CeremonySecondFactor, at(0))
		if err := s.Passkeys.CreateCeremony(ctx, c); err != nil {
			t.Fatalf("CreateCeremony: %v", err)
		}
		if err := s.MFA.ReplaceRecoveryCodes(ctx, u.ID, []string{"old"}, at(0)); err != nil {
			t.Fatalf("ReplaceRecoveryCodes: %v", err)
		}
		// Rows the transaction writes.
		q := newPasskey(u.ID, at(time.Second))
		ch2 := newChallenge(u, at(time.Second))
		c2 := newCeremony("", domain.CeremonyLogin, at(time.Second))
		err := within(t, s, func(ctx context.Context) error {
			if err := s.MFA.PutTOTP(ctx, newTOTP(u.ID, at(0))); err != nil {
				t.Errorf("PutTOTP: %v", err)
			}
			if ok, err := s.MFA.AcceptTOTPStep(ctx, u.ID, 100, at(time.Minute), true); err != nil || !ok {
				t.Errorf("AcceptTOTPStep = %v, %v", ok, err)
			}
			if err := s.MFA.ReplaceRecoveryCodes(ctx, u.ID, []string{"new1", "new2"}, at(time.Minute)); err != nil {
				t.Errorf("ReplaceRecoveryCodes: %v", err)
			}
			if ok, err := s.MFA.UseRecoveryCode(ctx, u.ID, "new1", at(time.Minute)); err != nil || !ok {
				t.Errorf("UseRecoveryCode = %v, %v", ok, err)
			}
			if _, err := s.Challenges.UseChallenge(ctx, ch.Hash, at(time.Minute)); err != nil {
				t.Errorf("UseChallenge: %v", err)
			}
			if err := s.Challenges.CreateChallenge(ctx, ch2); err != nil {
				t.Errorf("CreateChallenge: %v", err)
			}
			if ok, err := s.Passkeys.RecordPasskeyUse(ctx, p.ID, p.SignCount+1, []byte("new"), at(time.Minute)); err != nil || !ok {
				t.Errorf("RecordPasskeyUse = %v, %v", ok, err)
			}
			if err := s.Passkeys.CreatePasskey(ctx, q); err != nil {
				t.Errorf("CreatePasskey: %v", err)
			}
			if _, err := s.Passkeys.PasskeyByCredentialID(ctx, q.CredentialID); err != nil {
				t.Errorf("PasskeyByCredentialID inside: %v", err)
			}
			if _, err := s.Passkeys.TakeCeremony(ctx, c.ID, c.Purpose, at(time.Minute)); err != nil {
				t.Errorf("TakeCeremony: %v", err)
			}
			if err := s.Passkeys.CreateCeremony(ctx, c2); err != nil {
				t.Errorf("CreateCeremony: %v", err)
			}
			if _, err := s.Users.Update(ctx, u.ID, func(v *domain.User) error { v.MFAEnabled = true; return nil }); err != nil {
				t.Errorf("Update: %v", err)
			}
			if ok, err := s.MFA.DeleteTOTP(ctx, u.ID); err != nil || !ok {
				t.Errorf("DeleteTOTP = %v, %v; want true", ok, err)
			}
			if n, err := s.Passkeys.DeletePasskeys(ctx, u.ID); err != nil || n != 2 {
				t.Errorf("DeletePasskeys = %d, %v; want 2", n, err)
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("WithinTx = %v, want fn's error", err)
		}
		checkStored(t, s.Users, u)
		checkNoTOTP(t, s.MFA, u.ID)
		checkSummary(t, s.MFA, u.ID, domain.MFASummary{Passkeys: 1, RecoveryCodesLeft: 1})
		if ok, err := s.MFA.UseRecoveryCode(ctx, u.ID, "old", at(time.Hour)); err != nil || !ok {
			t.Errorf("UseRecoveryCode(the code of before) = %v, %v; want true", ok, err)
		}
		checkPasskeys(t, s.Passkeys, u.ID, p)
		if _, err := s.Challenges.UseChallenge(ctx, ch.Hash, at(time.Minute)); err != nil {
			t.Errorf("UseChallenge(the token used in the rolled-back transaction): %v", err)
		}
		if _, err := s.Challenges.Challenge(ctx, ch2.Hash, at(time.Minute)); !errors.Is(err, domain.ErrInvalidMFAToken) {
			t.Errorf("Challenge(made in the rolled-back transaction) = %v, want ErrInvalidMFAToken", err)
		}
		if _, err := s.Passkeys.TakeCeremony(ctx, c.ID, c.Purpose, at(time.Minute)); err != nil {
			t.Errorf("TakeCeremony(taken in the rolled-back transaction): %v", err)
		}
		if _, err := s.Passkeys.TakeCeremony(ctx, c2.ID, c2.Purpose, at(time.Minute)); !errors.Is(err, domain.ErrInvalidPasskey) {
			t.Errorf("TakeCeremony(made in the rolled-back transaction) = %v, want ErrInvalidPasskey", err)
		}
	})
}
