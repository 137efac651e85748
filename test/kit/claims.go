package kit

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// Claims are the claims of an access token that the suites read: whose
// it is, its session, and how that session signed in.
type Claims struct {
	Sub      string   `json:"sub"`
	SID      string   `json:"sid"`
	AuthTime int64    `json:"auth_time"`
	AMR      []string `json:"amr"`
	ACR      string   `json:"acr"`
}

// ClaimsOf reads the claims of a JWT. userd checks the signature; the
// test reads what the token says.
func ClaimsOf(t testing.TB, jwt string) Claims {
	t.Helper()
	var c Claims
	DecodePart(t, jwt, 1, &c)
	return c
}

// DecodePart decodes part i of a JWT in the JWS compact serialisation (0
// the header, 1 the claims) into v, failing t when it is not one.
func DecodePart(t testing.TB, jwt string, i int, v any) {
	t.Helper()
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatalf("JWT part %d: %v", i, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("JWT part %d: %v in %s", i, err, b)
	}
}
