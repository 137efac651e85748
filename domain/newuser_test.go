package domain_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

func fields(verr domain.ValidationError) []string {
	var out []string
	for _, f := range verr.Fields {
		out = append(out, f.Field)
	}
	return out
}

func TestValidateNewUser(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, userName, email string
		profiles              domain.Profiles
		wantFields            []string
	}{
		{"valid", "Ada", " Ada@Example.com ", customers, nil},
		{"bad_name", "", "ada@example.com", customers, []string{"name"}},
		{"bad_email", "Ada", "ada", customers, []string{"email"}},
		{"no_profiles", "Ada", "ada@example.com", nil, []string{"profiles"}},
		{"everything_wrong_at_once", "\x00", "@", domain.Profiles{}, []string{"name", "email", "profiles"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nu, verr := domain.ValidateNewUser(tc.userName, tc.email, tc.profiles)
			if got := fields(verr); !slices.Equal(got, tc.wantFields) {
				t.Fatalf("invalid fields %v, want %v", got, tc.wantFields)
			}
			if tc.wantFields == nil && (nu.Email != "ada@example.com" || nu.Name != "Ada") {
				t.Fatalf("stored form %+v", nu)
			}
		})
	}
	_, verr := domain.ValidateNewUser("Ada", "ada@example.com", nil)
	if msg := verr.Fields[0].Message; !strings.Contains(msg, "ROLE_CUSTOMER") {
		t.Errorf("no-profile message %q does not say which profiles exist", msg)
	}
}

func TestNewUser_User(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	nu, verr := domain.ValidateNewUser("Ada", "ada@example.com", domain.Profiles{domain.ProfileCustomer, domain.ProfileAdmin, domain.ProfileCustomer})
	if verr.Err() != nil {
		t.Fatal(verr.Err())
	}
	u := nu.User("hash", now)
	if _, err := domain.ParseUserID(u.ID.String()); err != nil || !strings.HasPrefix(u.ID.String(), "6b016ba0") {
		t.Errorf("id %q: want a valid id of the creation second", u.ID)
	}
	if !u.CreatedAt.Equal(now) || !u.UpdatedAt.Equal(now) || u.PasswordHash != "hash" || u.Email != "ada@example.com" {
		t.Errorf("user %+v", u)
	}
	if !slices.Equal(u.Profiles, domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}) {
		t.Errorf("profiles %v, want the canonical set", u.Profiles)
	}
}

func TestResolveProfiles(t *testing.T) {
	t.Parallel()
	role := func(s string) *string { return &s }
	for _, tc := range []struct {
		name     string
		profiles []string
		role     *string
		want     domain.Profiles
		wantErr  error
	}{
		{"neither_is_customer", nil, nil, customers, nil},
		{"profiles", []string{"ROLE_ADMIN", "ROLE_CUSTOMER"}, nil, both, nil},
		{"legacy_role", nil, role("admin"), admins, nil},
		{"both_fields", []string{"ROLE_ADMIN"}, role("ADMIN"), nil, domain.ErrConflictingFields},
		{"unknown_profile", []string{"ROLE_ROOT"}, nil, nil, domain.ErrInvalidProfile},
		{"unknown_role", nil, role("root"), nil, domain.ErrInvalidProfile},
		{"empty_list_left_for_validation", []string{}, nil, domain.Profiles{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := domain.ResolveProfiles(tc.profiles, tc.role)
			if !sameErr(err, tc.wantErr) || !slices.Equal(got, tc.want) {
				t.Fatalf("ResolveProfiles = %v, %v; want %v, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseUserChange(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name                  string
		userName, email, pass *string
		profiles              []string
		wantErr               error
		wantFields            []string
	}{
		{name: "nothing", wantErr: nil},
		{name: "valid_fields", userName: s(" Ada "), email: s("ADA@example.com"), pass: s("a long passphrase"), profiles: []string{"ROLE_CUSTOMER"}},
		{name: "unknown_profile_first", email: s("bad"), profiles: []string{"ROLE_ROOT"}, wantErr: domain.ErrInvalidProfile},
		{name: "empty_profiles", profiles: []string{}, wantFields: []string{"profiles"}},
		{name: "bad_fields", userName: s(""), email: s("bad"), pass: s("short"), wantFields: []string{"name", "email", "password"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := domain.ParseUserChange(domain.UserChangeInput{Name: tc.userName, Email: tc.email, Password: tc.pass, Profiles: tc.profiles})
			if tc.wantFields != nil {
				var verr *domain.ValidationError
				if !errors.As(err, &verr) || !slices.Equal(fields(*verr), tc.wantFields) {
					t.Fatalf("error %v, want invalid fields %v", err, tc.wantFields)
				}
				return
			}
			if !sameErr(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if err == nil && tc.userName != nil && (*c.Name != "Ada" || *c.Email != "ada@example.com") {
				t.Fatalf("change %+v not in stored form", c)
			}
		})
	}
}

func TestUserChange_CheckPasswordFor(t *testing.T) {
	t.Parallel()
	u := domain.User{Email: "ada@example.com"}
	pw, other := "ADA@example.com", domain.Email("new@example.com")
	// The password equals the current email: refused, unless the email
	// changes in the same update.
	if err := (domain.UserChange{Password: &pw}).CheckPasswordFor(u); err == nil {
		t.Error("a password equal to the email was accepted")
	}
	if err := (domain.UserChange{Password: &pw, Email: &other}).CheckPasswordFor(u); err != nil {
		t.Errorf("a password equal to the old email was refused: %v", err)
	}
	newPw := "new@example.com"
	if err := (domain.UserChange{Password: &newPw, Email: &other}).CheckPasswordFor(u); err == nil {
		t.Error("a password equal to the new email was accepted")
	}
	if err := (domain.UserChange{}).CheckPasswordFor(u); err != nil {
		t.Errorf("no password: %v", err)
	}
}

func TestUser_Apply(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	base := domain.User{ID: selfID, Name: "Ada", Email: "ada@example.com", PasswordHash: "old", Profiles: customers,
		CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour)}
	s := func(v string) *string { return &v }
	e := func(v domain.Email) *domain.Email { return &v }
	for _, tc := range []struct {
		name       string
		change     domain.UserChange
		wantFields []string
		wantEnds   bool
	}{
		{"nothing", domain.UserChange{}, nil, false},
		{"same_name", domain.UserChange{Name: s("Ada")}, nil, false},
		{"name", domain.UserChange{Name: s("Ada King")}, []string{"name"}, false},
		{"same_email", domain.UserChange{Email: e("ada@example.com")}, nil, false},
		{"email", domain.UserChange{Email: e("king@example.com")}, []string{"email"}, true},
		{"password", domain.UserChange{Password: s("whatever")}, []string{"password"}, true},
		{"same_profiles", domain.UserChange{Profiles: customers}, nil, false},
		{"profiles", domain.UserChange{Profiles: both}, []string{"profiles"}, true},
		{"all", domain.UserChange{Name: s("K"), Email: e("k@example.com"), Password: s("x"), Profiles: admins},
			[]string{"name", "email", "password", "profiles"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := base
			ch := u.Apply(tc.change, "new-hash", now)
			if !slices.Equal(ch.Fields, tc.wantFields) || ch.EndsSessions != tc.wantEnds {
				t.Fatalf("changes %+v, want fields %v, ends sessions %v", ch, tc.wantFields, tc.wantEnds)
			}
			if !u.UpdatedAt.Equal(now) || u.ID != base.ID || !u.CreatedAt.Equal(base.CreatedAt) {
				t.Fatalf("user %+v: UpdatedAt must move to now, id and creation stay", u)
			}
			if (tc.change.Password != nil) != (u.PasswordHash == "new-hash") {
				t.Fatalf("hash %q after change %+v", u.PasswordHash, tc.change)
			}
		})
	}
}

func TestUser_Apply_account_status(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	yes, no := true, false
	newEmail := domain.Email("king@example.com")
	verified := domain.User{ID: selfID, Email: "ada@example.com", EmailVerified: true, Profiles: customers}
	for _, tc := range []struct {
		name         string
		before       domain.User
		change       domain.UserChange
		wantVerified bool
		wantDisabled bool
		wantEnds     bool
		wantOld      domain.Email
	}{
		{"new_email_is_unverified", verified, domain.UserChange{Email: &newEmail}, false, false, true, "ada@example.com"},
		{"admin_verifies_the_new_email_at_once", verified, domain.UserChange{Email: &newEmail, EmailVerified: &yes}, true, false, true, "ada@example.com"},
		{"same_email_stays_verified", verified, domain.UserChange{Email: &verified.Email}, true, false, false, ""},
		{"disabling_ends_sessions", verified, domain.UserChange{Disabled: &yes}, true, true, true, ""},
		{"enabling_ends_nothing", domain.User{Disabled: true}, domain.UserChange{Disabled: &no}, false, false, false, ""},
		{"unverifying", verified, domain.UserChange{EmailVerified: &no}, false, false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := tc.before
			ch := u.Apply(tc.change, "", now)
			if u.EmailVerified != tc.wantVerified || u.Disabled != tc.wantDisabled || ch.EndsSessions != tc.wantEnds || ch.OldEmail != tc.wantOld {
				t.Fatalf("after %+v: verified=%v disabled=%v ends=%v old=%q", tc.change, u.EmailVerified, u.Disabled, ch.EndsSessions, ch.OldEmail)
			}
		})
	}
}
