package webauthn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/go-webauthn/webauthn/protocol"
	gowebauthn "github.com/go-webauthn/webauthn/webauthn"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// BeginRegistration implements ports.PasskeyRelyingParty: a discoverable
// credential (a passkey) is required, user verification preferred, no
// attestation asked for, and the user's existing credentials excluded so
// that an authenticator holding one says so instead of making another.
func (rp *RelyingParty) BeginRegistration(u domain.User, existing []domain.Passkey) (json.RawMessage, []byte, error) {
	wu, err := newUser(u, existing)
	if err != nil {
		return nil, nil, err
	}
	exclude := make([]protocol.CredentialDescriptor, len(wu.credentials))
	for i, c := range wu.credentials {
		exclude[i] = c.Descriptor()
	}
	creation, session, err := rp.wa.BeginRegistration(wu,
		gowebauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{UserVerification: protocol.VerificationPreferred}),
		gowebauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementRequired),
		gowebauthn.WithExclusions(exclude),
		// Asked for so that a browser that reports it anyway is not
		// refused for an unsolicited output (the library's default
		// policy, kept); its rk tells whether the key is discoverable.
		gowebauthn.WithExtensions(gowebauthn.WithExtensionCredProps()),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("begin passkey registration: %w", err)
	}
	return options(creation.Response, kindRegistration, session)
}

// FinishRegistration implements ports.PasskeyRelyingParty.
func (rp *RelyingParty) FinishRegistration(u domain.User, st []byte, response json.RawMessage) (domain.Passkey, error) {
	session, err := decodeState(st, kindRegistration)
	if err != nil {
		return domain.Passkey{}, err
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return domain.Passkey{}, malformed(err)
	}
	wu, err := newUser(u, nil)
	if err != nil {
		return domain.Passkey{}, err
	}
	cred, err := rp.wa.CreateCredential(wu, session, parsed)
	if err != nil {
		return domain.Passkey{}, refused(err)
	}
	rec, err := encodeCredential(cred)
	if err != nil {
		return domain.Passkey{}, err
	}
	return domain.Passkey{
		UserID:       u.ID,
		CredentialID: bytes.Clone(cred.ID),
		Credential:   rec,
		SignCount:    cred.Authenticator.SignCount,
	}, nil
}

// BeginLogin implements ports.PasskeyRelyingParty. Both kinds of login
// prefer user verification: with it, a passkey is a second factor in
// itself.
func (rp *RelyingParty) BeginLogin(u *domain.User, allowed []domain.Passkey) (json.RawMessage, []byte, error) {
	uv := gowebauthn.WithUserVerification(protocol.VerificationPreferred)
	var (
		assertion *protocol.CredentialAssertion
		session   *gowebauthn.SessionData
		err       error
	)
	if len(allowed) == 0 {
		assertion, session, err = rp.wa.BeginDiscoverableLogin(uv)
	} else {
		if u == nil {
			return nil, nil, errors.New("begin passkey login: allowed credentials without their user")
		}
		var wu *user
		if wu, err = newUser(*u, allowed); err != nil {
			return nil, nil, err
		}
		assertion, session, err = rp.wa.BeginLogin(wu, uv)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("begin passkey login: %w", err)
	}
	return options(assertion.Response, kindLogin, session)
}

// FinishLogin implements ports.PasskeyRelyingParty. The account is found
// with lookup before the library verifies anything, so that an error of
// the store (domain.ErrUnavailable) stays one and is not taken for a bad
// passkey: by the user handle of the response in a discoverable login, by
// the user the ceremony was begun for otherwise.
func (rp *RelyingParty) FinishLogin(ctx context.Context, st []byte, response json.RawMessage, lookup ports.PasskeyLookup) (domain.PasskeyAssertion, error) {
	session, err := decodeState(st, kindLogin)
	if err != nil {
		return domain.PasskeyAssertion{}, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return domain.PasskeyAssertion{}, malformed(err)
	}

	discoverable := len(session.UserID) == 0
	handle := session.UserID
	if discoverable {
		handle = parsed.Response.UserHandle
		if len(handle) == 0 {
			return domain.PasskeyAssertion{}, fmt.Errorf("%w: the response has no user handle (not a discoverable credential)", domain.ErrInvalidPasskey)
		}
	}
	account, passkeys, err := lookup(ctx, handle, parsed.RawID)
	if err != nil {
		return domain.PasskeyAssertion{}, fmt.Errorf("passkey lookup: %w", err)
	}
	if !containsCredential(passkeys, parsed.RawID) {
		return domain.PasskeyAssertion{}, fmt.Errorf("%w: unknown credential", domain.ErrInvalidPasskey)
	}
	wu, err := newUser(account, passkeys)
	if err != nil {
		return domain.PasskeyAssertion{}, err
	}

	var cred *gowebauthn.Credential
	if discoverable {
		found := func(_, _ []byte) (gowebauthn.User, error) { return wu, nil }
		_, cred, err = rp.wa.ValidatePasskeyLogin(found, session, parsed)
	} else {
		cred, err = rp.wa.ValidateLogin(wu, session, parsed)
	}
	if err != nil {
		return domain.PasskeyAssertion{}, refused(err)
	}
	// The library flags a counter that did not move forward (0 to 0 is
	// an authenticator without one) and carries on; userd refuses it: a
	// replayed assertion or a cloned authenticator.
	if cred.Authenticator.CloneWarning {
		return domain.PasskeyAssertion{}, fmt.Errorf("%w: the signature counter did not move forward (%d after %d)",
			domain.ErrInvalidPasskey, parsed.Response.AuthenticatorData.Counter, cred.Authenticator.SignCount)
	}
	rec, err := encodeCredential(cred)
	if err != nil {
		return domain.PasskeyAssertion{}, err
	}
	return domain.PasskeyAssertion{
		UserID:       account.ID,
		CredentialID: bytes.Clone(cred.ID),
		SignCount:    cred.Authenticator.SignCount,
		UserVerified: parsed.Response.AuthenticatorData.Flags.HasUserVerified(),
		Credential:   rec,
	}, nil
}

// options returns the publicKey member of the library's options, as JSON,
// and the state of the ceremony.
func options(publicKey any, kind string, session *gowebauthn.SessionData) (json.RawMessage, []byte, error) {
	opts, err := json.Marshal(publicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("passkey options: %w", err)
	}
	st, err := encodeState(kind, session)
	if err != nil {
		return nil, nil, fmt.Errorf("passkey ceremony state: %w", err)
	}
	return opts, st, nil
}

func containsCredential(passkeys []domain.Passkey, id []byte) bool {
	for _, p := range passkeys {
		if bytes.Equal(p.CredentialID, id) {
			return true
		}
	}
	return false
}

// malformed is the error of a response that does not parse as a WebAuthn
// credential: not JSON, not the shape of one, or undecodable client data,
// authenticator data or attestation object.
func malformed(err error) error {
	return fmt.Errorf("%w: %s", domain.ErrMalformedPasskeyCredential, reason(err))
}

// refused is the error of a response that parses but does not verify.
func refused(err error) error {
	return fmt.Errorf("%w: %s", domain.ErrInvalidPasskey, reason(err))
}

// reason is the library's explanation of err, on one line: its details
// and its debug information (which origin, RP id hash or flag did not
// match). Neither quotes the credential; the debug information of a wrong
// challenge quotes both challenges, which the client had anyway.
func reason(err error) string {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return err.Error()
	}
	msg := pe.Details
	if msg == "" {
		msg = pe.Type
	}
	if pe.DevInfo != "" {
		msg += " (" + strings.Join(strings.Fields(pe.DevInfo), " ") + ")"
	}
	return msg
}
