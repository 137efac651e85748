package domain_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

func TestNewUserID_layout_and_order(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(0x6740f1c2, 0)
	id := domain.NewUserID(t0)
	if len(id) != 24 || !strings.HasPrefix(id.String(), "6740f1c2") {
		t.Fatalf("id %q does not start with the big-endian seconds", id)
	}
	if _, err := domain.ParseUserID(id.String()); err != nil {
		t.Fatalf("own id does not parse: %v", err)
	}
	if later := domain.NewUserID(t0.Add(time.Second)); later <= id {
		t.Fatalf("later id %s does not sort after %s", later, id)
	}
	if a, b := domain.NewUserID(t0), domain.NewUserID(t0); a == b {
		t.Fatal("two ids of one second are equal: the random part is missing")
	}
}

func TestParseUserID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"6740f1c2a1b2c3d4e5f60718", true},
		{"6740F1C2A1B2C3D4E5F60718", false},
		{"6740f1c2a1b2c3d4e5f6071", false},
		{"6740f1c2a1b2c3d4e5f607189", false},
		{"6740f1c2a1b2c3d4e5f6071g", false},
		{"me", false},
		{"", false},
		{"' OR 1=1 --            ", false},
	} {
		_, err := domain.ParseUserID(tc.in)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, domain.ErrInvalidID)) {
			t.Errorf("ParseUserID(%q) = %v, want ok=%v", tc.in, err, tc.ok)
		}
	}
}

func TestParseEmail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{" Ada@Example.COM ", "ada@example.com", true},
		{"first.last+tag@sub.example.co.uk", "first.last+tag@sub.example.co.uk", true},
		{"o'brien@example.com", "o'brien@example.com", true},
		{"user@localhost", "user@localhost", true},
		{"Ada <ada@example.com>", "", false},
		{`"ada lovelace"@example.com`, "", false},
		{"ada(comment)@example.com", "", false},
		{"ada@example.com (Ada)", "", false},
		{"adá@example.com", "", false},
		{"ada@exämple.com", "", false},
		{"ada@@example.com", "", false},
		{"@example.com", "", false},
		{"ada@", "", false},
		{"ada.@example.com", "", false},
		{".ada@example.com", "", false},
		{"a..da@example.com", "", false},
		{"ada@-example.com", "", false},
		{"ada@example..com", "", false},
		{"ada@exa_mple.com", "", false},
		{"ada example@example.com", "", false},
		{"ada\x00@example.com", "", false},
		{"", "", false},
		{strings.Repeat("a", 64) + "@example.com", strings.Repeat("a", 64) + "@example.com", true},
		{strings.Repeat("a", 65) + "@example.com", "", false},
		{"a@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 63) + "." + strings.Repeat("e", 61), "", false},
	} {
		got, msg := domain.ParseEmail(tc.in)
		if (msg == "") != tc.ok || string(got) != tc.want {
			t.Errorf("ParseEmail(%q) = %q, %q; want %q ok=%v", tc.in, got, msg, tc.want, tc.ok)
		}
	}
}

func TestParseEmailPrefix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{" Ada@Ex ", "ada@ex", true},
		{"ADA", "ada", true},
		{"", "", true},
		{"  ", "", true},
		// Not an email, and that is fine; the wildcards of SQL are plain
		// characters here.
		{"@", "@", true},
		{"a%b_c\\", "a%b_c\\", true},
		{strings.Repeat("a", 254), strings.Repeat("a", 254), true},
		{strings.Repeat("a", 255), "", false},
		{"ada lovelace", "", false},
		{"ad\x00a", "", false},
		{"adá", "", false},
		{"\xff", "", false},
	} {
		got, msg := domain.ParseEmailPrefix(tc.in)
		if (msg == "") != tc.ok || got != tc.want {
			t.Errorf("ParseEmailPrefix(%q) = %q, %q; want %q ok=%v", tc.in, got, msg, tc.want, tc.ok)
		}
	}
}

func TestParseName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"  Ada Lovelace ", "Ada Lovelace", true},
		{"李白", "李白", true},
		{strings.Repeat("é", 100), strings.Repeat("é", 100), true},
		{strings.Repeat("é", 101), "", false},
		{"   ", "", false},
		{"Ada\nLovelace", "", false},
		{"A\u0085da", "", false},
		{"Ada\u0085", "Ada", true}, // NEL is white space: trimmed
		{"\xff", "", false},
		// Format characters (Unicode category Cf) are invisible.
		{"Ada \u202eecalevoL", "", false}, // right-to-left override
		{"admin\u200b", "", false},        // zero-width space
		{"\ufeffAda", "", false},          // byte order mark
		{"Ada\u200dKing", "", false},      // zero-width joiner
		{"Ada\u2066Lovelace\u2069", "", false},
	} {
		got, msg := domain.ParseName(tc.in)
		if (msg == "") != tc.ok || got != tc.want {
			t.Errorf("ParseName(%q) = %q, %q; want %q ok=%v", tc.in, got, msg, tc.want, tc.ok)
		}
	}
}

func TestCheckPassword(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pw, email string
		ok        bool
	}{
		{"correct horse battery staple", "ada@example.com", true},
		{"12345678", "", false},
		{"QWERTYUIOP", "", false},
		{"short", "", false},
		{strings.Repeat("ü", 8), "", true},
		{strings.Repeat("ü", 128), "", true},
		{strings.Repeat("x", 129), "", false},
		{"Ada@Example.com", "ada@example.com", false},
		{"no composition rules at all", "", true},
	} {
		if msg := domain.CheckPassword(tc.pw, domain.Email(tc.email)); (msg == "") != tc.ok {
			t.Errorf("CheckPassword(%q) = %q, want ok=%v", tc.pw, msg, tc.ok)
		}
	}
}

func TestRoles(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]domain.Profile{
		"ADMIN": domain.ProfileAdmin, "admin": domain.ProfileAdmin, "Role_Admin": domain.ProfileAdmin,
		"CUSTOMER": domain.ProfileCustomer, "role_customer": domain.ProfileCustomer,
	} {
		if got, err := domain.ParseLegacyRole(in); err != nil || got != want {
			t.Errorf("ParseLegacyRole(%q) = %q, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "ROOT", "ROLE_", "ROLE_ROLE_ADMIN", "adm\u0131n", "\u0130ADMIN"} {
		if _, err := domain.ParseLegacyRole(in); !errors.Is(err, domain.ErrInvalidProfile) {
			t.Errorf("ParseLegacyRole(%q) accepted", in)
		}
	}
	// profiles, unlike the legacy role, are exact.
	if _, err := domain.ParseProfiles([]string{"role_admin"}); !errors.Is(err, domain.ErrInvalidProfile) {
		t.Error("lower-case profile accepted")
	}
	ps, err := domain.ParseProfiles([]string{"ROLE_CUSTOMER", "ROLE_ADMIN", "ROLE_CUSTOMER"})
	if err != nil || len(ps) != 2 || !ps.Equal(domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}) {
		t.Errorf("ParseProfiles = %v, %v", ps, err)
	}
}

func TestLoginAttempts_delay_doubles_from_30s_to_15m(t *testing.T) {
	t.Parallel()
	last := time.Unix(1_800_000_000, 0)
	for failures, want := range map[int]time.Duration{
		0: 0, 4: 0, 5: 30 * time.Second, 6: time.Minute, 7: 2 * time.Minute, 8: 4 * time.Minute,
		9: 8 * time.Minute, 10: 15 * time.Minute, 1000: 15 * time.Minute,
	} {
		a := domain.LoginAttempts{Failures: failures, LastFailureAt: last}
		if got := a.RetryAfter(last); got != want {
			t.Errorf("%d failures: wait %v, want %v", failures, got, want)
		}
	}
}

func TestLoginDelay_is_the_ladder_of_the_lock_out(t *testing.T) {
	t.Parallel()
	prev := time.Duration(0)
	for failures := range 64 {
		d := domain.LoginDelay(failures)
		a := domain.LoginAttempts{Failures: failures, LastFailureAt: time.Unix(0, 0)}
		if got := a.RetryAfter(time.Unix(0, 0)); got != d {
			t.Errorf("%d failures: RetryAfter %v, LoginDelay %v", failures, got, d)
		}
		if d < prev || d > domain.LoginMaxDelay {
			t.Errorf("LoginDelay(%d) = %v after %v: must not decrease nor pass the maximum", failures, d, prev)
		}
		prev = d
	}
	if prev != domain.LoginMaxDelay {
		t.Errorf("the ladder ends at %v, want %v", prev, domain.LoginMaxDelay)
	}
}

func TestLoginAttempts_Reserve(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	var a domain.LoginAttempts
	// The budget: LoginFreeFailures checks, each counted up front.
	for i := 1; i <= domain.LoginFreeFailures; i++ {
		var wait time.Duration
		if a, wait = a.Reserve(t0); wait != 0 || a.Failures != i || !a.LastFailureAt.Equal(t0) {
			t.Fatalf("reservation %d: %+v, wait %v", i, a, wait)
		}
	}
	// Locked: refused with the wait, nothing counted.
	next, wait := a.Reserve(t0.Add(10 * time.Second))
	if wait != 20*time.Second || next != a {
		t.Fatalf("while locked: %+v, wait %v; want unchanged, 20s", next, wait)
	}
	// After the delay, one more check, which doubles the next delay.
	next, wait = a.Reserve(t0.Add(30 * time.Second))
	if wait != 0 || next.Failures != domain.LoginFreeFailures+1 || next.RetryAfter(t0.Add(30*time.Second)) != time.Minute {
		t.Fatalf("after the delay: %+v, wait %v", next, wait)
	}
	// A lagging clock does not move the last failure backwards.
	lagging, _ := domain.LoginAttempts{Failures: 2, LastFailureAt: t0}.Reserve(t0.Add(-time.Second))
	if lagging.Failures != 3 || !lagging.LastFailureAt.Equal(t0) {
		t.Fatalf("lagging clock: %+v", lagging)
	}
	// A window without failures starts the count over.
	fresh, wait := next.Reserve(next.LastFailureAt.Add(domain.LoginFailureWindow + time.Microsecond))
	if wait != 0 || fresh.Failures != 1 {
		t.Fatalf("after the window: %+v, wait %v", fresh, wait)
	}
}

func TestCommonPasswordList_is_loaded(t *testing.T) {
	t.Parallel()
	for _, pw := range []string{"password", "iloveyou", "qwertyuiop", "PASSWORD1"} {
		if !domain.IsCommonPassword(pw) {
			t.Errorf("%q not on the list", pw)
		}
	}
	if domain.IsCommonPassword("# Common passwords refused at registration and password change.") {
		t.Error("a comment line was loaded as a password")
	}
}

// Unicode case folding and white space must not turn a non-ASCII string
// into an ASCII address (found by FuzzParseEmail).
func TestParseEmail_no_unicode_folding(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"a@\u212aelvin.example", "\u0130nci@example.com", "\u2028ada@example.com", "ada@example.com\u3000"} {
		if e, msg := domain.ParseEmail(in); msg == "" {
			t.Errorf("ParseEmail(%q) = %q, want a refusal", in, e)
		}
	}
}
