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
}

// ParseUserChange validates the fields of an update as the client sent
// them; nil means absent. password must already be in the form it is
// hashed. An unknown profile is ErrInvalidProfile; every other problem is
// reported in one *ValidationError. The password's email rule is checked
// later, by CheckPasswordFor, once the account's email is known.
func ParseUserChange(name, email, password *string, profiles []string) (UserChange, error) {
	var c UserChange
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
	// password, profiles); empty when nothing did.
	Fields []string
	// EndsSessions is true when the change must end every session of the
	// account: a new password, email or profiles.
	EndsSessions bool
}

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
		u.Email = *c.Email
		ch.Fields = append(ch.Fields, FieldEmail)
		ch.EndsSessions = true
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
	u.UpdatedAt = now
	return ch
}
