package domain_test

import (
	"errors"
	"testing"

	"github.com/userd/userd/domain"
)

var (
	selfID  = domain.UserID("6740f1c2a1b2c3d4e5f60718")
	otherID = domain.UserID("6740f1c2a1b2c3d4e5f60719")
	admin   = &domain.Principal{UserID: selfID, Profiles: domain.Profiles{domain.ProfileAdmin}}
	// adminCustomer holds both profiles: still an admin.
	adminCustomer = &domain.Principal{UserID: selfID, Profiles: domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}}
	customer      = &domain.Principal{UserID: selfID, Profiles: domain.Profiles{domain.ProfileCustomer}}
	anonymous     *domain.Principal
)

var (
	customers = domain.Profiles{domain.ProfileCustomer}
	admins    = domain.Profiles{domain.ProfileAdmin}
	both      = domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}
)

func TestRequireAdmin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		actor *domain.Principal
		want  error
	}{
		{"admin", admin, nil},
		{"admin_and_customer", adminCustomer, nil},
		{"customer", customer, domain.ErrForbidden},
		{"no_profiles", &domain.Principal{UserID: selfID}, domain.ErrForbidden},
		{"anonymous", anonymous, domain.ErrUnauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.actor.RequireAdmin(); !errors.Is(got, tc.want) || (tc.want == nil && got != nil) {
				t.Fatalf("RequireAdmin() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCanRegister(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		actor    *domain.Principal
		profiles domain.Profiles
		open     bool
		want     error
	}{
		{"anonymous_customer_while_open", anonymous, customers, true, nil},
		{"anonymous_admin_while_open", anonymous, admins, true, domain.ErrUnauthenticated},
		{"anonymous_customer_and_admin_while_open", anonymous, both, true, domain.ErrUnauthenticated},
		{"anonymous_customer_while_closed", anonymous, customers, false, domain.ErrUnauthenticated},
		{"customer_creates_customer_while_open", customer, customers, true, nil},
		{"customer_creates_admin", customer, admins, true, domain.ErrForbidden},
		{"customer_creates_customer_while_closed", customer, customers, false, domain.ErrForbidden},
		{"admin_creates_admin", admin, admins, true, nil},
		{"admin_creates_anything_while_closed", admin, both, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.actor.CanRegister(domain.NewUser{Profiles: tc.profiles}, tc.open); !sameErr(got, tc.want) {
				t.Fatalf("CanRegister(%v, open=%v) = %v, want %v", tc.profiles, tc.open, got, tc.want)
			}
		})
	}
}

func TestCanRegister_metadata(t *testing.T) {
	t.Parallel()
	md, _ := domain.ParseMetadata([]byte(`{"theme":"dark"}`), domain.MetadataMaxBytes)
	withMetadata := domain.NewUser{Profiles: customers, Metadata: md}
	withAppMetadata := domain.NewUser{Profiles: customers, AppMetadata: md}
	for _, tc := range []struct {
		name  string
		actor *domain.Principal
		n     domain.NewUser
		want  error
	}{
		{"anonymous_sets_metadata", anonymous, withMetadata, nil},
		{"anonymous_sets_app_metadata", anonymous, withAppMetadata, domain.ErrUnauthenticated},
		{"customer_sets_app_metadata", customer, withAppMetadata, domain.ErrForbidden},
		{"admin_sets_app_metadata", admin, withAppMetadata, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.actor.CanRegister(tc.n, true); !sameErr(got, tc.want) {
				t.Fatalf("CanRegister(%+v) = %v, want %v", tc.n, got, tc.want)
			}
		})
	}
}

func TestCanReadUser_and_CanUpdateUser(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		actor  *domain.Principal
		target domain.UserID
		want   error
	}{
		{"self", customer, selfID, nil},
		{"other", customer, otherID, domain.ErrForbidden},
		{"admin_other", admin, otherID, nil},
		{"admin_self", admin, selfID, nil},
		{"anonymous", anonymous, selfID, domain.ErrUnauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.actor.CanReadUser(tc.target); !sameErr(got, tc.want) {
				t.Errorf("CanReadUser(%s) = %v, want %v", tc.target, got, tc.want)
			}
			if got := tc.actor.CanUpdateUser(tc.target); !sameErr(got, tc.want) {
				t.Errorf("CanUpdateUser(%s) = %v, want %v", tc.target, got, tc.want)
			}
		})
	}
}

func TestCanChangeAccount(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	ada, adaEmail := "Ada", domain.Email("ada@example.com")
	cust := domain.User{ID: selfID, Profiles: customers}
	for _, tc := range []struct {
		name    string
		actor   *domain.Principal
		current domain.User
		change  domain.UserChange
		want    error
	}{
		{"no_change_asked", customer, cust, domain.UserChange{}, nil},
		{"customer_sends_own_profiles", customer, cust, domain.UserChange{Profiles: domain.Profiles{domain.ProfileCustomer, domain.ProfileCustomer}}, nil},
		{"customer_escalates", customer, cust, domain.UserChange{Profiles: admins}, domain.ErrForbidden},
		{"customer_adds_admin", customer, cust, domain.UserChange{Profiles: both}, domain.ErrForbidden},
		{"customer_drops_a_profile", customer, domain.User{Profiles: both}, domain.UserChange{Profiles: customers}, domain.ErrForbidden},
		{"customer_sends_own_status", customer, cust, domain.UserChange{EmailVerified: &no, Disabled: &no}, nil},
		{"customer_verifies_own_email", customer, cust, domain.UserChange{EmailVerified: &yes}, domain.ErrForbidden},
		{"customer_disables_itself", customer, cust, domain.UserChange{Disabled: &yes}, domain.ErrForbidden},
		{"admin_promotes", admin, cust, domain.UserChange{Profiles: both}, nil},
		{"admin_demotes", admin, domain.User{Profiles: admins}, domain.UserChange{Profiles: customers}, nil},
		{"admin_verifies_and_disables", admin, cust, domain.UserChange{EmailVerified: &yes, Disabled: &yes}, nil},
		{"anonymous_changes", anonymous, cust, domain.UserChange{Profiles: admins}, domain.ErrUnauthenticated},
		{"token_renames", withToken(customer), cust, domain.UserChange{Name: &ada}, nil},
		{"token_sends_same_email", withToken(customer), domain.User{Email: "ada@example.com"},
			domain.UserChange{Email: &adaEmail}, nil},
		{"token_changes_email", withToken(customer), cust, domain.UserChange{Email: &adaEmail},
			domain.ErrInteractiveSessionRequired},
		{"token_changes_password", withToken(customer), cust, domain.UserChange{Password: &ada},
			domain.ErrInteractiveSessionRequired},
		{"admin_token_changes_password", withToken(admin), cust, domain.UserChange{Password: &ada},
			domain.ErrInteractiveSessionRequired},
		{"admin_token_disables", withToken(admin), cust, domain.UserChange{Disabled: &yes}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.actor.CanChangeAccount(tc.current, tc.change); !sameErr(got, tc.want) {
				t.Fatalf("CanChangeAccount(%+v) = %v, want %v", tc.change, got, tc.want)
			}
		})
	}
}

func TestNeedsCurrentPassword(t *testing.T) {
	t.Parallel()
	u := domain.User{ID: selfID, Email: "ada@example.com", Profiles: customers}
	newEmail, sameEmail := domain.Email("new@example.com"), domain.Email("ada@example.com")
	pw, name := "a new passphrase", "Ada"
	for _, tc := range []struct {
		name     string
		actor    *domain.Principal
		change   domain.UserChange
		required bool
		want     bool
	}{
		{"not_required", customer, domain.UserChange{Password: &pw}, false, false},
		{"password_change", customer, domain.UserChange{Password: &pw}, true, true},
		{"email_change", customer, domain.UserChange{Email: &newEmail}, true, true},
		{"same_email", customer, domain.UserChange{Email: &sameEmail}, true, false},
		{"name_change", customer, domain.UserChange{Name: &name}, true, false},
		{"admin_changes_own_password", admin, domain.UserChange{Password: &pw}, true, true},
		{"admin_changes_own_email", admin, domain.UserChange{Email: &newEmail}, true, true},
		{"admin_changes_another_password", &domain.Principal{UserID: otherID, Profiles: admins}, domain.UserChange{Password: &pw}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.actor.NeedsCurrentPassword(tc.change, u, tc.required); got != tc.want {
				t.Fatalf("NeedsCurrentPassword = %v, want %v", got, tc.want)
			}
		})
	}
}

// sameErr reports whether got is want (both nil, or got wraps want).
func sameErr(got, want error) bool {
	if want == nil {
		return got == nil
	}
	return errors.Is(got, want)
}

// withToken is p as a caller with a personal access token of every
// scope.
func withToken(p *domain.Principal) *domain.Principal {
	c := *p
	c.Token = &domain.TokenGrant{ID: "t", Scopes: domain.TokenScopes}
	return &c
}
