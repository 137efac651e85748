package application_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

func TestRegister_authorization(t *testing.T) {
	t.Parallel()
	type actorKind int
	const (
		anonymous actorKind = iota
		customer
		admin
	)
	tests := []struct {
		name     string
		opts     []envOption
		actor    actorKind
		profiles []string
		role     *string
		want     error
		wantProf domain.Profiles
	}{
		{name: "anonymous_customer_open_registration", actor: anonymous, want: nil, wantProf: domain.Profiles{domain.ProfileCustomer}},
		{name: "anonymous_explicit_customer", actor: anonymous, profiles: []string{"ROLE_CUSTOMER"}, wantProf: domain.Profiles{domain.ProfileCustomer}},
		{name: "anonymous_admin_needs_sign_in", actor: anonymous, profiles: []string{"ROLE_ADMIN"}, want: domain.ErrUnauthenticated},
		{name: "anonymous_admin_via_role", actor: anonymous, role: ptr("admin"), want: domain.ErrUnauthenticated},
		{name: "customer_cannot_create_admin", actor: customer, profiles: []string{"ROLE_CUSTOMER", "ROLE_ADMIN"}, want: domain.ErrForbidden},
		{name: "customer_cannot_create_admin_via_role", actor: customer, role: ptr("ROLE_ADMIN"), want: domain.ErrForbidden},
		{name: "admin_creates_admin", actor: admin, profiles: []string{"ROLE_ADMIN"}, wantProf: domain.Profiles{domain.ProfileAdmin}},
		{name: "admin_creates_admin_via_legacy_role", actor: admin, role: ptr("Admin"), wantProf: domain.Profiles{domain.ProfileAdmin}},
		{name: "closed_registration_anonymous", opts: []envOption{closedRegistration}, actor: anonymous, want: domain.ErrUnauthenticated},
		{name: "closed_registration_customer", opts: []envOption{closedRegistration}, actor: customer, want: domain.ErrForbidden},
		{name: "closed_registration_admin", opts: []envOption{closedRegistration}, actor: admin, wantProf: domain.Profiles{domain.ProfileCustomer}},
		{name: "legacy_role_customer_any_case", actor: anonymous, role: ptr("cUsToMeR"), wantProf: domain.Profiles{domain.ProfileCustomer}},
		{name: "profiles_and_role_conflict", actor: admin, profiles: []string{"ROLE_ADMIN"}, role: ptr("ADMIN"), want: domain.ErrConflictingFields},
		{name: "unknown_profile", actor: admin, profiles: []string{"ROLE_ROOT"}, want: domain.ErrInvalidProfile},
		{name: "unknown_role", actor: anonymous, role: ptr("superuser"), want: domain.ErrInvalidProfile},
		{name: "unknown_profile_beats_authorization", actor: anonymous, profiles: []string{"ROLE_ROOT"}, want: domain.ErrInvalidProfile},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.opts...)
			var actor *domain.Principal
			switch tc.actor {
			case customer:
				_, actor = e.seed(t, "cust@example.com")
			case admin:
				_, actor = e.seed(t, "admin@example.com", domain.ProfileAdmin)
			}
			u, err := e.users.Register(ctx, actor, application.RegisterInput{
				Name: "New User", Email: "New.User@Example.com", Password: "a long enough secret",
				Profiles: tc.profiles, Role: tc.role,
			})
			wantErr(t, err, tc.want)
			if tc.want != nil {
				if _, err := e.store.Users().ByEmail(ctx, "new.user@example.com"); !errors.Is(err, domain.ErrUserNotFound) {
					t.Fatalf("a refused create stored a user (err %v)", err)
				}
				return
			}
			if !u.Profiles.Equal(tc.wantProf) {
				t.Fatalf("profiles = %v, want %v", u.Profiles, tc.wantProf)
			}
			if u.Email != "new.user@example.com" {
				t.Fatalf("email not normalised: %q", u.Email)
			}
			if u.PasswordHash == "a long enough secret" {
				t.Fatal("password stored in clear")
			}
		})
	}
}

func TestRegister_validation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		in         application.RegisterInput
		wantFields []string
	}{
		{name: "all_fields_bad", in: application.RegisterInput{Name: "  ", Email: "nope", Password: "short"}, wantFields: []string{"name", "email", "password"}},
		{name: "name_too_long", in: application.RegisterInput{Name: string(make([]rune, 101)), Email: "a@example.com", Password: "a long enough secret"}, wantFields: []string{"name"}},
		{name: "name_control_character", in: application.RegisterInput{Name: "Ada\x07", Email: "a@example.com", Password: "a long enough secret"}, wantFields: []string{"name"}},
		{name: "email_with_display_name", in: application.RegisterInput{Name: "Ada", Email: "Ada <a@example.com>", Password: "a long enough secret"}, wantFields: []string{"email"}},
		{name: "email_quoted_local_part", in: application.RegisterInput{Name: "Ada", Email: `"a b"@example.com`, Password: "a long enough secret"}, wantFields: []string{"email"}},
		{name: "email_non_ascii", in: application.RegisterInput{Name: "Ada", Email: "adá@example.com", Password: "a long enough secret"}, wantFields: []string{"email"}},
		{name: "password_equals_email", in: application.RegisterInput{Name: "Ada", Email: "ada.lovelace@example.com", Password: "ADA.LOVELACE@example.com"}, wantFields: []string{"password"}},
		{name: "password_common", in: application.RegisterInput{Name: "Ada", Email: "a@example.com", Password: "Password123"}, wantFields: []string{"password"}},
		{name: "password_too_long_in_runes", in: application.RegisterInput{Name: "Ada", Email: "a@example.com", Password: string(make([]rune, 129))}, wantFields: []string{"password"}},
		{name: "empty_profiles", in: application.RegisterInput{Name: "Ada", Email: "a@example.com", Password: "a long enough secret", Profiles: []string{}}, wantFields: []string{"profiles"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			_, err := e.users.Register(ctx, nil, tc.in)
			var verr *domain.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("error = %v, want a validation error", err)
			}
			var got []string
			for _, f := range verr.Fields {
				got = append(got, f.Field)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantFields) {
				t.Fatalf("fields = %v, want %v", got, tc.wantFields)
			}
		})
	}
}

func TestRegister_password_of_128_multibyte_runes_is_accepted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pw := ""
	for range 128 {
		pw += "é"
	}
	if _, err := e.users.Register(ctx, nil, application.RegisterInput{Name: "Ada", Email: "a@example.com", Password: pw}); err != nil {
		t.Fatalf("128 runes (256 bytes) refused: %v", err)
	}
}

func TestRegister_email_taken_case_insensitively(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.seed(t, "ada@example.com")
	_, err := e.users.Register(ctx, nil, application.RegisterInput{Name: "Ada", Email: " Ada@Example.COM ", Password: "a long enough secret"})
	wantErr(t, err, domain.ErrEmailTaken)
}

func TestGet_authorization(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	self, selfP := e.seed(t, "self@example.com")
	other, _ := e.seed(t, "other@example.com")
	_, adminP := e.seed(t, "admin@example.com", domain.ProfileAdmin)
	missing := domain.NewUserID(e.clock.Now()).String()
	tests := []struct {
		name  string
		actor *domain.Principal
		id    string
		want  error
	}{
		{name: "self", actor: selfP, id: self.ID.String()},
		{name: "admin_reads_other", actor: adminP, id: other.ID.String()},
		{name: "customer_reads_other", actor: selfP, id: other.ID.String(), want: domain.ErrForbidden},
		{name: "customer_reads_missing_is_forbidden_not_not_found", actor: selfP, id: missing, want: domain.ErrForbidden},
		{name: "admin_reads_missing", actor: adminP, id: missing, want: domain.ErrUserNotFound},
		{name: "bad_id", actor: selfP, id: "not-an-id", want: domain.ErrInvalidID},
		{name: "uppercase_id_is_invalid", actor: adminP, id: "ABCDEF0123456789ABCDEF01", want: domain.ErrInvalidID},
		{name: "anonymous_with_bad_id_is_unauthenticated", actor: nil, id: "x", want: domain.ErrUnauthenticated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u, err := e.users.Get(ctx, tc.actor, tc.id)
			wantErr(t, err, tc.want)
			if tc.want == nil && u.ID.String() != tc.id {
				t.Fatalf("got user %s, want %s", u.ID, tc.id)
			}
		})
	}
}

func TestMe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	self, selfP := e.seed(t, "self@example.com")
	u, err := e.users.Me(ctx, selfP)
	wantErr(t, err, nil)
	if u.ID != self.ID {
		t.Fatalf("me = %s, want %s", u.ID, self.ID)
	}
	_, err = e.users.Me(ctx, nil)
	wantErr(t, err, domain.ErrUnauthenticated)
	// Deleted by an admin: refused at once, though the account cache held
	// it.
	_, adminP := e.seed(t, "admin@example.com", domain.ProfileAdmin)
	wantErr(t, e.users.Delete(ctx, adminP, self.ID.String()), nil)
	_, err = e.users.Me(ctx, selfP)
	wantErr(t, err, domain.ErrInvalidToken)
}

// Every change of an account through the use cases is seen by the
// caller's next request on this node, though the account cache held the
// account: disabled, demoted and promoted callers are refused at once,
// and a new name is read at once.
func TestMe_after_changes_on_this_node(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, adminP := e.seed(t, "admin@example.com", domain.ProfileAdmin)
	_, otherAdminP := e.seed(t, "admin2@example.com", domain.ProfileAdmin)
	tests := []struct {
		name     string
		profiles domain.Profiles
		in       application.UpdateInput
		want     error
	}{
		{name: "renamed", in: application.UpdateInput{Name: ptr("Renamed")}},
		{name: "disabled", in: application.UpdateInput{Disabled: ptr(true)}, want: domain.ErrInvalidToken},
		{name: "promoted", in: application.UpdateInput{Profiles: []string{string(domain.ProfileAdmin)}}, want: domain.ErrInvalidToken},
		{name: "demoted", profiles: domain.Profiles{domain.ProfileAdmin},
			in: application.UpdateInput{Profiles: []string{string(domain.ProfileCustomer)}}, want: domain.ErrInvalidToken},
	}
	for i, tc := range tests {
		u, p := e.seed(t, fmt.Sprintf("user%d@example.com", i), tc.profiles...)
		if _, err := e.users.Me(ctx, p); err != nil { // now cached
			t.Fatalf("%s: %v", tc.name, err)
		}
		by := adminP
		if i%2 == 1 {
			by = otherAdminP
		}
		if _, err := e.users.Update(ctx, by, u.ID.String(), tc.in); err != nil {
			t.Fatalf("%s: update: %v", tc.name, err)
		}
		got, err := e.users.Me(ctx, p)
		wantErr(t, err, tc.want)
		if tc.want == nil && got.Name != "Renamed" {
			t.Errorf("%s: name %q after the update", tc.name, got.Name)
		}
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, adminP := e.seed(t, "admin@example.com", domain.ProfileAdmin)
	_, custP := e.seed(t, "cust@example.com")
	for i := range 5 {
		e.seed(t, fmt.Sprintf("u%d@example.com", i))
	}
	t.Run("pages_follow_the_cursor", func(t *testing.T) {
		t.Parallel()
		var seen []domain.UserID
		after := ""
		for range 10 {
			page, err := e.users.List(ctx, adminP, application.ListInput{Limit: "3", After: after})
			wantErr(t, err, nil)
			for _, u := range page.Items {
				seen = append(seen, u.ID)
			}
			if page.Next == "" {
				break
			}
			after = page.Next.String()
		}
		if len(seen) != 7 {
			t.Fatalf("saw %d users, want 7", len(seen))
		}
		for i := 1; i < len(seen); i++ {
			if seen[i-1] >= seen[i] {
				t.Fatalf("not ordered by id: %v", seen)
			}
		}
	})
	t.Run("exact_page_has_no_next", func(t *testing.T) {
		t.Parallel()
		page, err := e.users.List(ctx, adminP, application.ListInput{Limit: "7"})
		wantErr(t, err, nil)
		if len(page.Items) != 7 || page.Next != "" {
			t.Fatalf("got %d users, next %q", len(page.Items), page.Next)
		}
	})
	t.Run("email_filter_is_normalised_and_exact", func(t *testing.T) {
		t.Parallel()
		page, err := e.users.List(ctx, adminP, application.ListInput{Email: " U3@EXAMPLE.com"})
		wantErr(t, err, nil)
		if len(page.Items) != 1 || page.Items[0].Email != "u3@example.com" {
			t.Fatalf("got %+v", page.Items)
		}
		page, err = e.users.List(ctx, adminP, application.ListInput{Email: "u%@example.com"})
		wantErr(t, err, nil)
		if len(page.Items) != 0 {
			t.Fatalf("wildcard matched %d users", len(page.Items))
		}
	})
	t.Run("email_prefix_is_normalised_and_literal", func(t *testing.T) {
		t.Parallel()
		page, err := e.users.List(ctx, adminP, application.ListInput{EmailPrefix: " U"})
		wantErr(t, err, nil)
		var got []domain.Email
		for _, u := range page.Items {
			got = append(got, u.Email)
		}
		if want := []domain.Email{"u0@example.com", "u1@example.com", "u2@example.com", "u3@example.com", "u4@example.com"}; !slices.Equal(got, want) {
			t.Fatalf("prefix U: %v, want %v", got, want)
		}
		page, err = e.users.List(ctx, adminP, application.ListInput{EmailPrefix: "u_"})
		wantErr(t, err, nil)
		if len(page.Items) != 0 {
			t.Fatalf("a wildcard matched %d users", len(page.Items))
		}
		// Blank counts as absent.
		page, err = e.users.List(ctx, adminP, application.ListInput{EmailPrefix: "  ", Email: "u1@example.com"})
		wantErr(t, err, nil)
		if len(page.Items) != 1 {
			t.Fatalf("blank prefix: %d users, want 1", len(page.Items))
		}
	})
	t.Run("email_prefix_pages_carry_the_filter", func(t *testing.T) {
		t.Parallel()
		var seen []domain.Email
		in := application.ListInput{Limit: "2", EmailPrefix: "u"}
		for pages := 1; ; pages++ {
			page, err := e.users.List(ctx, adminP, in)
			wantErr(t, err, nil)
			for _, u := range page.Items {
				seen = append(seen, u.Email)
			}
			if page.Next == "" {
				if pages != 3 {
					t.Errorf("%d pages, want 3", pages)
				}
				break
			}
			in.After = page.Next.String()
		}
		if len(seen) != 5 || !slices.IsSorted(seen) {
			t.Errorf("pages hold %v, want the five u* users", seen)
		}
	})
	for _, tc := range []struct {
		name    string
		in      application.ListInput
		message string
	}{
		{"email_prefix_too_long", application.ListInput{EmailPrefix: strings.Repeat("u", 255)}, "must be at most 254 bytes"},
		{"email_prefix_not_ascii", application.ListInput{EmailPrefix: "ü"}, "must be printable ASCII without spaces"},
		{"email_prefix_with_space", application.ListInput{EmailPrefix: "u 1"}, "must be printable ASCII without spaces"},
		{"email_prefix_and_email", application.ListInput{Email: "u1@example.com", EmailPrefix: "u"}, "cannot be combined with email"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The form of the request is judged before the caller's rights.
			for _, p := range []*domain.Principal{adminP, custP} {
				_, err := e.users.List(ctx, p, tc.in)
				var verr *domain.ValidationError
				if !errors.As(err, &verr) || len(verr.Fields) != 1 || verr.Fields[0] != (domain.FieldError{Field: application.FieldEmailPrefix, Message: tc.message}) {
					t.Fatalf("error = %v, want emailPrefix: %s", err, tc.message)
				}
			}
		})
	}
	t.Run("customer_is_forbidden", func(t *testing.T) {
		t.Parallel()
		_, err := e.users.List(ctx, custP, application.ListInput{})
		wantErr(t, err, domain.ErrForbidden)
	})
	t.Run("anonymous", func(t *testing.T) {
		t.Parallel()
		_, err := e.users.List(ctx, nil, application.ListInput{})
		wantErr(t, err, domain.ErrUnauthenticated)
	})
	for _, tc := range []struct {
		name string
		in   application.ListInput
	}{
		{name: "limit_too_big", in: application.ListInput{Limit: "201"}},
		{name: "limit_negative", in: application.ListInput{Limit: "-1"}},
		{name: "limit_not_a_number", in: application.ListInput{Limit: "ten"}},
		{name: "bad_after", in: application.ListInput{After: "zz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The shape check answers before authorization, even for a customer.
			_, err := e.users.List(ctx, custP, tc.in)
			var perr *domain.PageError
			if !errors.As(err, &perr) {
				t.Fatalf("error = %v, want a page error", err)
			}
		})
	}
}

func TestUpdate_authorization(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      []envOption
		asAdmin   bool
		onOther   bool
		in        application.UpdateInput
		want      error
		wantField string
	}{
		{name: "self_changes_name", in: application.UpdateInput{Name: ptr("Ada L.")}},
		{name: "self_legacy_shape_email_and_password", in: application.UpdateInput{Email: ptr("new@example.com"), Password: ptr("another long secret")}},
		{name: "self_full_shape_with_own_profiles", in: application.UpdateInput{Name: ptr("Ada"), Email: ptr("self@example.com"), Password: ptr("another long secret"), Profiles: []string{"ROLE_CUSTOMER"}}},
		{name: "self_escalates_to_admin", in: application.UpdateInput{Profiles: []string{"ROLE_ADMIN"}}, want: domain.ErrForbidden},
		{name: "self_adds_admin", in: application.UpdateInput{Profiles: []string{"ROLE_CUSTOMER", "ROLE_ADMIN"}}, want: domain.ErrForbidden},
		{name: "customer_on_other", onOther: true, in: application.UpdateInput{Name: ptr("x")}, want: domain.ErrForbidden},
		{name: "validation_before_authorization", onOther: true, in: application.UpdateInput{Email: ptr("bad")}, wantField: "email"},
		{name: "admin_on_other_profiles", asAdmin: true, onOther: true, in: application.UpdateInput{Profiles: []string{"ROLE_ADMIN"}}},
		{name: "unknown_profile", asAdmin: true, onOther: true, in: application.UpdateInput{Profiles: []string{"ROLE_GOD"}}, want: domain.ErrInvalidProfile},
		{name: "body_id_mismatch", in: application.UpdateInput{ID: ptr("000000000000000000000000")}, want: domain.ErrIDMismatch},
		{name: "wrong_current_password", in: application.UpdateInput{Password: ptr("another long secret"), CurrentPassword: ptr("wrong")}, want: domain.ErrInvalidCredentials},
		{name: "right_current_password", in: application.UpdateInput{Password: ptr("another long secret"), CurrentPassword: ptr(seededPassword)}},
		{name: "current_password_required_by_config", opts: []envOption{requireCurrentPassword}, in: application.UpdateInput{Password: ptr("another long secret")}, wantField: "currentPassword"},
		{name: "current_password_not_required_for_name", opts: []envOption{requireCurrentPassword}, in: application.UpdateInput{Name: ptr("Ada")}},
		{name: "current_password_not_required_for_admin", opts: []envOption{requireCurrentPassword}, asAdmin: true, onOther: true, in: application.UpdateInput{Password: ptr("another long secret")}},
		{name: "new_password_equals_current_email", in: application.UpdateInput{Password: ptr("SELF@example.com")}, wantField: "password"},
		{name: "new_password_equals_new_email", in: application.UpdateInput{Email: ptr("longer.mail@example.com"), Password: ptr("longer.mail@example.com")}, wantField: "password"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tc.opts...)
			self, actor := e.seed(t, "self@example.com")
			other, _ := e.seed(t, "other@example.com")
			if tc.asAdmin {
				_, actor = e.seed(t, "admin@example.com", domain.ProfileAdmin)
			}
			target := self
			if tc.onOther {
				target = other
			}
			if tc.name == "body_id_mismatch" {
				tc.in.ID = ptr(other.ID.String())
			}
			before, _ := e.store.Users().ByID(ctx, target.ID)
			_, err := e.users.Update(ctx, actor, target.ID.String(), tc.in)
			if tc.wantField != "" {
				var verr *domain.ValidationError
				if !errors.As(err, &verr) || verr.Fields[0].Field != tc.wantField {
					t.Fatalf("error = %v, want validation of %s", err, tc.wantField)
				}
			} else {
				wantErr(t, err, tc.want)
			}
			after, _ := e.store.Users().ByID(ctx, target.ID)
			if (tc.want != nil || tc.wantField != "") && fmt.Sprint(before) != fmt.Sprint(after) {
				t.Fatalf("a refused update changed the user:\n%v\n%v", before, after)
			}
		})
	}
}

// USERD_REQUIRE_CURRENT_PASSWORD holds for an admin's own account too: a
// stolen admin token must not change the admin's password or email.
func TestUpdate_admin_own_credentials_need_the_current_password(t *testing.T) {
	t.Parallel()
	e := newEnv(t, requireCurrentPassword)
	admin, adminP := e.seed(t, "admin@example.com", domain.ProfileAdmin)
	other, _ := e.seed(t, "other@example.com")
	for _, in := range []application.UpdateInput{
		{Password: ptr("another long secret")},
		{Email: ptr("new.admin@example.com")},
	} {
		_, err := e.users.Update(ctx, adminP, admin.ID.String(), in)
		var verr *domain.ValidationError
		if !errors.As(err, &verr) || verr.Fields[0].Field != application.FieldCurrentPassword {
			t.Fatalf("%+v without currentPassword: error = %v, want validation of currentPassword", in, err)
		}
	}
	_, err := e.users.Update(ctx, adminP, admin.ID.String(), application.UpdateInput{
		Password: ptr("another long secret"), CurrentPassword: ptr(seededPassword)})
	wantErr(t, err, nil)
	// Another account's password: the admin does not know it.
	_, err = e.users.Update(ctx, adminP, other.ID.String(), application.UpdateInput{Password: ptr("a third long secret")})
	wantErr(t, err, nil)
}

func TestUpdate_missing_user(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, adminP := e.seed(t, "admin@example.com", domain.ProfileAdmin)
	_, err := e.users.Update(ctx, adminP, domain.NewUserID(e.clock.Now()).String(), application.UpdateInput{Name: ptr("x")})
	wantErr(t, err, domain.ErrUserNotFound)
}

func TestUpdate_email_taken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, selfP := e.seed(t, "self@example.com")
	e.seed(t, "other@example.com")
	_, err := e.users.Update(ctx, selfP, selfP.UserID.String(), application.UpdateInput{Email: ptr("OTHER@example.com")})
	wantErr(t, err, domain.ErrEmailTaken)
}

// Changing credentials or profiles ends every session of the user; changing
// the name does not.
func TestUpdate_revokes_sessions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		asAdmin    bool
		in         application.UpdateInput
		wantRevoke bool
	}{
		{name: "name_keeps_sessions", in: application.UpdateInput{Name: ptr("New Name")}},
		{name: "same_email_keeps_sessions", in: application.UpdateInput{Email: ptr("SELF@example.com")}},
		{name: "password_revokes", in: application.UpdateInput{Password: ptr("another long secret")}, wantRevoke: true},
		{name: "email_revokes", in: application.UpdateInput{Email: ptr("moved@example.com")}, wantRevoke: true},
		{name: "profiles_revoke", asAdmin: true, in: application.UpdateInput{Profiles: []string{"ROLE_ADMIN"}}, wantRevoke: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			self, actor := e.seed(t, "self@example.com")
			pair, err := tokensOf(e.auth.Login(ctx, application.LoginInput{Email: "self@example.com", Password: seededPassword}))
			wantErr(t, err, nil)
			if tc.asAdmin {
				_, actor = e.seed(t, "admin@example.com", domain.ProfileAdmin)
			}
			_, err = e.users.Update(ctx, actor, self.ID.String(), tc.in)
			wantErr(t, err, nil)
			_, err = e.auth.Refresh(ctx, pair.RefreshToken)
			if tc.wantRevoke {
				wantErr(t, err, domain.ErrRefreshTokenInvalid)
			} else {
				wantErr(t, err, nil)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	victim, victimP := e.seed(t, "victim@example.com")
	_, adminP := e.seed(t, "admin@example.com", domain.ProfileAdmin)
	pair, err := tokensOf(e.auth.Login(ctx, application.LoginInput{Email: "victim@example.com", Password: seededPassword}))
	wantErr(t, err, nil)

	wantErr(t, e.users.Delete(ctx, nil, victim.ID.String()), domain.ErrUnauthenticated)
	wantErr(t, e.users.Delete(ctx, victimP, victim.ID.String()), domain.ErrForbidden)
	wantErr(t, e.users.Delete(ctx, adminP, "nope"), domain.ErrInvalidID)
	wantErr(t, e.users.Delete(ctx, adminP, victim.ID.String()), nil)
	wantErr(t, e.users.Delete(ctx, adminP, victim.ID.String()), domain.ErrUserNotFound)
	_, err = e.auth.Refresh(ctx, pair.RefreshToken)
	wantErr(t, err, domain.ErrRefreshTokenInvalid)
}

func TestEnsureAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, created, err := e.users.EnsureAdmin(ctx, "Root", "Root@Example.com", "a long enough secret")
	wantErr(t, err, nil)
	if !created || !u.IsAdmin() || u.Email != "root@example.com" {
		t.Fatalf("created=%v user=%+v", created, u)
	}
	again, created, err := e.users.EnsureAdmin(ctx, "Root", "root@example.com", "a long enough secret")
	wantErr(t, err, nil)
	if created || again.ID != u.ID {
		t.Fatalf("second call created=%v id=%s", created, again.ID)
	}
	_, _, err = e.users.EnsureAdmin(ctx, "Root", "x@example.com", "short")
	var verr *domain.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("weak bootstrap password accepted: %v", err)
	}
	// Someone registered the admin's address first: the operator hears of
	// it, and the account is left as it is.
	squatter, _ := e.seed(t, "boot@example.com")
	held, created, err := e.users.EnsureAdmin(ctx, "Boot", "boot@example.com", "a long enough secret")
	wantErr(t, err, application.ErrEmailHeldByNonAdmin)
	if created || held.ID != squatter.ID || held.IsAdmin() {
		t.Fatalf("created=%v user=%+v", created, held)
	}
}

// A token whose user is gone, or whose profiles no longer match the
// account's, is no longer good for anything.
func TestStaleTokens_are_rejected(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	victim, victimP := e.seed(t, "victim@example.com")
	_, adminP := e.seed(t, "admin@example.com", domain.ProfileAdmin)
	demoted, demotedP := e.seed(t, "demoted@example.com", domain.ProfileAdmin)
	_, err := e.users.Update(ctx, adminP, demoted.ID.String(), application.UpdateInput{Profiles: []string{"ROLE_CUSTOMER"}})
	wantErr(t, err, nil)
	wantErr(t, e.users.Delete(ctx, adminP, victim.ID.String()), nil)

	for name, call := range map[string]func(p *domain.Principal) error{
		"get_self":   func(p *domain.Principal) error { _, err := e.users.Get(ctx, p, p.UserID.String()); return err },
		"get_bad_id": func(p *domain.Principal) error { _, err := e.users.Get(ctx, p, "x"); return err },
		"me":         func(p *domain.Principal) error { _, err := e.users.Me(ctx, p); return err },
		"list":       func(p *domain.Principal) error { _, err := e.users.List(ctx, p, application.ListInput{}); return err },
		"update": func(p *domain.Principal) error {
			_, err := e.users.Update(ctx, p, p.UserID.String(), application.UpdateInput{Name: ptr("x")})
			return err
		},
		"delete": func(p *domain.Principal) error { return e.users.Delete(ctx, p, adminP.UserID.String()) },
		"register": func(p *domain.Principal) error {
			_, err := e.users.Register(ctx, p, application.RegisterInput{Name: "N", Email: "n@example.com", Password: "a long enough secret"})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			wantErr(t, call(victimP), domain.ErrInvalidToken)
			wantErr(t, call(demotedP), domain.ErrInvalidToken)
		})
	}
}
