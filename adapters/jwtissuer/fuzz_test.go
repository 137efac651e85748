package jwtissuer

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/userd/userd/adapters/clock"
)

// FuzzVerify feeds Verify arbitrary token strings, and tokens built from
// arbitrary header and claims JSON that are either genuinely signed by the
// issuer's key or carry arbitrary signature bytes. Verify must never panic,
// never accept a token it did not sign, and accept a token it signed only
// when header and claims obey every rule.
//
//	go test -run '^$' -fuzz FuzzVerify -fuzztime 20s ./adapters/jwtissuer
func FuzzVerify(f *testing.F) {
	var issuers []*Issuer
	var genuine []string // tokens issued below: the only raw strings that may verify
	for _, alg := range allAlgorithms {
		iss := startIssuer(f, newFakeKeyStore(), clock.NewManual(t0), optsFor(alg))
		issuers = append(issuers, iss)
		genuine = append(genuine, issue(f, iss))
	}

	valid := mustJSON(f, validClaims())
	for n, iss := range issuers {
		kid := signer(iss).kid
		alg := uint8(n)
		header := mustJSON(f, map[string]any{"alg": iss.opts.Algorithm, "kid": kid, "typ": TokenType})
		f.Add(alg, genuine[n], header, valid, []byte(nil), true)
		f.Add(alg, genuine[n][:len(genuine[n])-2], mustJSON(f, map[string]any{"alg": "none", "kid": kid}), valid, []byte(nil), false)
		f.Add(alg, "a.b.c", mustJSON(f, map[string]any{"alg": "HS256", "kid": kid}), valid, []byte("sig"), false)
		f.Add(alg, "", mustJSON(f, map[string]any{"alg": iss.opts.Algorithm, "kid": kid, "jku": "https://x"}), valid, []byte(nil), true)
		f.Add(alg, "..", header, mustJSON(f, map[string]any{"aud": []string{"userd-api"}, "iss": "userd", "exp": 1e300}), []byte(nil), true)
		f.Add(alg, "", mustJSON(f, map[string]any{"alg": iss.opts.Algorithm, "kid": kid, "typ": "JWT"}), valid, []byte(nil), true)
		f.Add(alg, "", mustJSON(f, map[string]any{"alg": iss.opts.Algorithm, "kid": kid, "typ": "Application/AT+JWT"}), valid, []byte(nil), true)
		long := validClaims()
		long["exp"] = t0.Add(10 * 365 * 24 * time.Hour).Unix()
		f.Add(alg, "", header, mustJSON(f, long), []byte(nil), true)
		f.Add(alg, strings.Repeat(".", 5), mustJSON(f, map[string]any{"alg": iss.opts.Algorithm, "kid": map[string]any{"x": 1}}), []byte(`{"exp":"1","nbf":null}`), []byte{0}, true)
		f.Add(alg, genuine[n]+"=", []byte(`{"alg":"none","alg":"`+iss.opts.Algorithm+`","kid":"`+kid+`"}`), []byte(`[]`), []byte(nil), true)
	}

	f.Fuzz(func(t *testing.T, alg uint8, raw string, header, payload, sig []byte, sign bool) {
		iss := issuers[int(alg)%len(issuers)]
		ctx := context.Background()

		if _, err := iss.Verify(ctx, raw); err == nil && !slices.Contains(genuine, raw) {
			t.Fatalf("accepted a token string it never issued: %q", raw)
		}

		token := fuzzToken(t, iss, header, payload, sig, sign)
		if _, err := iss.Verify(ctx, token); err != nil {
			return
		}
		if !sign {
			t.Fatalf("accepted a token with a signature it did not make: header %q claims %q", header, payload)
		}
		// Genuinely signed and accepted: it must obey every rule.
		var h map[string]any
		if err := json.Unmarshal(header, &h); err != nil {
			t.Fatalf("accepted a header that is not a JSON object: %q", header)
		}
		if h["alg"] != iss.opts.Algorithm || h["kid"] != signer(iss).kid {
			t.Fatalf("accepted header %q", header)
		}
		for _, name := range forbiddenHeaders {
			if _, ok := h[name]; ok {
				t.Fatalf("accepted header %q with %s", header, name)
			}
		}
		if typ, _ := h["typ"].(string); !strings.EqualFold(typ, TokenType) && !strings.EqualFold(typ, "application/at+jwt") {
			t.Fatalf("accepted header %q: typ is not at+jwt", header)
		}
		// Claims are read as Verify reads them (encoding/json matches
		// member names case-insensitively, which is harmless in a token
		// only we can sign).
		var c claims
		if err := json.Unmarshal(payload, &c); err != nil {
			t.Fatalf("accepted claims that do not decode: %q", payload)
		}
		now := iss.clock.Now()
		switch {
		case c.Issuer != iss.opts.Issuer, c.Audience != iss.opts.Audience:
			t.Fatalf("accepted iss/aud of claims %q", payload)
		case c.ExpiresAt == nil, c.NotBefore == nil, c.IssuedAt == nil:
			t.Fatalf("accepted claims without exp, nbf or iat: %q", payload)
		case !now.Before(c.ExpiresAt.Add(iss.opts.Leeway)), now.Add(iss.opts.Leeway).Before(c.NotBefore.Time):
			t.Fatalf("accepted claims outside their validity: %q", payload)
		case c.ExpiresAt.Sub(c.IssuedAt.Time) > iss.opts.TTL+iss.opts.Leeway:
			t.Fatalf("accepted claims that live longer than the TTL: %q", payload)
		}
	})
}

// FuzzParseOwn holds parseOwn to parseJWT, golang-jwt's parse, on
// tokens built from arbitrary header and claims JSON, genuinely signed
// or not. The seeds carry the very header a key of ours writes, which
// parseOwn reads; the fuzzer varies the claims and the signature around
// it. A token parseOwn accepts, parseJWT accepts with the same claims
// and kid; one parseOwn refuses, parseJWT refuses for its signature.
//
//	go test -run '^$' -fuzz FuzzParseOwn -fuzztime 20s ./adapters/jwtissuer
func FuzzParseOwn(f *testing.F) {
	var issuers []*Issuer
	for _, alg := range allAlgorithms {
		issuers = append(issuers, startIssuer(f, newFakeKeyStore(), clock.NewManual(t0), optsFor(alg)))
	}
	for n, iss := range issuers {
		own, err := base64.RawURLEncoding.DecodeString(signer(iss).header)
		if err != nil {
			f.Fatal(err)
		}
		alg := uint8(n)
		f.Add(alg, own, mustJSON(f, validClaims()), []byte(nil), true)
		f.Add(alg, own, mustJSON(f, validClaims()), []byte("not a signature"), false)
		expired := claimsAt(t0.Add(-time.Hour))
		f.Add(alg, own, mustJSON(f, expired), []byte(nil), true)
		f.Add(alg, own, []byte(`{"exp":"1","nbf":null}`), []byte(nil), true)
		f.Add(alg, own, []byte(`{"sub":"x","profiles":["ROLE_USER"],"EXP":1e300}`), []byte(nil), true)
		f.Add(alg, append(own, ' '), mustJSON(f, validClaims()), []byte(nil), true)
	}
	f.Fuzz(func(t *testing.T, alg uint8, header, payload, sig []byte, sign bool) {
		iss := issuers[int(alg)%len(issuers)]
		token := fuzzToken(t, iss, header, payload, sig, sign)
		own, ownKID, decided, ownErr := iss.parseOwn(token, iss.clock.Now())
		if !decided {
			return
		}
		lib, libKID, libErr := iss.parseJWT(context.Background(), token)
		switch {
		case ownErr == nil && libErr != nil:
			t.Fatalf("parseOwn accepted what golang-jwt refuses (%v): header %q claims %q", libErr, header, payload)
		case ownErr == nil && (!reflect.DeepEqual(own, lib) || ownKID != libKID):
			t.Fatalf("parseOwn read %+v (kid %q), golang-jwt %+v (kid %q)", own, ownKID, lib, libKID)
		case ownErr != nil && !errors.Is(libErr, jwt.ErrTokenSignatureInvalid):
			t.Fatalf("parseOwn refused the signature (%v), golang-jwt says %v", ownErr, libErr)
		case ownErr != nil && !errors.Is(ownErr, jwt.ErrTokenSignatureInvalid):
			t.Fatalf("parseOwn refused with %v", ownErr)
		}
	})
}

// fuzzToken is the token of header and payload with sig, or, when sign
// is set, with the signature of iss's signing key.
func fuzzToken(t *testing.T, iss *Issuer, header, payload, sig []byte, sign bool) string {
	t.Helper()
	signing := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload)
	if sign {
		s, err := iss.alg.method.Sign(signing, signer(iss).sign)
		if err != nil {
			t.Fatal(err)
		}
		sig = s
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// FuzzDecodeOwnClaims holds decodeOwnClaims to json.Unmarshal: what it
// accepts, json.Unmarshal reads to the same claims.
//
//	go test -run '^$' -fuzz FuzzDecodeOwnClaims -fuzztime 20s ./adapters/jwtissuer
func FuzzDecodeOwnClaims(f *testing.F) {
	iss, _, _ := newIssuerFor(f, EdDSA)
	token := issue(f, iss)
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(payload)
	for _, seed := range []string{
		`{}`, `{"profiles":[],"amr":[]}`, `{"sub":"a","sub":"b"}`, `{"SUB":"a"}`, `{"sub":"a\u0062"}`,
		`{"exp":1.5}`, `{"exp":1e3}`, `{"exp":0123}`, `{"exp":-1}`, `{"exp":0}`, `{"exp":999999999999999}`,
		`{"exp":9999999999999999}`, `{"exp":"1"}`, `{"exp":null}`, `{"sid":null}`, `{ "iss":"x"}`, `{"iss":"x"} `,
		`{"iss":"é"}`, `{"aud":["x"]}`, `{"profiles":["a","b"]}`, `{"profiles":["a",]}`, `{"x":1}`, `{"iss":"x",}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		own, ok := decodeOwnClaims(b)
		if !ok {
			return
		}
		var lib claims
		if err := json.Unmarshal(b, &lib); err != nil {
			t.Fatalf("decodeOwnClaims read %q, json.Unmarshal refuses it: %v", b, err)
		}
		if !reflect.DeepEqual(own, lib) {
			t.Fatalf("%q: decodeOwnClaims read %+v, json.Unmarshal %+v", b, own, lib)
		}
	})
}

// mustJSON is v as json.Marshal writes it.
func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
