package domain_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

// userIDPattern is the id syntax written as a regular expression, an
// oracle independent of ParseUserID's loop.
var userIDPattern = regexp.MustCompile(`\A[0-9a-f]{24}\z`)

// FuzzParseUserID: an id is accepted exactly when it is 24 lowercase
// hexadecimal characters, and then returned unchanged; anything else is
// ErrInvalidID and an empty id.
func FuzzParseUserID(f *testing.F) {
	for _, seed := range []string{
		"6740f1c2a1b2c3d4e5f60718",
		"000000000000000000000000",
		"ffffffffffffffffffffffff",
		"6740F1C2A1B2C3D4E5F60718",
		"6740f1c2a1b2c3d4e5f6071",
		"6740f1c2a1b2c3d4e5f607189",
		"6740f1c2a1b2c3d4e5f6071g",
		"6740f1c2a1b2c3d4e5f6071\x00",
		"6740f1c2a1b2c3d4e5f607\u00e9",
		" 6740f1c2a1b2c3d4e5f6071",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := domain.ParseUserID(s)
		want := userIDPattern.MatchString(s)
		if (err == nil) != want {
			t.Fatalf("ParseUserID(%q) = %q, %v; want accepted=%v", s, id, err, want)
		}
		if err != nil {
			if !errors.Is(err, domain.ErrInvalidID) || id != "" {
				t.Fatalf("ParseUserID(%q) = %q, %v; want \"\", ErrInvalidID", s, id, err)
			}
			return
		}
		if string(id) != s || id.String() != s {
			t.Fatalf("ParseUserID(%q) = %q, want the input unchanged", s, id)
		}
	})
}

// emailPattern is the accepted address syntax (after trimming and
// lower-casing) as a regular expression: a dot-atom local part and a
// domain of letter-digit-hyphen labels not starting or ending with a
// hyphen. The lengths are checked beside it.
var emailPattern = regexp.MustCompile(`\A` +
	"[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*" +
	`@` +
	`[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*` +
	`\z`)

// emailOracle reports whether ParseEmail should accept the normalised e.
func emailOracle(e string) bool {
	if len(e) > domain.EmailMaxLen || !emailPattern.MatchString(e) {
		return false
	}
	at := strings.LastIndexByte(e, '@')
	if at > 64 {
		return false
	}
	for _, label := range strings.Split(e[at+1:], ".") {
		if len(label) > 63 {
			return false
		}
	}
	return true
}

// FuzzParseEmail: ParseEmail never panics; it accepts s exactly when its
// normalised form (NormalizeEmail) is a bare addr-spec as documented, and
// then returns that form: printable ASCII without spaces, at most 254
// bytes, lower-case, which ParseEmail and NormalizeEmail return unchanged.
// A refusal has a message and an empty email.
func FuzzParseEmail(f *testing.F) {
	for _, seed := range []string{
		"ada@example.com",
		"  Ada.Lovelace+tag@Example.COM  ",
		"a@b",
		"o'brien@example.ie",
		"!#$%&'*+-/=?^_`{|}~@example.com",
		"a.@example.com",
		".a@example.com",
		"a..b@example.com",
		"a@-example.com",
		"a@example-.com",
		"a@example..com",
		"a@b@example.com",
		"\"quoted\"@example.com",
		"Ada <ada@example.com>",
		"ada@exa_mple.com",
		"ada@example.com.",
		"ada@\u212aelvin.com",
		"\u0130stanbul@example.com",
		"ada@ex\u00e4mple.com",
		"ada\x00@example.com",
		"\u00a0ada@example.com\u0085",
		strings.Repeat("a", 64) + "@example.com",
		strings.Repeat("a", 65) + "@example.com",
		"a@" + strings.Repeat("b", 63) + ".com",
		"a@" + strings.Repeat("b", 64) + ".com",
		strings.Repeat("a", 64) + "@" + strings.Repeat(strings.Repeat("b", 62)+".", 3) + "cc",
		"",
		"@",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, msg := domain.ParseEmail(s)
		normalized := string(domain.NormalizeEmail(s))
		want := emailOracle(normalized)
		if (msg == "") != want {
			t.Fatalf("ParseEmail(%q) = %q, %q; want accepted=%v (normalised %q)", s, e, msg, want, normalized)
		}
		if msg != "" {
			if e != "" {
				t.Fatalf("ParseEmail(%q) refused (%q) but returned %q", s, msg, e)
			}
			return
		}
		str := e.String()
		if str == "" || len(str) > domain.EmailMaxLen {
			t.Fatalf("ParseEmail(%q) = %q: length %d", s, e, len(str))
		}
		for i := 0; i < len(str); i++ {
			if c := str[i]; c <= ' ' || c > '~' {
				t.Fatalf("ParseEmail(%q) = %q: byte %#x at %d is not printable ASCII", s, e, c, i)
			}
		}
		if strings.ToLower(str) != str {
			t.Fatalf("ParseEmail(%q) = %q: not lower-case", s, e)
		}
		if str != normalized {
			t.Fatalf("ParseEmail(%q) = %q, but NormalizeEmail gives %q: lookups would miss it", s, e, normalized)
		}
		if again, msg := domain.ParseEmail(str); again != e || msg != "" {
			t.Fatalf("ParseEmail(%q) = %q, %q; want it unchanged", str, again, msg)
		}
		if again := domain.NormalizeEmail(str); again != e {
			t.Fatalf("NormalizeEmail(%q) = %q; want it unchanged", str, again)
		}
	})
}

// FuzzParseMetadata: whatever is accepted is a JSON object within the
// limits whose canonical form parses back to itself and means the same
// as the input; whatever is refused has a message and the empty value.
func FuzzParseMetadata(f *testing.F) {
	for _, seed := range []string{`{}`, ` {"b":1,"a":[true,null,"x"]} `, `{"a":{"b":{"c":1e5}}}`, `{"a":"\u2028<>&"}`,
		`{"a":1,"a":2}`, `[]`, `null`, `"s"`, `{"a":}`, "{\"\xff\":1}", `{"n":-0.0}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, msg := domain.ParseMetadata(raw, domain.MetadataMaxBytes)
		if msg != "" {
			if !m.IsEmpty() {
				t.Fatalf("ParseMetadata(%q) refused (%s) but returned %s", raw, msg, m)
			}
			return
		}
		s := m.String()
		if len(s) > domain.MetadataMaxBytes || !json.Valid([]byte(s)) || s[0] != '{' {
			t.Fatalf("ParseMetadata(%q) = %s: not an object within the limit", raw, s)
		}
		again, msg := domain.ParseMetadata([]byte(s), domain.MetadataMaxBytes)
		if msg != "" || again.String() != s {
			t.Fatalf("canonical %s parses to %s (%s): want itself", s, again, msg)
		}
		var in, out any
		if json.Unmarshal(raw, &in) != nil || json.Unmarshal([]byte(s), &out) != nil || !reflect.DeepEqual(in, out) {
			t.Fatalf("ParseMetadata(%q) = %s: not the same JSON", raw, s)
		}
	})
}
