package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// decodeTargets are the request DTOs decodeJSON fills, each as a function
// returning a fresh pointer to its zero value.
var decodeTargets = map[string]func() any{
	"create":  func() any { return new(createUserRequest) },
	"update":  func() any { return new(updateUserRequest) },
	"login":   func() any { return new(loginRequest) },
	"refresh": func() any { return new(refreshRequest) },
}

// fuzzMaxBody is the body limit of FuzzDecodeJSON: small, so that the
// fuzzer reaches it, and the default would behave the same.
const fuzzMaxBody = 1 << 10

// decodeBody runs decodeJSON on body behind the body limit, as apiHeaders
// sets it up.
func decodeBody(body []byte, limit int64, dst any) error {
	r := &http.Request{Method: http.MethodPost}
	r.Body = http.MaxBytesReader(nil, io.NopCloser(bytes.NewReader(body)), limit)
	return decodeJSON(r, dst)
}

// topLevelKeys returns the keys of the JSON object in body in order,
// repeats included, or ok false when body is not one valid JSON object.
func topLevelKeys(body []byte) (keys []string, ok bool) {
	if !json.Valid(body) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, false
		}
	}
	return keys, true
}

// FuzzDecodeJSON feeds arbitrary bodies to the strict decoder for every
// request DTO. It never panics, and:
//   - it fails with exactly one of malformed_json and unknown_field (400),
//     or payload_too_large (413) when, and only when, the body is over the
//     limit;
//   - what encoding/json finds invalid is never accepted;
//   - an accepted body is one object whose keys are all documented names,
//     spelled exactly, each once, and encoding/json reads the same value
//     from it;
//   - a valid object with only documented keys, each once, that
//     encoding/json can read into the DTO is accepted;
//   - unknown_field names a key the valid object really has and the DTO
//     does not;
//   - an accepted value, encoded again, decodes to the same value.
func FuzzDecodeJSON(f *testing.F) {
	for _, seed := range []string{
		`{"name":"Ada","email":"ada@example.com","password":"analytical engine","profiles":["ROLE_CUSTOMER"]}`,
		`{"name":"Grace","email":"g@example.com","password":"compiler pioneer","role":"ADMIN"}`,
		`{"id":"0123456789abcdef01234567","name":"Ada","email":"a@b.c","password":"x","profiles":[],"currentPassword":"y"}`,
		`{"email":"ada@example.com","password":"analytical engine"}`,
		`{"refreshToken":"2f1c1a3e-5b6d-4c7e-8f90-a1b2c3d4e5f6"}`,
		`{"email":null,"password":null,"profiles":null}`,
		`{"em\u0061il":"x"}`,
		`{"EMAIL":"x"}`,
		`{"email":"a","email":"b"}`,
		`{"email":"a","em\u0061il":"b"}`,
		`{"profiles":["a",null,1]}`,
		`{"profiles":{"a":1}}`,
		`{"password":12}`,
		`{"email":"\ud800"}`,
		`{"email":"x"} {}`,
		`{"email":"x"}garbage`,
		`{"metadata": { "b" : "<&>", "a": [ 1 ] }, "appMetadata":null}`,
		`{"metadata":"\u003c","appMetadata":[]}`,
		`[]`, `null`, `""`, ``, ` `, `{`, `{"email"}`, `{"email":}`, `{,}`, `{"a":1,}`,
		"\xef\xbb\xbf{}",
		`{"name":"` + strings.Repeat("x", fuzzMaxBody) + `"}`,
	} {
		f.Add([]byte(seed))
	}

	f.Fuzz(func(t *testing.T, body []byte) {
		for name, fresh := range decodeTargets {
			dst := fresh()
			err := decodeBody(body, fuzzMaxBody, dst)

			// Only the documented errors, and 413 exactly when over the limit.
			var maxBytes *http.MaxBytesError
			if len(body) > fuzzMaxBody {
				if !errors.As(err, &maxBytes) {
					t.Fatalf("%s: %d-byte body over the %d-byte limit: err = %v, want payload_too_large", name, len(body), fuzzMaxBody, err)
				}
				continue
			}
			if errors.As(err, &maxBytes) {
				t.Fatalf("%s: %d-byte body within the limit: payload_too_large", name, len(body))
			}
			keys, isObject := topLevelKeys(body)
			if err != nil {
				p, ok := problemOf(err)
				if !ok || p.Status != http.StatusBadRequest || (p.Code != "malformed_json" && p.Code != "unknown_field") || p.Detail == "" {
					t.Fatalf("%s: unexpected error %v (problem %+v, mapped %v)", name, err, p, ok)
				}
				if p.Code == "unknown_field" && isObject && !hasUnknownKey(keys, jsonFields(dst)) {
					t.Fatalf("%s: unknown_field for %q whose keys %q are all known", name, body, keys)
				}
				if isObject && !hasUnknownKey(keys, jsonFields(dst)) && !hasRepeat(keys) &&
					json.Unmarshal(body, fresh()) == nil {
					t.Fatalf("%s: %q refused (%v) though encoding/json reads it and its keys are known and distinct", name, body, err)
				}
				continue
			}

			// Accepted.
			if !isObject {
				t.Fatalf("%s: accepted %q, which is not one valid JSON object", name, body)
			}
			if hasUnknownKey(keys, jsonFields(dst)) || hasRepeat(keys) {
				t.Fatalf("%s: accepted %q with keys %q", name, body, keys)
			}
			lenient := fresh()
			if err := json.Unmarshal(body, lenient); err != nil {
				t.Fatalf("%s: accepted %q, which encoding/json refuses: %v", name, body, err)
			}
			if !reflect.DeepEqual(dst, lenient) {
				t.Fatalf("%s: %q decoded as %+v, encoding/json reads %+v", name, body, dst, lenient)
			}

			// Round trip.
			enc, err := json.Marshal(dst)
			if err != nil {
				t.Fatalf("%s: re-encode %+v: %v", name, dst, err)
			}
			again := fresh()
			if err := decodeBody(enc, int64(len(enc))+1, again); err != nil {
				t.Fatalf("%s: re-encoded %s refused: %v", name, enc, err)
			}
			if !reflect.DeepEqual(dst, again) {
				t.Fatalf("%s: %q decoded as %+v, re-encoded as %s, decoded again as %+v", name, body, dst, enc, again)
			}
		}
	})
}

func hasUnknownKey(keys []string, known map[string]bool) bool {
	for _, k := range keys {
		if !known[k] {
			return true
		}
	}
	return false
}

func hasRepeat(keys []string) bool {
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// FuzzBearerToken checks the reading of the Authorization header. It never
// panics, and:
//   - it returns a token or a challenge, never both or neither, and the
//     challenge is one of the three of RFC 6750 that we send;
//   - a second Authorization value is always invalid_request;
//   - an accepted token is a non-empty RFC 6750 b64token (so it has no
//     space, control or non-ASCII byte) and is what follows "Bearer" and
//     spaces in the header;
//   - the scheme is "Bearer" in any ASCII letter case, and only that: a
//     value not starting with it (after surrounding spaces) gets the plain
//     Bearer challenge, and changing the scheme's case changes nothing;
//   - "Bearer <t>" yields t for every b64token t, whatever the spacing.
func FuzzBearerToken(f *testing.F) {
	const jwt = "eyJhbGciOiJFZERTQSIsImtpZCI6ImsxIiwidHlwIjoiSldUIn0.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"
	for _, seed := range []struct {
		value, second string
		two           bool
	}{
		{"Bearer " + jwt, "", false},
		{"bearer " + jwt, "", false},
		{"BEARER    " + jwt + "  ", "", false},
		{"Bearer " + jwt, "Bearer " + jwt, true},
		{"Bearer", "abc==", false},
		{"Bearer ", "a=b", false},
		{"Bearer a b", "", false},
		{"Bearer\t" + jwt, "", false},
		{"Bearer \x00abc", "", false},
		{"Bearer ab\x7fc", "", false},
		{"Bearer abc==", "", false},
		{"Bearer ==", "", false},
		{"Bearer a=b", "", false},
		{"Bearer tøken", "", false},
		{"Basic cm9vdDpwdw==", "", false},
		{"Bearerx abc", "", false},
		{" Bearer abc ", "", false},
		{"Beare\u212a abc", "", false},
		{"", "", false},
	} {
		f.Add(seed.value, seed.second, seed.two)
	}

	f.Fuzz(func(t *testing.T, value, second string, two bool) {
		values := []string{value}
		if two {
			values = append(values, second)
		}
		token, challenge := bearerToken(values)
		if (token == "") == (challenge == "") {
			t.Fatalf("bearerToken(%q) = %q, %q: want a token or a challenge", values, token, challenge)
		}
		switch challenge {
		case "", challengeBearer, challengeInvalidToken, challengeBadRequest:
		default:
			t.Fatalf("bearerToken(%q): challenge %q", values, challenge)
		}
		if two {
			if challenge != challengeBadRequest {
				t.Fatalf("bearerToken(%q) = %q, %q; want invalid_request for two values", values, token, challenge)
			}
		} else {
			checkSingleValue(t, value, token, challenge)
		}

		// Every b64token is taken as it is, with any spacing and scheme case.
		if isB64TokenOracle(second) {
			for _, v := range []string{"Bearer " + second, "bearer   " + second + " ", "\tBEARER " + second} {
				if got, ch := bearerToken([]string{v}); got != second || ch != "" {
					t.Fatalf("bearerToken(%q) = %q, %q; want %q", v, got, ch, second)
				}
			}
		}
	})
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		values           []string
		token, challenge string
	}{
		{nil, "", challengeBearer},
		{[]string{"Bearer a.b.c"}, "a.b.c", ""},
		{[]string{"bEaReR   a.b.c  "}, "a.b.c", ""},
		{[]string{"Bearer YWJj+/-_~.=="}, "YWJj+/-_~.==", ""},
		{[]string{"Bearer a.b.c", "Bearer a.b.c"}, "", challengeBadRequest},
		{[]string{"Bearer"}, "", challengeBadRequest},
		{[]string{"Bearer  "}, "", challengeBadRequest},
		{[]string{"Basic cm9vdDpwdw=="}, "", challengeBearer},
		{[]string{"Bearer\ta.b.c"}, "", challengeBearer},
		{[]string{"a.b.c"}, "", challengeBearer},
		{[]string{"Bearer a b"}, "", challengeInvalidToken},
		{[]string{"Bearer a\x00b"}, "", challengeInvalidToken},
		{[]string{"Bearer tøken"}, "", challengeInvalidToken},
		{[]string{"Bearer ab=c"}, "", challengeInvalidToken},
		{[]string{"Bearer ==="}, "", challengeInvalidToken},
	} {
		token, challenge := bearerToken(tt.values)
		if token != tt.token || challenge != tt.challenge {
			t.Errorf("bearerToken(%q) = %q, %q; want %q, %q", tt.values, token, challenge, tt.token, tt.challenge)
		}
	}
}

// checkSingleValue checks what bearerToken made of the one header value.
func checkSingleValue(t *testing.T, value, token, challenge string) {
	t.Helper()
	trimmed := strings.TrimSpace(value)
	hasScheme := isBearerASCII(trimmed) && (len(trimmed) == len("Bearer") || trimmed[len("Bearer")] == ' ')
	if !hasScheme && challenge != challengeBearer {
		t.Fatalf("bearerToken(%q) = %q, %q; want the plain Bearer challenge for another scheme", value, token, challenge)
	}
	if hasScheme && challenge == challengeBearer {
		t.Fatalf("bearerToken(%q): asked for a bearer token, but one was sent", value)
	}
	if token != "" {
		if !isB64TokenOracle(token) {
			t.Fatalf("bearerToken(%q) accepted %q, not a b64token", value, token)
		}
		if rest := strings.TrimSpace(trimmed[len("Bearer"):]); rest != token {
			t.Fatalf("bearerToken(%q) = %q, want %q", value, token, rest)
		}
	}
	// The scheme's letter case does not matter.
	if hasScheme {
		for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
			v := scheme + trimmed[6:]
			if tok, ch := bearerToken([]string{v}); tok != token || ch != challenge {
				t.Fatalf("bearerToken(%q) = %q, %q, but bearerToken(%q) = %q, %q", value, token, challenge, v, tok, ch)
			}
		}
	}
}

// isBearerASCII reports whether s starts with "bearer" in any ASCII letter
// case (and only ASCII: no Unicode case folding).
func isBearerASCII(s string) bool {
	const scheme = "bearer"
	if len(s) < len(scheme) {
		return false
	}
	for i := 0; i < len(scheme); i++ {
		if s[i]|0x20 != scheme[i] {
			return false
		}
	}
	return true
}

// isB64TokenOracle is RFC 6750's b64token written another way than
// isB64Token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64TokenOracle(s string) bool {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/"
	i := 0
	for i < len(s) && strings.IndexByte(alphabet, s[i]) >= 0 {
		i++
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}
