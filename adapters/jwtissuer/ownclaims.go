package jwtissuer

import (
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// decodeOwnClaims decodes the claims of a token in the one shape Issue
// writes them: an object of the claims type's own members, each once,
// with no white space; strings of printable ASCII with no escape; times
// as whole seconds; profiles and amr as arrays of such strings. It is
// false for anything else (a hook's extra claims, an escape, a
// fraction, a null, another member), which json.Unmarshal then reads.
// What it accepts, json.Unmarshal reads to the same claims
// (FuzzDecodeOwnClaims); it costs a fifth of it, without reflection or
// golang-jwt's NumericDate, which decodes each time with a
// json.Unmarshal of its own (docs/performance.md, "Speed, sixth pass").
func decodeOwnClaims(b []byte) (claims, bool) {
	d := ownClaimsDecoder{b: b}
	var c claims
	if !d.next('{') {
		return claims{}, false
	}
	if d.next('}') {
		return c, d.i == len(d.b)
	}
	var seen uint16
	for {
		key, ok := d.span()
		if !ok || !d.next(':') {
			return claims{}, false
		}
		var bit uint16
		switch string(key) { // compared, not copied
		case "iss":
			bit = 1 << 0
			c.Issuer, ok = d.str()
		case "sub":
			bit = 1 << 1
			c.Subject, ok = d.str()
		case "aud":
			bit = 1 << 2
			c.Audience, ok = d.str()
		case "exp":
			bit = 1 << 3
			c.ExpiresAt, ok = d.date()
		case "nbf":
			bit = 1 << 4
			c.NotBefore, ok = d.date()
		case "iat":
			bit = 1 << 5
			c.IssuedAt, ok = d.date()
		case "jti":
			bit = 1 << 6
			c.ID, ok = d.str()
		case "profiles":
			bit = 1 << 7
			c.Profiles, ok = d.strs()
		case "sid":
			bit = 1 << 8
			c.SessionID, ok = d.str()
		case "auth_time":
			bit = 1 << 9
			c.AuthTime, ok = d.date()
		case "amr":
			bit = 1 << 10
			c.AMR, ok = d.strs()
		case "acr":
			bit = 1 << 11
			c.ACR, ok = d.str()
		default:
			return claims{}, false
		}
		if !ok || seen&bit != 0 {
			return claims{}, false
		}
		seen |= bit
		if d.next(',') {
			continue
		}
		if d.next('}') {
			return c, d.i == len(d.b)
		}
		return claims{}, false
	}
}

// ownClaimsDecoder reads b from i on.
type ownClaimsDecoder struct {
	b []byte
	i int
}

// next consumes c when it comes next.
func (d *ownClaimsDecoder) next(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// span reads a string of printable ASCII, without an escape, and returns
// its bytes.
func (d *ownClaimsDecoder) span() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	start := d.i
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			return s, true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

func (d *ownClaimsDecoder) str() (string, bool) {
	s, ok := d.span()
	if !ok {
		return "", false
	}
	return string(s), true
}

// strs reads an array of strings; an empty one is empty, not nil, as
// json.Unmarshal makes it.
func (d *ownClaimsDecoder) strs() ([]string, bool) {
	if !d.next('[') {
		return nil, false
	}
	out := []string{}
	if d.next(']') {
		return out, true
	}
	for {
		s, ok := d.str()
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if d.next(',') {
			continue
		}
		return out, d.next(']')
	}
}

// maxDateDigits bounds a time's digits: 15 keep it exact as a float64,
// as golang-jwt reads it, and within time.Unix's range.
const maxDateDigits = 15

// date reads whole seconds, not negative, without a leading zero, as
// jwt.NumericDate would read them.
func (d *ownClaimsDecoder) date() (*jwt.NumericDate, bool) {
	start := d.i
	var n int64
	for ; d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9'; d.i++ {
		n = n*10 + int64(d.b[d.i]-'0')
	}
	digits := d.i - start
	if digits == 0 || digits > maxDateDigits || digits > 1 && d.b[start] == '0' {
		return nil, false
	}
	// A fraction or an exponent is left to json.Unmarshal.
	if d.i < len(d.b) && (d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		return nil, false
	}
	return jwt.NewNumericDate(time.Unix(n, 0)), true
}
