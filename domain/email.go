package domain

import "strings"

// Email is a normalised address: trimmed, lower-cased, a bare addr-spec of
// printable ASCII. Two users never share one.
type Email string

// EmailMaxLen is the longest address accepted, in bytes (RFC 5321 path limit).
const EmailMaxLen = 254

// String returns the address.
func (e Email) String() string { return string(e) }

// NormalizeEmail trims ASCII white space from s and lower-cases its ASCII
// letters, without validating it. Lookups by email (login, the ?email=
// filter) use it so that they match what ParseEmail stored. It is ASCII
// only on purpose: Unicode case folding would turn a Kelvin sign (U+212A)
// into "k" and let a non-ASCII string pass for an ASCII address.
func NormalizeEmail(s string) Email {
	s = strings.Trim(s, " \t\r\n\v\f")
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return Email(b)
}

// ParseEmail normalises s and checks that it is a bare addr-spec: a dot-atom
// local part (no quoted strings, comments or display names), '@', and a
// domain of dot-separated letter-digit-hyphen labels. The second result is a
// message for the client when s is not acceptable.
func ParseEmail(s string) (Email, string) {
	e := NormalizeEmail(s)
	if e == "" {
		return "", "must not be empty"
	}
	if len(e) > EmailMaxLen {
		return "", "must be at most 254 bytes"
	}
	for i := 0; i < len(e); i++ {
		if e[i] <= ' ' || e[i] > '~' {
			return "", "must be printable ASCII without spaces"
		}
	}
	at := strings.LastIndexByte(string(e), '@')
	if at < 0 {
		return "", "must contain @"
	}
	local, domain := string(e[:at]), string(e[at+1:])
	if !validLocalPart(local) {
		return "", "has an invalid local part"
	}
	if !validDomain(domain) {
		return "", "has an invalid domain"
	}
	return e, ""
}

// ParseEmailPrefix reads the start of an email, for a search by prefix:
// normalised as NormalizeEmail does, it need not be an email, but it must
// be what the start of a stored one can be, at most EmailMaxLen bytes of
// printable ASCII without spaces. That also keeps bytes no store can
// compare (invalid UTF-8, NUL: PostgreSQL refuses them with an error) out
// of the query. An empty result matches every email. The second result is
// a message for the client when s is not acceptable.
func ParseEmailPrefix(s string) (string, string) {
	p := string(NormalizeEmail(s))
	if len(p) > EmailMaxLen {
		return "", "must be at most 254 bytes"
	}
	for i := 0; i < len(p); i++ {
		if p[i] <= ' ' || p[i] > '~' {
			return "", "must be printable ASCII without spaces"
		}
	}
	return p, ""
}

// validLocalPart accepts an RFC 5322 dot-atom of at most 64 bytes.
func validLocalPart(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, atom := range strings.Split(s, ".") {
		if atom == "" {
			return false
		}
		for i := 0; i < len(atom); i++ {
			if !isAtext(atom[i]) {
				return false
			}
		}
	}
	return true
}

func isAtext(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-/=?^_`{|}~", c) >= 0
}

// validDomain accepts host names made of labels of letters, digits and
// hyphens, 1 to 63 bytes each, not starting or ending with a hyphen.
func validDomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
			if !ok {
				return false
			}
		}
	}
	return true
}
