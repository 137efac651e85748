package jwtissuer

import (
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/userd/userd/domain"
)

// TestEd25519Check_agrees_with_the_standard_library holds parseOwn's
// Ed25519 check (curve25519-voi with its standard-library preset) to
// crypto/ed25519's answer, which golang-jwt's parser gives: on the
// published edge cases (low-order and non-canonical points, S not
// reduced, the cofactored equation), and on genuine signatures, each of
// their bit flips and S + L.
func TestEd25519Check_agrees_with_the_standard_library(t *testing.T) {
	// accepted counts the signatures crypto/ed25519 accepts, so that the
	// edge cases are known to hold both answers.
	accepted := 0
	agree := func(t *testing.T, name string, pub, msg, sig []byte) {
		t.Helper()
		if len(pub) != ed25519.PublicKeySize {
			return // crypto/ed25519 panics; no key of ours has another size
		}
		want := ed25519.Verify(pub, msg, sig)
		if want {
			accepted++
		}
		if got := ed25519Key(pub).checkSignature(jwt.SigningMethodEdDSA, string(msg), sig) == nil; got != want {
			t.Errorf("%s: curve25519-voi says %v, crypto/ed25519 %v", name, got, want)
		}
	}

	t.Run("ed25519vectors", func(t *testing.T) {
		var vectors []struct{ A, R, S, M string }
		readGzipJSON(t, "testdata/ed25519vectors.json.gz", &vectors)
		if len(vectors) < 100 {
			t.Fatalf("%d vectors", len(vectors))
		}
		accepted = 0
		for _, v := range vectors {
			agree(t, "vector "+v.M, unhex(t, v.A), []byte(v.M), append(unhex(t, v.R), unhex(t, v.S)...))
		}
		if accepted == 0 || accepted == len(vectors) {
			t.Fatalf("crypto/ed25519 accepts %d of %d vectors: the edge cases are not both ways", accepted, len(vectors))
		}
	})
	t.Run("speccheck", func(t *testing.T) {
		var cases []struct {
			Message   string `json:"message"`
			PubKey    string `json:"pub_key"`
			Signature string `json:"signature"`
		}
		readGzipJSON(t, "testdata/speccheck_cases.json.gz", &cases)
		if len(cases) != 12 {
			t.Fatalf("%d cases", len(cases))
		}
		accepted = 0
		for n, c := range cases {
			agree(t, fmt.Sprint("case ", n), unhex(t, c.PubKey), unhex(t, c.Message), unhex(t, c.Signature))
		}
		if accepted == 0 || accepted == len(cases) {
			t.Fatalf("crypto/ed25519 accepts %d of %d cases", accepted, len(cases))
		}
	})
	t.Run("genuine_and_altered", func(t *testing.T) {
		// Seeded, so that a failure can be run again; the keys sign nothing.
		rng := rand.New(rand.NewChaCha8([32]byte{1})) //nolint:gosec // G404: test data, not secrets
		order, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
		for range 20 {
			seed := make([]byte, ed25519.SeedSize)
			fill(rng, seed)
			priv := ed25519.NewKeyFromSeed(seed)
			pub := priv.Public().(ed25519.PublicKey)
			msg := make([]byte, rng.IntN(600))
			fill(rng, msg)
			sig := ed25519.Sign(priv, msg)
			if ed25519Key(pub).checkSignature(jwt.SigningMethodEdDSA, string(msg), sig) != nil {
				t.Fatal("a genuine signature refused")
			}
			for bit := range 8 * len(sig) {
				altered := append([]byte(nil), sig...)
				altered[bit/8] ^= 1 << (bit % 8)
				agree(t, "bit flip", pub, msg, altered)
			}
			// S + L, little-endian: the same signature, not reduced.
			s := new(big.Int).SetBytes(reversed(sig[32:]))
			s.Add(s, order)
			if b := s.Bytes(); len(b) <= 32 {
				unreduced := append(append([]byte(nil), sig[:32]...), reversed(leftPad(b, 32))...)
				agree(t, "S + L", pub, msg, unreduced)
			}
			agree(t, "short", pub, msg, sig[:63])
			agree(t, "other message", pub, append(msg, 0), sig)
		}
	})
}

// ed25519Key is an access-token key of EdDSA with the public key pub.
func ed25519Key(pub []byte) verificationKey {
	return verificationKey{verify: ed25519.PublicKey(pub), ed25519: expandEd25519(jwt.SigningMethodEdDSA, ed25519.PublicKey(pub))}
}

func readGzipJSON(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	r, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(r).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// fill fills b from rng, 8 bytes at a time.
func fill(rng *rand.Rand, b []byte) {
	var word [8]byte
	for i := range b {
		if i%8 == 0 {
			binary.LittleEndian.PutUint64(word[:], rng.Uint64())
		}
		b[i] = word[i%8]
	}
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func reversed(b []byte) []byte {
	r := make([]byte, len(b))
	for i, c := range b {
		r[len(b)-1-i] = c
	}
	return r
}

func leftPad(b []byte, n int) []byte {
	return append(make([]byte, n-len(b)), b...)
}

// TestEd25519Sign_agrees_with_the_standard_library holds signature's
// Ed25519 signatures (curve25519-voi's) to crypto/ed25519's, byte for
// byte, over keys and messages of every length up to a few blocks of
// SHA-512; another algorithm's key is golang-jwt's to sign.
func TestEd25519Sign_agrees_with_the_standard_library(t *testing.T) {
	rng := rand.New(rand.NewChaCha8([32]byte{'s', 'i', 'g', 'n'})) //nolint:gosec // G404: test data, not secrets
	for i := range 300 {
		seed := make([]byte, ed25519.SeedSize)
		fill(rng, seed)
		priv := ed25519.NewKeyFromSeed(seed)
		msg := make([]byte, i)
		fill(rng, msg)
		got, err := signature(jwt.SigningMethodEdDSA, string(msg), priv)
		if err != nil {
			t.Fatal(err)
		}
		if want := ed25519.Sign(priv, msg); !reflect.DeepEqual(got, want) {
			t.Fatalf("message of %d bytes: signature %x, crypto/ed25519's %x", i, got, want)
		}
	}

	hmacKey := []byte("a key of HS256, which golang-jwt signs")
	got, err := signature(jwt.SigningMethodHS256, "a.b", hmacKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := jwt.SigningMethodHS256.Verify("a.b", got, hmacKey); err != nil {
		t.Errorf("HS256 signature does not verify: %v", err)
	}
}

// TestParseOwn_decides_only_our_header: parseOwn reads the tokens Issue
// writes as golang-jwt does and refuses a bad signature itself; another
// spelling of the header, an expired token or a key set not yet loaded
// it leaves to parseJWT.
func TestParseOwn_decides_only_our_header(t *testing.T) {
	for _, alg := range allAlgorithms {
		t.Run(alg, func(t *testing.T) {
			iss, _, clk := newIssuerFor(t, alg)
			ctx := context.Background()
			token := issue(t, iss)

			own, kid, decided, err := iss.parseOwn(token, clk.Now())
			if !decided || err != nil {
				t.Fatalf("parseOwn on a token of ours: decided %v, %v", decided, err)
			}
			lib, libKID, err := iss.parseJWT(ctx, token)
			if err != nil || !reflect.DeepEqual(own, lib) || kid != libKID || kid != signer(iss).kid {
				t.Fatalf("parseOwn read %+v (kid %q), parseJWT %+v (kid %q, %v)", own, kid, lib, libKID, err)
			}

			dot := strings.LastIndexByte(token, '.')
			sig, _ := base64.RawURLEncoding.DecodeString(token[dot+1:])
			sig[0] ^= 1
			forged := token[:dot+1] + base64.RawURLEncoding.EncodeToString(sig)
			if _, _, decided, err := iss.parseOwn(forged, clk.Now()); !decided || !errors.Is(err, jwt.ErrTokenSignatureInvalid) {
				t.Fatalf("parseOwn on a bad signature: decided %v, %v", decided, err)
			}
			assertInvalid(t, iss, forged, jwt.ErrTokenSignatureInvalid)

			respelled := signWith(t, iss, validClaims(), map[string]any{"typ": "AT+JWT"})
			if _, _, decided, _ := iss.parseOwn(respelled, clk.Now()); decided {
				t.Fatal("parseOwn decided a header it does not write")
			}
			assertValid(t, iss, respelled)

			expired := signWith(t, iss, claimsAt(t0.Add(-2*DefaultTTL)), nil)
			if _, _, decided, _ := iss.parseOwn(expired, clk.Now()); decided {
				t.Fatal("parseOwn decided an expired token")
			}
			assertInvalid(t, iss, expired, jwt.ErrTokenExpired)

			unstarted, err := New(newFakeKeyStore(), clk, optsFor(alg))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, decided, _ := unstarted.parseOwn(token, clk.Now()); decided {
				t.Fatal("parseOwn decided before Start")
			}
		})
	}
}

// TestDecodeOwnClaims_reads_what_Issue_writes: the claims of every token
// Issue makes, with a session's amr and auth_time, are read without
// json.Unmarshal and as it reads them; a token with a hook's extra
// claims is left to it.
func TestDecodeOwnClaims_reads_what_Issue_writes(t *testing.T) {
	iss, _, _ := newTestIssuer(t)
	payloadOf := func(token string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[1])
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	payload := payloadOf(issue(t, iss))
	own, ok := decodeOwnClaims(payload)
	if !ok {
		t.Fatalf("decodeOwnClaims refused the claims Issue wrote: %s", payload)
	}
	var lib claims
	if err := json.Unmarshal(payload, &lib); err != nil || !reflect.DeepEqual(own, lib) {
		t.Fatalf("decodeOwnClaims read %+v, json.Unmarshal %+v (%v)", own, lib, err)
	}
	if own.AuthTime == nil || len(own.AMR) == 0 || len(own.Profiles) == 0 {
		t.Fatalf("the session's claims are missing: %+v", own)
	}

	extra, err := domain.ParseHookClaims([]byte(`{"tenant":"acme"}`))
	if err != nil {
		t.Fatal(err)
	}
	at, err := iss.Issue(context.Background(), testUser, testSession, extra)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := decodeOwnClaims(payloadOf(at.Token)); ok {
		t.Fatal("decodeOwnClaims read a hook's extra claims")
	}
	assertValid(t, iss, at.Token)
}
