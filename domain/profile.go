package domain

import (
	"slices"
	"strings"
)

// Profile is a role granted to a user.
type Profile string

// The known profiles. Any other value is rejected with ErrInvalidProfile.
const (
	ProfileCustomer Profile = "ROLE_CUSTOMER"
	ProfileAdmin    Profile = "ROLE_ADMIN"
)

// ParseProfile accepts exactly ROLE_CUSTOMER or ROLE_ADMIN.
func ParseProfile(s string) (Profile, error) {
	switch p := Profile(s); p {
	case ProfileCustomer, ProfileAdmin:
		return p, nil
	}
	return "", ErrInvalidProfile
}

// ParseLegacyRole accepts the legacy create-only role field: CUSTOMER or
// ADMIN, with or without the ROLE_ prefix, in any letter case.
func ParseLegacyRole(s string) (Profile, error) {
	// ASCII case folding only: Unicode rules would read "admın" (dotless
	// ı) as ADMIN.
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	switch strings.TrimPrefix(string(b), "ROLE_") {
	case "CUSTOMER":
		return ProfileCustomer, nil
	case "ADMIN":
		return ProfileAdmin, nil
	}
	return "", ErrInvalidProfile
}

// Profiles is a set of profiles kept sorted and free of duplicates, so that
// two sets compare equal exactly when they grant the same roles.
type Profiles []Profile

// ParseProfiles validates each value and returns the canonical set. An empty
// list is a validation problem for the caller to report; it is returned as is.
func ParseProfiles(values []string) (Profiles, error) {
	out := make(Profiles, 0, len(values))
	for _, v := range values {
		p, err := ParseProfile(v)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out.Canonical(), nil
}

// Canonical returns the profiles sorted and without duplicates.
func (ps Profiles) Canonical() Profiles {
	out := slices.Clone(ps)
	slices.Sort(out)
	return slices.Compact(out)
}

// Has reports whether p is in the set.
func (ps Profiles) Has(p Profile) bool { return slices.Contains(ps, p) }

// Equal reports whether both sets grant the same profiles.
func (ps Profiles) Equal(other Profiles) bool {
	if ps.canonical() && other.canonical() {
		// Stored and signed sets are canonical already: no copies (every
		// signed-in request compares its token's set to the account's).
		return slices.Equal(ps, other)
	}
	return slices.Equal(ps.Canonical(), other.Canonical())
}

// canonical reports whether ps is sorted and without duplicates, as
// Canonical returns it.
func (ps Profiles) canonical() bool {
	for i := 1; i < len(ps); i++ {
		if ps[i-1] >= ps[i] {
			return false
		}
	}
	return true
}

// Strings returns the profiles as plain strings.
func (ps Profiles) Strings() []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}
