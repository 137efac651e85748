package domain

import "time"

// NewUser is an account about to be created, its fields validated and in
// the form they are stored: what registration, the operator's admin and an
// import all build before they store a user.
type NewUser struct {
	Name     string
	Email    Email
	Profiles Profiles
	// Metadata and AppMetadata start empty unless the creator sets them
	// (ParseMetadataFields).
	Metadata, AppMetadata Metadata
}

// Field names of the validation errors about an account.
const (
	FieldName     = "name"
	FieldEmail    = "email"
	FieldPassword = "password"
	FieldProfiles = "profiles"
)

// msgNoProfile is the message of an empty set of profiles, wherever one is
// given.
const msgNoProfile = "must hold at least one profile (ROLE_CUSTOMER, ROLE_ADMIN)"

// ValidateNewUser checks the fields of an account about to be created:
// the name and email rules, and at least one profile. It returns the
// fields in stored form and every problem found (an empty ValidationError
// when there is none), so that the caller can add its own (the password,
// or an imported hash) and report them all at once. The email of the
// result is empty when the email is invalid.
func ValidateNewUser(name, email string, profiles Profiles) (NewUser, ValidationError) {
	var (
		n    NewUser
		verr ValidationError
		msg  string
	)
	if n.Name, msg = ParseName(name); msg != "" {
		verr.Add(FieldName, msg)
	}
	if n.Email, msg = ParseEmail(email); msg != "" {
		verr.Add(FieldEmail, msg)
	}
	if len(profiles) == 0 {
		verr.Add(FieldProfiles, msgNoProfile)
	}
	n.Profiles = profiles.Canonical()
	return n, verr
}

// User returns the account: a fresh id, created and updated at now, with
// the given password hash. n must come from ValidateNewUser without error.
func (n NewUser) User(passwordHash string, now time.Time) User {
	return User{
		ID:           NewUserID(now),
		Name:         n.Name,
		Email:        n.Email,
		PasswordHash: passwordHash,
		Profiles:     n.Profiles,
		Metadata:     n.Metadata,
		AppMetadata:  n.AppMetadata,
		CreatedAt:    now,
		UpdatedAt:    now,
	}
}

// ResolveProfiles turns the two create-time ways of naming profiles into
// one set: the profiles field, or the legacy single role. Both given is
// ErrConflictingFields; neither is ROLE_CUSTOMER; an unknown value is
// ErrInvalidProfile. An empty profiles list is returned empty, for
// ValidateNewUser to report.
func ResolveProfiles(profiles []string, role *string) (Profiles, error) {
	switch {
	case profiles != nil && role != nil:
		return nil, ErrConflictingFields
	case role != nil:
		p, err := ParseLegacyRole(*role)
		if err != nil {
			return nil, err
		}
		return Profiles{p}, nil
	case profiles != nil:
		return ParseProfiles(profiles)
	}
	return Profiles{ProfileCustomer}, nil
}

// SetMetadata parses the metadata and appMetadata given for the account
// (JSON as sent, nil when absent: the empty objects stay), adding their
// problems to verr.
func (n *NewUser) SetMetadata(metadata, appMetadata []byte, verr *ValidationError) {
	md, app := ParseMetadataFields(metadata, appMetadata, verr)
	if md != nil {
		n.Metadata = *md
	}
	if app != nil {
		n.AppMetadata = *app
	}
}
