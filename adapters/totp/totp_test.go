package totp_test

import (
	"bytes"
	"encoding/base32"
	"errors"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/userd/userd/adapters/totp"
	"github.com/userd/userd/domain"
)

// rfcSecret is the SHA-1 secret of RFC 6238's test vectors (appendix B).
var rfcSecret = []byte("12345678901234567890")

// step returns the start of a time step.
func step(s int64) time.Time { return time.Unix(s*30, 0) }

func newOTP(t testing.TB) *totp.OneTimePasswords {
	t.Helper()
	o, err := totp.New("userd", nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestMatch_rfc6238_vectors checks the codes against RFC 6238's SHA-1
// vectors, cut to 6 digits (the last 6 of the 8 the RFC prints: both are
// the same number modulo a power of ten).
func TestMatch_rfc6238_vectors(t *testing.T) {
	t.Parallel()
	o := newOTP(t)
	for _, v := range []struct {
		unix int64
		code string
	}{
		{59, "287082"},
		{1111111109, "081804"},
		{1111111111, "050471"},
		{1234567890, "005924"},
		{2000000000, "279037"},
		{20000000000, "353130"},
	} {
		now := time.Unix(v.unix, 0)
		got, ok := o.Match(rfcSecret, v.code, now, 0)
		if !ok || got != domain.TOTPStep(now) {
			t.Errorf("Match(%q) at %d = %d, %v; want step %d", v.code, v.unix, got, ok, domain.TOTPStep(now))
		}
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	o := newOTP(t)
	// Steps of rfcSecret whose codes repeat (found by search, checked with
	// oathtool): 62075368 and 62075369 are both 235522; 61331809 and
	// 61331811 are both 768734, and 61331810 is another code.
	const (
		adjA, adjB = int64(62075368), int64(62075369)
		adjCode    = "235522"
		gapA, gapB = int64(61331809), int64(61331811)
		gapCode    = "768734"
	)
	other := bytes.Repeat([]byte{0x42}, domain.TOTPSecretSize)
	cases := []struct {
		name     string
		secret   []byte
		code     string
		now      time.Time
		after    int64
		wantStep int64
		wantOK   bool
	}{
		{"current_step", rfcSecret, "005924", time.Unix(1234567890, 0), 0, 41152263, true},
		{"previous_step", rfcSecret, "005924", time.Unix(1234567890+30, 0), 0, 41152263, true},
		{"next_step", rfcSecret, "005924", time.Unix(1234567890-30, 0), 0, 41152263, true},
		{"two_steps_late", rfcSecret, "005924", time.Unix(1234567890+60, 0), 0, 0, false},
		{"two_steps_early", rfcSecret, "005924", time.Unix(1234567890-60, 0), 0, 0, false},
		{"last_second_of_the_window", rfcSecret, "005924", step(41152264).Add(29 * time.Second), 0, 41152263, true},
		{"first_second_past_the_window", rfcSecret, "005924", step(41152265), 0, 0, false},
		{"after_excludes_the_step", rfcSecret, "005924", time.Unix(1234567890, 0), 41152263, 0, false},
		{"after_excludes_a_later_step", rfcSecret, "005924", time.Unix(1234567890, 0), 41152264, 0, false},
		{"after_the_step_before", rfcSecret, "005924", time.Unix(1234567890, 0), 41152262, 41152263, true},
		{"latest_of_two_adjacent", rfcSecret, adjCode, step(adjA), 0, adjB, true},
		{"latest_of_two_adjacent_at_the_second", rfcSecret, adjCode, step(adjB), 0, adjB, true},
		{"latest_of_two_around_now", rfcSecret, gapCode, step(gapA + 1), 0, gapB, true},
		{"earlier_of_two_excluded", rfcSecret, gapCode, step(gapA + 1), gapA, gapB, true},
		{"both_of_two_excluded", rfcSecret, gapCode, step(gapA + 1), gapB, 0, false},
		{"wrong_code", rfcSecret, "005925", time.Unix(1234567890, 0), 0, 0, false},
		{"another_users_secret", other, "005924", time.Unix(1234567890, 0), 0, 0, false},
		{"no_secret", nil, "005924", time.Unix(1234567890, 0), 0, 0, false},
		{"five_digits", rfcSecret, "05924", time.Unix(1234567890, 0), 0, 0, false},
		{"seven_digits", rfcSecret, "0059240", time.Unix(1234567890, 0), 0, 0, false},
		{"eight_digit_rfc_form", rfcSecret, "89005924", time.Unix(1234567890, 0), 0, 0, false},
		{"empty", rfcSecret, "", time.Unix(1234567890, 0), 0, 0, false},
		{"leading_space", rfcSecret, " 005924", time.Unix(1234567890, 0), 0, 0, false},
		{"trailing_space", rfcSecret, "005924 ", time.Unix(1234567890, 0), 0, 0, false},
		{"inner_space", rfcSecret, "005 924", time.Unix(1234567890, 0), 0, 0, false},
		{"trailing_newline", rfcSecret, "005924\n", time.Unix(1234567890, 0), 0, 0, false},
		{"sign", rfcSecret, "+05924", time.Unix(1234567890, 0), 0, 0, false},
		{"letter", rfcSecret, "00592a", time.Unix(1234567890, 0), 0, 0, false},
		{"fullwidth_digits", rfcSecret, "００５９２４", time.Unix(1234567890, 0), 0, 0, false},
		{"before_1970", rfcSecret, "287082", time.Unix(-31, 0), 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, ok := o.Match(c.secret, c.code, c.now, c.after)
			if got != c.wantStep || ok != c.wantOK {
				t.Errorf("Match(%q, now %d, after %d) = %d, %v; want %d, %v",
					c.code, domain.TOTPStep(c.now), c.after, got, ok, c.wantStep, c.wantOK)
			}
		})
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	seq := make([]byte, domain.TOTPSecretSize)
	for i := range seq {
		seq[i] = byte(i)
	}
	o, err := totp.New("Example Shop", bytes.NewReader(seq))
	if err != nil {
		t.Fatal(err)
	}
	secret, encoded, uri, err := o.NewSecret("ada+mfa@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(secret, seq) {
		t.Errorf("secret = %x, want the reader's %x", secret, seq)
	}
	// Python: base64.b32encode(bytes(range(20))).
	if want := "AAAQEAYEAUDAOCAJBIFQYDIOB4IBCEQT"; encoded != want {
		t.Errorf("encoded = %q, want %q", encoded, want)
	}
	want := "otpauth://totp/Example%20Shop:ada+mfa@example.com?algorithm=SHA1&digits=6&issuer=Example%20Shop&period=30&secret=AAAQEAYEAUDAOCAJBIFQYDIOB4IBCEQT"
	if uri != want {
		t.Errorf("uri =\n%s\nwant\n%s", uri, want)
	}
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Scheme != "otpauth" || u.Host != "totp" || u.Path != "/Example Shop:ada+mfa@example.com" ||
		q.Get("issuer") != "Example Shop" || q.Get("secret") != encoded {
		t.Errorf("uri parts: %s %s %q %v", u.Scheme, u.Host, u.Path, q)
	}
}

// TestNewSecret_uri_parses_back: the issuer and the account of the URI
// read back as they were given, whatever characters they hold.
func TestNewSecret_uri_parses_back(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ issuer, account string }{
		{"userd", "ada@example.com"},
		{"Bäckerei Müller, Söhne / Kundenkonto (EU) 100%", "ada@example.com"},
		{"A=B #1 ?", "ada@example.com"},
		{"userd", `a&b+c?d#e%f;g=h/i:j"k l@example.com`},
		{"userd", "ådå@exämple.com"},
	} {
		o, err := totp.New(c.issuer, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, encoded, uri, err := o.NewSecret(c.account)
		if err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(uri)
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			t.Fatalf("%s: query: %v", uri, err)
		}
		if want := "/" + c.issuer + ":" + c.account; u.Path != want {
			t.Errorf("%s: label %q, want %q", uri, u.Path, want)
		}
		if len(q) != 5 || q.Get("issuer") != c.issuer || q.Get("secret") != encoded {
			t.Errorf("%s: query %q, want issuer %q and secret %s", uri, q, c.issuer, encoded)
		}
	}
}

func TestNewSecret_random(t *testing.T) {
	t.Parallel()
	o := newOTP(t)
	seen := map[string]bool{}
	for range 50 {
		secret, encoded, uri, err := o.NewSecret("ada@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if len(secret) != domain.TOTPSecretSize {
			t.Fatalf("secret of %d bytes", len(secret))
		}
		if len(encoded) != 32 || strings.Contains(encoded, "=") {
			t.Fatalf("encoded %q: want 32 base32 characters, no padding", encoded)
		}
		raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(encoded)
		if err != nil || !bytes.Equal(raw, secret) {
			t.Fatalf("encoded %q is not the secret %x: %v", encoded, secret, err)
		}
		if !strings.HasPrefix(uri, "otpauth://totp/userd:ada@example.com?") || !strings.Contains(uri, "secret="+encoded) {
			t.Fatalf("uri %q", uri)
		}
		if seen[encoded] {
			t.Fatalf("secret %q twice", encoded)
		}
		seen[encoded] = true
	}
}

func TestNewSecret_errors(t *testing.T) {
	t.Parallel()
	broken := errors.New("entropy gone")
	o, err := totp.New("userd", iotest.ErrReader(broken))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := o.NewSecret("ada@example.com"); !errors.Is(err, broken) {
		t.Errorf("a failing reader: err = %v, want %v", err, broken)
	}
	if _, _, _, err := newOTP(t).NewSecret(""); err == nil {
		t.Error("an empty account name: no error")
	}
}

func TestNew_refuses_bad_issuers(t *testing.T) {
	t.Parallel()
	for _, issuer := range []string{"", "  ", "Example:Shop", "Müller & Söhne", "A;B", "A+B"} {
		if _, err := totp.New(issuer, nil); err == nil {
			t.Errorf("New(%q): no error", issuer)
		}
	}
}

// TestMatch_cost keeps the check far below the 2 ms the second step of a
// login may spend on it, even under the race detector on a loaded machine.
func TestMatch_cost(t *testing.T) {
	t.Parallel()
	o := newOTP(t)
	now := time.Now()
	const n = 200
	start := time.Now()
	for range n {
		o.Match(rfcSecret, "000000", now, 0)
	}
	if per := time.Since(start) / n; per > 500*time.Microsecond {
		t.Errorf("Match takes %v a call; the budget is well under 2 ms", per)
	}
}

// BenchmarkMatch measures the worst case: a wrong code, all three steps
// computed and compared.
func BenchmarkMatch(b *testing.B) {
	o := newOTP(b)
	now := time.Unix(1234567890, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := o.Match(rfcSecret, "123456", now, 0); ok {
			b.Fatal("a wrong code matched")
		}
	}
}
