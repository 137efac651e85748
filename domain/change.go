package domain

import "time"

// UserChange is an update of an account, validated: fields left nil (and
// Profiles left nil) are kept as they are.
type UserChange struct {
	Name  *string
	Email *Email
	// Password is the new password in the form it is hashed (see
	// ports.PasswordHasher.Normalize); its hash is given to Apply.
	Password *string
	Profiles Profiles
	// EmailVerified and Disabled are the account's status, which only an
	// admin changes (domain.CanChangeAccount).
	EmailVerified *bool
	Disabled      *bool
	// Metadata and AppMetadata replace the account's whole objects.
	Metadata, AppMetadata *Metadata
}

// UserChangeInput is an update as the client sent it: nil fields are
// absent. Password must already be in the form it is hashed.
type UserChangeInput struct {
	Name, Email, Password   *string
	Profiles                []string
	EmailVerified, Disabled *bool
	// Metadata and AppMetadata are JSON as sent; nil is absent (a JSON
	// null is not: it is no object, and refused).
	Metadata, AppMetadata []byte
}

// ParseUserChange validates the fields of an update. An unknown profile is
// ErrInvalidProfile; every other problem is reported in one
// *ValidationError. The password's email rule is checked later, by
// CheckPasswordFor, once the account's email is known.
func ParseUserChange(in UserChangeInput) (UserChange, error) {
	name, email, password, profiles := in.Name, in.Email, in.Password, in.Profiles
	c := UserChange{EmailVerified: in.EmailVerified, Disabled: in.Disabled}
	if profiles != nil {
		ps, err := ParseProfiles(profiles)
		if err != nil {
			return UserChange{}, err
		}
		c.Profiles = ps
	}
	var verr ValidationError
	if name != nil {
		n, msg := ParseName(*name)
		if msg != "" {
			verr.Add(FieldName, msg)
		}
		c.Name = &n
	}
	if email != nil {
		e, msg := ParseEmail(*email)
		if msg != "" {
			verr.Add(FieldEmail, msg)
		}
		c.Email = &e
	}
	if password != nil {
		if msg := CheckPassword(*password, ""); msg != "" {
			verr.Add(FieldPassword, msg)
		}
		c.Password = password
	}
	if profiles != nil && len(c.Profiles) == 0 {
		verr.Add(FieldProfiles, msgNoProfile)
	}
	c.Metadata, c.AppMetadata = ParseMetadataFields(in.Metadata, in.AppMetadata, &verr)
	if err := verr.Err(); err != nil {
		return UserChange{}, err
	}
	return c, nil
}

// emailAfter is the account's email once c is applied to u.
func (c UserChange) emailAfter(u User) Email {
	if c.Email != nil {
		return *c.Email
	}
	return u.Email
}

// ChangesCredentials reports whether c changes u's password or email, the
// changes that may require the current password.
func (c UserChange) ChangesCredentials(u User) bool {
	return c.Password != nil || c.emailAfter(u) != u.Email
}

// CheckPasswordFor applies the password policy's email rule to the new
// password, against the email u will have after the change. It returns a
// *ValidationError, or nil when there is no new password or it is fine.
func (c UserChange) CheckPasswordFor(u User) error {
	if c.Password == nil {
		return nil
	}
	if msg := CheckPassword(*c.Password, c.emailAfter(u)); msg != "" {
		verr := &ValidationError{}
		verr.Add(FieldPassword, msg)
		return verr
	}
	return nil
}

// Changes is what Apply changed.
type Changes struct {
	// Fields names the fields that changed, in a fixed order (name, email,
	// password, profiles, emailVerified, disabled, metadata, appMetadata);
	// empty when nothing did.
	Fields []string
	// EndsSessions is true when the change must end every session of the
	// account: a new password, email or profiles, or the account disabled.
	EndsSessions bool
	// OldEmail is the address the account had before a change of email
	// (empty when the email did not change): it is told of the change.
	OldEmail Email
	// OldEmailVerified says whether OldEmail was verified: a notice to an
	// address never proven carries nothing its requester chose (see
	// User.Addressee).
	OldEmailVerified bool
}

// Field names of the account's status.
const (
	FieldEmailVerified = "emailVerified"
	FieldDisabled      = "disabled"
)

// Apply makes the change to u, at now: passwordHash replaces the hash when
// c has a new password (a new password always counts as a change, even if
// it equals the old one). UpdatedAt moves to now.
func (u *User) Apply(c UserChange, passwordHash string, now time.Time) Changes {
	var ch Changes
	if c.Name != nil && *c.Name != u.Name {
		u.Name = *c.Name
		ch.Fields = append(ch.Fields, FieldName)
	}
	if c.Email != nil && *c.Email != u.Email {
		ch.OldEmail, ch.OldEmailVerified = u.Email, u.EmailVerified
		u.Email = *c.Email
		ch.Fields = append(ch.Fields, FieldEmail)
		ch.EndsSessions = true
		// The new address is not proven, unless an admin says so in the
		// same change (below).
		u.EmailVerified = false
	}
	if c.Password != nil {
		u.PasswordHash = passwordHash
		ch.Fields = append(ch.Fields, FieldPassword)
		ch.EndsSessions = true
	}
	if c.Profiles != nil && !c.Profiles.Equal(u.Profiles) {
		u.Profiles = c.Profiles
		ch.Fields = append(ch.Fields, FieldProfiles)
		ch.EndsSessions = true
	}
	if c.EmailVerified != nil && *c.EmailVerified != u.EmailVerified {
		u.EmailVerified = *c.EmailVerified
		ch.Fields = append(ch.Fields, FieldEmailVerified)
	}
	if c.Disabled != nil && *c.Disabled != u.Disabled {
		u.Disabled = *c.Disabled
		ch.Fields = append(ch.Fields, FieldDisabled)
		if u.Disabled {
			ch.EndsSessions = true
		}
	}
	// Metadata is what apps keep, not how the account signs in or what it
	// may do: a change of it ends no session.
	if c.Metadata != nil && !c.Metadata.Equal(u.Metadata) {
		u.Metadata = *c.Metadata
		ch.Fields = append(ch.Fields, FieldMetadata)
	}
	if c.AppMetadata != nil && !c.AppMetadata.Equal(u.AppMetadata) {
		u.AppMetadata = *c.AppMetadata
		ch.Fields = append(ch.Fields, FieldAppMetadata)
	}
	u.UpdatedAt = now
	return ch
}
