package application

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// PasskeyService registers passkeys and signs in with them: on their own
// (a discoverable login) or as the second step after a password.
type PasskeyService struct {
	core
	passkeyPorts
}

// passkeyPorts are what the PasskeyService uses.
type passkeyPorts struct {
	users    ports.UserRepository
	passkeys ports.PasskeyStore
	rp       ports.PasskeyRelyingParty
	tx       ports.Transactor
	// factors prove the owner and keep MFAEnabled; signIn ends the
	// sign-ins a passkey proves.
	factors  *secondFactors
	signIn   *signInPath
	delivery wakeup
}

// Field names of the passkey requests, for validation errors.
const (
	FieldCeremonyID = "ceremonyId"
	FieldCredential = "credential"
	FieldName       = "name"
)

// PasskeyOptions are what a browser needs to begin a ceremony: the id to
// finish it with, and the publicKey options of
// navigator.credentials.create or get.
type PasskeyOptions struct {
	CeremonyID string
	PublicKey  json.RawMessage
}

// List returns the caller's passkeys, oldest first.
func (s *PasskeyService) List(ctx context.Context, actor *domain.Principal) ([]domain.Passkey, error) {
	self, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return nil, err
	}
	return s.passkeys.Passkeys(ctx, self.ID)
}

// BeginRegistration starts adding a passkey to the caller's account,
// once the caller has proven to be its owner (proveFactorChange): the
// current password, and for an account with a second factor already a
// session that signed in with one, or recently. Else a stolen access
// token could add a passkey of its own, a passwordless way in that
// outlives every password change.
func (s *PasskeyService) BeginRegistration(ctx context.Context, actor *domain.Principal, currentPassword *string) (PasskeyOptions, error) {
	self, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return PasskeyOptions{}, err
	}
	if err := s.factors.proveFactorChange(ctx, actor, self, domain.AddFactor, currentPassword); err != nil {
		return PasskeyOptions{}, err
	}
	existing, err := s.passkeys.Passkeys(ctx, self.ID)
	if err != nil {
		return PasskeyOptions{}, err
	}
	options, state, err := s.rp.BeginRegistration(self, existing)
	if err != nil {
		return PasskeyOptions{}, fmt.Errorf("begin passkey registration: %w", err)
	}
	return s.ceremony(ctx, domain.CeremonyRegistration, self.ID, options, state)
}

// PasskeyRegistrationInput finishes a registration.
type PasskeyRegistrationInput struct {
	CeremonyID *string
	Name       *string
	Credential json.RawMessage
}

// FinishRegistration verifies the browser's answer and stores the passkey.
func (s *PasskeyService) FinishRegistration(ctx context.Context, actor *domain.Principal, in PasskeyRegistrationInput) (domain.Passkey, error) {
	self, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return domain.Passkey{}, err
	}
	var verr domain.ValidationError
	requireCeremony(&verr, in.CeremonyID, in.Credential)
	var name string
	if in.Name != nil {
		name = passkeyName(&verr, *in.Name)
	} else {
		name = domain.DefaultPasskeyName
	}
	if err := verr.Err(); err != nil {
		return domain.Passkey{}, err
	}
	now := s.clock.Now()
	c, err := s.passkeys.TakeCeremony(ctx, *in.CeremonyID, domain.CeremonyRegistration, now)
	if err != nil {
		return domain.Passkey{}, err
	}
	if c.UserID != self.ID {
		return domain.Passkey{}, fmt.Errorf("ceremony of another user: %w", domain.ErrInvalidPasskey)
	}
	p, err := s.rp.FinishRegistration(self, c.State, in.Credential)
	if err != nil {
		return domain.Passkey{}, s.passkeyRefused(ctx, self.ID, "registration", err)
	}
	p.ID, p.UserID, p.Name, p.CreatedAt, p.LastUsedAt = domain.NewPasskeyID(now), self.ID, name, now, nil
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.passkeys.CreatePasskey(ctx, p); err != nil {
			return err
		}
		if err := s.factors.setMFAEnabled(ctx, self.ID, true, now); err != nil {
			return err
		}
		return s.factors.queueFactorNotice(ctx, self, domain.MailFactorAdded, domain.FactorPasskey)
	})
	if errors.Is(err, domain.ErrUserNotFound) {
		return domain.Passkey{}, domain.ErrInvalidToken
	}
	if err != nil {
		return domain.Passkey{}, err
	}
	s.delivery.wake()
	s.events.note(ctx, domain.PasskeyRegisteredEvent(self.ID, p.ID))
	s.log.LogAttrs(ctx, slog.LevelInfo, "passkey registered", slog.String("user_id", self.ID.String()),
		slog.String("passkey_id", string(p.ID)))
	return p, nil
}

// Delete removes one of the caller's passkeys, proven as adding one is
// (proveFactorChange), except that a session that signed in with a
// second factor may do it without its password: removing the last
// passkey turns two-step verification off, which a stolen access token
// alone must not do.
func (s *PasskeyService) Delete(ctx context.Context, actor *domain.Principal, rawID string, currentPassword *string) error {
	self, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return err
	}
	id, err := domain.ParsePasskeyID(rawID)
	if err != nil {
		return err
	}
	if err := s.factors.proveFactorChange(ctx, actor, self, domain.RemoveFactor, currentPassword); err != nil {
		return err
	}
	now := s.clock.Now()
	err = s.tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.passkeys.DeletePasskey(ctx, self.ID, id); err != nil {
			return err
		}
		if err := s.factors.syncMFAEnabled(ctx, self.ID, now); err != nil {
			return err
		}
		return s.factors.queueFactorNotice(ctx, self, domain.MailFactorRemoved, domain.FactorPasskey)
	})
	if err != nil {
		return err
	}
	s.delivery.wake()
	s.events.note(ctx, domain.PasskeyRemovedEvent(self.ID, id))
	s.log.LogAttrs(ctx, slog.LevelInfo, "passkey removed", slog.String("user_id", self.ID.String()),
		slog.String("passkey_id", string(id)))
	return nil
}

// Rename gives one of the caller's passkeys a new name, under the rules of
// a name given at registration (empty is domain.DefaultPasskeyName), and
// returns the passkey. Like Delete, another user's passkey is not found.
func (s *PasskeyService) Rename(ctx context.Context, actor *domain.Principal, rawID, name string) (domain.Passkey, error) {
	self, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return domain.Passkey{}, err
	}
	id, err := domain.ParsePasskeyID(rawID)
	if err != nil {
		return domain.Passkey{}, err
	}
	var verr domain.ValidationError
	name = passkeyName(&verr, name)
	if err := verr.Err(); err != nil {
		return domain.Passkey{}, err
	}
	p, err := s.passkeys.RenamePasskey(ctx, self.ID, id, name)
	if err != nil {
		return domain.Passkey{}, err
	}
	s.events.note(ctx, domain.PasskeyRenamedEvent(self.ID, id))
	s.log.LogAttrs(ctx, slog.LevelInfo, "passkey renamed", slog.String("user_id", self.ID.String()),
		slog.String("passkey_id", string(id)))
	return p, nil
}

// passkeyName checks a passkey's name as given, adding its problem to
// verr; registration and renaming share it.
func passkeyName(verr *domain.ValidationError, raw string) string {
	name, msg := domain.ParsePasskeyName(raw)
	if msg != "" {
		verr.Add(FieldName, msg)
	}
	return name
}

// BeginLogin starts a passkey login: a discoverable one, without
// mfaToken, or with one, the second step of a password login limited to
// that account's passkeys.
func (s *PasskeyService) BeginLogin(ctx context.Context, mfaToken *string) (PasskeyOptions, error) {
	if mfaToken == nil || *mfaToken == "" {
		options, state, err := s.rp.BeginLogin(nil, nil)
		if err != nil {
			return PasskeyOptions{}, fmt.Errorf("begin passkey login: %w", err)
		}
		return s.ceremony(ctx, domain.CeremonyLogin, "", options, state)
	}
	user, err := s.signIn.pendingSecondStep(ctx, *mfaToken)
	if err != nil {
		return PasskeyOptions{}, err
	}
	allowed, err := s.passkeys.Passkeys(ctx, user.ID)
	if err != nil {
		return PasskeyOptions{}, err
	}
	if len(allowed) == 0 {
		return PasskeyOptions{}, fmt.Errorf("the account has no passkey: %w", domain.ErrInvalidPasskey)
	}
	options, state, err := s.rp.BeginLogin(&user, allowed)
	if err != nil {
		return PasskeyOptions{}, fmt.Errorf("begin passkey login: %w", err)
	}
	return s.ceremony(ctx, domain.CeremonySecondFactor, user.ID, options, state)
}

// PasskeyLoginInput finishes a passkey login; MFAToken is set for the second
// step of a password login.
type PasskeyLoginInput struct {
	CeremonyID *string
	Credential json.RawMessage
	MFAToken   *string
}

// FinishLogin verifies the assertion and ends the sign-in
// (signInPath): amr hwk (and user when the authenticator verified its
// user) for a passkey alone, and hwk mfa after the first factor
// (pwd hwk mfa after a password).
func (s *PasskeyService) FinishLogin(ctx context.Context, in PasskeyLoginInput) (SignInResult, error) {
	var verr domain.ValidationError
	requireCeremony(&verr, in.CeremonyID, in.Credential)
	if err := verr.Err(); err != nil {
		return SignInResult{}, err
	}
	if in.MFAToken != nil && *in.MFAToken != "" {
		return s.signIn.secondStep(ctx, *in.MFAToken, secondFactor{method: domain.MethodHardwareKey,
			wrong: domain.FailureWrongPasskey, verify: s.secondFactorCheck(*in.CeremonyID, in.Credential)})
	}
	c, err := s.passkeys.TakeCeremony(ctx, *in.CeremonyID, domain.CeremonyLogin, s.clock.Now())
	if err != nil {
		return SignInResult{}, err
	}
	lookup, found := s.lookup("")
	assertion, err := s.rp.FinishLogin(ctx, c.State, in.Credential, lookup)
	if err != nil {
		return SignInResult{}, s.passkeyRefused(ctx, "", "login", err)
	}
	user, err := s.recordUse(ctx, assertion, found)
	if err != nil {
		return SignInResult{}, err
	}
	amr := domain.AMRPasskey
	if assertion.UserVerified {
		amr = domain.AMRPasskeyVerified
	}
	// A passkey is a second factor of the account itself: no second step.
	return s.signIn.complete(ctx, authenticated{user: user, amr: amr, secondFactor: true})
}

// secondFactorCheck checks the passkey of the second step after a
// password: the ceremony must have been begun for the mfaToken's account,
// and a refused assertion counts as a wrong factor.
func (s *PasskeyService) secondFactorCheck(ceremonyID string, credential json.RawMessage) func(context.Context, domain.User) error {
	return func(ctx context.Context, user domain.User) error {
		c, err := s.passkeys.TakeCeremony(ctx, ceremonyID, domain.CeremonySecondFactor, s.clock.Now())
		if err == nil && c.UserID != user.ID {
			err = fmt.Errorf("ceremony of another account: %w", domain.ErrInvalidPasskey)
		}
		if err != nil {
			return wrongFactor(err)
		}
		lookup, found := s.lookup(user.ID)
		assertion, err := s.rp.FinishLogin(ctx, c.State, credential, lookup)
		if err == nil {
			_, err = s.recordUse(ctx, assertion, found)
		}
		if errors.Is(err, domain.ErrMalformedPasskeyCredential) {
			return err
		}
		if errors.Is(err, domain.ErrInvalidPasskey) {
			s.log.LogAttrs(ctx, slog.LevelInfo, "passkey refused", slog.String("user_id", user.ID.String()),
				slog.String("reason", err.Error()))
			return wrongFactor(domain.ErrInvalidPasskey)
		}
		return err
	}
}

// lookup finds the account and passkeys an assertion names; with only
// set, the assertion must be of that account. The passkey it found is
// kept in found, for recordUse: read once per login.
func (s *PasskeyService) lookup(only domain.UserID) (lookup func(context.Context, []byte, []byte) (domain.User, []domain.Passkey, error), found *domain.Passkey) {
	found = new(domain.Passkey)
	return func(ctx context.Context, userHandle, credentialID []byte) (domain.User, []domain.Passkey, error) {
		p, err := s.passkeys.PasskeyByCredentialID(ctx, credentialID)
		if errors.Is(err, domain.ErrPasskeyNotFound) {
			return domain.User{}, nil, fmt.Errorf("unknown credential: %w", domain.ErrInvalidPasskey)
		}
		if err != nil {
			return domain.User{}, nil, err
		}
		// The user handle, when the authenticator sends one, must name
		// the passkey's owner.
		if len(userHandle) > 0 && hex.EncodeToString(userHandle) != string(p.UserID) {
			return domain.User{}, nil, fmt.Errorf("user handle of another account: %w", domain.ErrInvalidPasskey)
		}
		if only != "" && p.UserID != only {
			return domain.User{}, nil, fmt.Errorf("passkey of another account: %w", domain.ErrInvalidPasskey)
		}
		u, err := s.users.ByID(ctx, p.UserID)
		if errors.Is(err, domain.ErrUserNotFound) {
			return domain.User{}, nil, fmt.Errorf("account gone: %w", domain.ErrInvalidPasskey)
		}
		if err != nil {
			return domain.User{}, nil, err
		}
		all, err := s.passkeys.Passkeys(ctx, u.ID)
		if err != nil {
			return domain.User{}, nil, err
		}
		*found = p
		return u, all, nil
	}, found
}

// recordUse stores the counter of a verified assertion, refusing one that
// did not move it forward (a replay that raced this one, or a cloned
// authenticator), and returns the passkey's account.
func (s *PasskeyService) recordUse(ctx context.Context, a domain.PasskeyAssertion, found *domain.Passkey) (domain.User, error) {
	// The passkey lookup found: the relying party verified the assertion
	// against it. (A passkey removed since makes the conditional write
	// below change nothing, and is refused there.)
	p := *found
	if p.ID == "" || !bytes.Equal(p.CredentialID, a.CredentialID) {
		return domain.User{}, fmt.Errorf("assertion of a passkey the lookup did not find: %w", domain.ErrInvalidPasskey)
	}
	ok, err := s.passkeys.RecordPasskeyUse(ctx, p.ID, a.SignCount, a.Credential, s.clock.Now())
	if err != nil {
		return domain.User{}, err
	}
	if !ok {
		s.log.LogAttrs(ctx, slog.LevelWarn, "passkey signature counter did not move forward",
			slog.String("user_id", p.UserID.String()), slog.String("passkey_id", string(p.ID)))
		return domain.User{}, fmt.Errorf("signature counter did not move forward: %w", domain.ErrInvalidPasskey)
	}
	u, err := s.users.ByID(ctx, p.UserID)
	if errors.Is(err, domain.ErrUserNotFound) {
		return domain.User{}, fmt.Errorf("account gone: %w", domain.ErrInvalidPasskey)
	}
	return u, err
}

// ceremony stores a begun ceremony and returns its options.
func (s *PasskeyService) ceremony(ctx context.Context, purpose domain.CeremonyPurpose, user domain.UserID,
	options json.RawMessage, state []byte) (PasskeyOptions, error) {
	now := s.clock.Now()
	c := domain.PasskeyCeremony{ID: domain.NewCeremonyID(), Purpose: purpose, UserID: user, State: state,
		CreatedAt: now, ExpiresAt: now.Add(domain.CeremonyTTL)}
	if err := s.passkeys.CreateCeremony(ctx, c); err != nil {
		return PasskeyOptions{}, fmt.Errorf("store passkey ceremony: %w", err)
	}
	return PasskeyOptions{CeremonyID: c.ID, PublicKey: options}, nil
}

// passkeyRefused logs why the relying party refused a credential (the
// client gets one answer for all) and returns the error to answer with.
func (s *PasskeyService) passkeyRefused(ctx context.Context, user domain.UserID, ceremony string, err error) error {
	if errors.Is(err, domain.ErrInvalidPasskey) || errors.Is(err, domain.ErrMalformedPasskeyCredential) {
		s.log.LogAttrs(ctx, slog.LevelInfo, "passkey refused", slog.String("ceremony", ceremony),
			slog.String("user_id", user.String()), slog.String("reason", err.Error()))
	}
	return err
}

// requireCeremony adds the validation errors of a finish request without
// a ceremony id or a credential.
func requireCeremony(verr *domain.ValidationError, ceremonyID *string, credential json.RawMessage) {
	if ceremonyID == nil || *ceremonyID == "" {
		verr.Add(FieldCeremonyID, "must not be empty")
	}
	if len(credential) == 0 || string(credential) == "null" {
		verr.Add(FieldCredential, "must not be empty")
	}
}
