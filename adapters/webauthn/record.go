package webauthn

import (
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/go-webauthn/webauthn/protocol"
	gowebauthn "github.com/go-webauthn/webauthn/webauthn"

	"github.com/userd/userd/domain"
)

// recordVersion is the version of the credential record and ceremony state
// this package writes. A record of another version is refused, so that a
// change of format is a deliberate migration, never a silent misreading.
const recordVersion = 1

// record is domain.Passkey.Credential, this package's private format,
// version 1:
//
//	{"v":1,"id":…,"publicKey":…,"attestationType":"none",
//	 "attestationFormat":"none","transports":["internal"],
//	 "flags":{"up":true,"uv":true,"be":true,"bs":true},
//	 "aaguid":…,"attachment":"platform"}
//
// The byte fields are standard base64, as encoding/json writes []byte.
// It holds what verifying a later assertion needs: the COSE public key,
// the flags (the backup-eligible flag must never change) and the hints of
// the options (transports). The signature counter is not in it: the
// store's domain.Passkey.SignCount is the one compared, in the same
// conditional write that stores a new one. The raw attestation is not kept:
// userd asks for none and checks no authenticator metadata.
type record struct {
	V                 int                               `json:"v"`
	ID                []byte                            `json:"id"`
	PublicKey         []byte                            `json:"publicKey"`
	AttestationType   string                            `json:"attestationType,omitempty"`
	AttestationFormat string                            `json:"attestationFormat,omitempty"`
	Transports        []protocol.AuthenticatorTransport `json:"transports,omitempty"`
	Flags             recordFlags                       `json:"flags"`
	AAGUID            []byte                            `json:"aaguid,omitempty"`
	Attachment        protocol.AuthenticatorAttachment  `json:"attachment,omitempty"`
}

type recordFlags struct {
	UserPresent    bool `json:"up"`
	UserVerified   bool `json:"uv"`
	BackupEligible bool `json:"be"`
	BackupState    bool `json:"bs"`
}

// encodeCredential writes c as a record.
func encodeCredential(c *gowebauthn.Credential) ([]byte, error) {
	return json.Marshal(record{
		V:                 recordVersion,
		ID:                c.ID,
		PublicKey:         c.PublicKey,
		AttestationType:   c.AttestationType,
		AttestationFormat: c.AttestationFormat,
		Transports:        c.Transport,
		Flags: recordFlags{
			UserPresent:    c.Flags.UserPresent,
			UserVerified:   c.Flags.UserVerified,
			BackupEligible: c.Flags.BackupEligible,
			BackupState:    c.Flags.BackupState,
		},
		AAGUID:     c.Authenticator.AAGUID,
		Attachment: c.Authenticator.Attachment,
	})
}

// decodeCredential reads the record of p, with p's counter. A record that
// does not decode is the store's fault, not the client's: the error wraps
// no domain error.
func decodeCredential(p domain.Passkey) (gowebauthn.Credential, error) {
	var r record
	if err := json.Unmarshal(p.Credential, &r); err != nil {
		return gowebauthn.Credential{}, fmt.Errorf("passkey %s: credential record: %w", p.ID, err)
	}
	if r.V != recordVersion {
		return gowebauthn.Credential{}, fmt.Errorf("passkey %s: credential record version %d, want %d", p.ID, r.V, recordVersion)
	}
	if len(r.ID) == 0 || len(r.PublicKey) == 0 {
		return gowebauthn.Credential{}, fmt.Errorf("passkey %s: credential record without id or public key", p.ID)
	}
	return gowebauthn.Credential{
		ID:                r.ID,
		PublicKey:         r.PublicKey,
		AttestationType:   r.AttestationType,
		AttestationFormat: r.AttestationFormat,
		Transport:         r.Transports,
		Flags: gowebauthn.CredentialFlags{
			UserPresent:    r.Flags.UserPresent,
			UserVerified:   r.Flags.UserVerified,
			BackupEligible: r.Flags.BackupEligible,
			BackupState:    r.Flags.BackupState,
		},
		Authenticator: gowebauthn.Authenticator{
			AAGUID:     r.AAGUID,
			SignCount:  p.SignCount,
			Attachment: r.Attachment,
		},
	}, nil
}

// Kinds of ceremony a state was begun for.
const (
	kindRegistration = "registration"
	kindLogin        = "login"
)

// state is a ceremony's state, domain.PasskeyCeremony.State: the library's
// session data, which it needs back verbatim, and the kind of ceremony.
type state struct {
	V       int                    `json:"v"`
	Kind    string                 `json:"kind"`
	Session gowebauthn.SessionData `json:"session"`
}

func encodeState(kind string, s *gowebauthn.SessionData) ([]byte, error) {
	return json.Marshal(state{V: recordVersion, Kind: kind, Session: *s})
}

// decodeState reads a state of the kind. The application stores states
// and hands them back; one that does not decode is a fault of the server.
func decodeState(data []byte, kind string) (gowebauthn.SessionData, error) {
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return gowebauthn.SessionData{}, fmt.Errorf("passkey ceremony state: %w", err)
	}
	if s.V != recordVersion || s.Kind != kind {
		return gowebauthn.SessionData{}, fmt.Errorf("passkey ceremony state: version %d of a %q ceremony, want version %d of a %q one", s.V, s.Kind, recordVersion, kind)
	}
	return s.Session, nil
}

// user is a domain.User as the library sees it. The user handle is the
// id's 12 bytes: stable, unique, and no personal data (WebAuthn §14.6.1).
type user struct {
	handle      []byte
	name        string
	displayName string
	credentials []gowebauthn.Credential
}

func (u *user) WebAuthnID() []byte                           { return u.handle }
func (u *user) WebAuthnName() string                         { return u.name }
func (u *user) WebAuthnDisplayName() string                  { return u.displayName }
func (u *user) WebAuthnCredentials() []gowebauthn.Credential { return u.credentials }

// newUser returns u with the credentials of its passkeys.
func newUser(u domain.User, passkeys []domain.Passkey) (*user, error) {
	handle, err := userHandle(u.ID)
	if err != nil {
		return nil, err
	}
	out := &user{handle: handle, name: string(u.Email), displayName: u.Name}
	if out.displayName == "" {
		out.displayName = out.name
	}
	for _, p := range passkeys {
		if p.UserID != u.ID {
			return nil, fmt.Errorf("passkey %s is of user %s, not of %s", p.ID, p.UserID, u.ID)
		}
		c, err := decodeCredential(p)
		if err != nil {
			return nil, err
		}
		out.credentials = append(out.credentials, c)
	}
	return out, nil
}

// userHandle returns the 12 bytes of a user id.
func userHandle(id domain.UserID) ([]byte, error) {
	if _, err := domain.ParseUserID(string(id)); err != nil {
		return nil, fmt.Errorf("user id %q: %w", id, err)
	}
	return hex.DecodeString(string(id))
}
