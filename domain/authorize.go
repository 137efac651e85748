package domain

// Who may do what. Each rule returns nil when the caller may go on,
// ErrForbidden when a known caller may not, and ErrUnauthenticated when
// an anonymous caller would need to sign in first. They judge the
// principal as given: the use cases confirm first that the account behind
// it still exists with these profiles.

// RequireAdmin lets admins only: listing users, deleting one, reading the
// audit trail, managing keys.
func (p *Principal) RequireAdmin() error {
	switch {
	case p == nil:
		return ErrUnauthenticated
	case !p.IsAdmin():
		return ErrForbidden
	}
	return nil
}

// CanRegister decides who may create the account n: anyone a
// ROLE_CUSTOMER account with no appMetadata (its metadata, the user's own,
// is anyone's to set) while registration is open; only an admin an
// account holding ROLE_ADMIN or appMetadata, or any account while
// registration is closed.
func (p *Principal) CanRegister(n NewUser, openRegistration bool) error {
	if p.IsAdmin() || (openRegistration && !n.Profiles.Has(ProfileAdmin) && n.AppMetadata.IsEmpty()) {
		return nil
	}
	return p.RequireAdmin()
}

// CanReadUser lets an admin read any account, and anyone their own.
func (p *Principal) CanReadUser(id UserID) error { return p.selfOrAdmin(id) }

// CanUpdateUser lets an admin change any account, and anyone their own
// (within CanChangeProfiles).
func (p *Principal) CanUpdateUser(id UserID) error { return p.selfOrAdmin(id) }

// CanManageSessions lets an admin list and end the sessions of any
// account, and anyone those of their own.
func (p *Principal) CanManageSessions(id UserID) error { return p.selfOrAdmin(id) }

// CanManageTokens lets an admin list and revoke the personal access
// tokens of any account, and anyone those of their own.
func (p *Principal) CanManageTokens(id UserID) error { return p.selfOrAdmin(id) }

// CanManageIdentities lets an admin list and unlink the identities of
// any account at other providers, and anyone those of their own.
func (p *Principal) CanManageIdentities(id UserID) error { return p.selfOrAdmin(id) }

func (p *Principal) selfOrAdmin(id UserID) error {
	switch {
	case p == nil:
		return ErrUnauthenticated
	case p.IsAdmin() || p.UserID == id:
		return nil
	}
	return ErrForbidden
}

// CanChangeAccount lets only an admin change what an account may do: its
// profiles, whether its email counts as verified, whether it is disabled;
// and what apps keep on it that its user may not change, its appMetadata.
// A non-admin may send the account's current values unchanged. A caller
// with a personal access token never changes the password or email
// (ErrInteractiveSessionRequired), whoever's account it is.
func (p *Principal) CanChangeAccount(current User, c UserChange) error {
	if c.ChangesCredentials(current) {
		// A personal access token never changes how the account signs in.
		if err := p.RequireInteractive(); err != nil {
			return err
		}
	}
	same := (c.Profiles == nil || c.Profiles.Equal(current.Profiles)) &&
		(c.EmailVerified == nil || *c.EmailVerified == current.EmailVerified) &&
		(c.Disabled == nil || *c.Disabled == current.Disabled) &&
		(c.AppMetadata == nil || c.AppMetadata.Equal(current.AppMetadata))
	if same || p.IsAdmin() {
		return nil
	}
	return p.RequireAdmin()
}

// NeedsCurrentPassword reports whether the caller must send the account's
// current password for the change: when the deployment requires it
// (required), anyone changing the password or email of their own account,
// admins included (a stolen admin token must not be enough to take over
// the admin's account). An admin changing another account's credentials
// does not know that account's password and needs none.
func (p *Principal) NeedsCurrentPassword(c UserChange, u User, required bool) bool {
	return required && (!p.IsAdmin() || p.UserID == u.ID) && c.ChangesCredentials(u)
}
