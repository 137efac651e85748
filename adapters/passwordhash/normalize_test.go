package passwordhash

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/text/unicode/norm"
)

// Pairs of spellings that NFKC makes one password. The suffix keeps them
// realistic passwords; it is the same in both spellings.
var equivalentSpellings = []struct {
	name string
	a, b string
}{
	{"ligature_fi", "\ufb01sh-and-chips", "fish-and-chips"},
	{"fullwidth_digits", "pass-\uff11\uff12\uff13-word", "pass-123-word"},
	{"precomposed_vs_combining", "caf\u00e9-au-lait", "cafe\u0301-au-lait"},
	{"fullwidth_latin", "\uff33\uff45\uff43\uff52\uff45\uff54-phrase", "Secret-phrase"},
}

func TestUnicodeNormalization(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	for _, tt := range equivalentSpellings {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.a == tt.b {
				t.Fatal("the two spellings are the same string")
			}
			for _, order := range [][2]string{{tt.a, tt.b}, {tt.b, tt.a}} {
				enc, err := h.Hash(context.Background(), order[0])
				if err != nil {
					t.Fatal(err)
				}
				for _, pw := range order {
					ok, rehash, err := h.Verify(context.Background(), enc, pw)
					if err != nil || !ok || rehash {
						t.Errorf("hash of %+q, Verify(%+q) = %v, %v, %v; want true, false, nil", order[0], pw, ok, rehash, err)
					}
				}
			}
		})
	}

	// Normalising must not make different passwords equal.
	enc, err := h.Hash(context.Background(), "fish-and-chips")
	if err != nil {
		t.Fatal(err)
	}
	for _, pw := range []string{"\ufb02sh-and-chips", "Fish-and-chips", "fish-and-chips\u0301"} {
		if ok, _, err := h.Verify(context.Background(), enc, pw); ok || err != nil {
			t.Errorf("Verify(%+q) = %v, %v; want false, nil", pw, ok, err)
		}
	}
}

// TestHashIsOfNFKCForm pins the hashed bytes: the argon2id key of a hash
// made from any spelling is the key of the NFKC form, so that other
// implementations (or a later version of this one) can verify it.
func TestHashIsOfNFKCForm(t *testing.T) {
	t.Parallel()
	for _, tt := range equivalentSpellings {
		h := New(fastParams)
		enc, err := h.Hash(context.Background(), tt.b)
		if err != nil {
			t.Fatal(err)
		}
		d, err := decodeArgon2id(enc)
		if err != nil {
			t.Fatal(err)
		}
		nfkc := norm.NFKC.String(tt.b)
		if !d.verify(h.blocks, nfkc) {
			t.Errorf("%s: hash of %+q is not the hash of its NFKC form %+q", tt.name, tt.b, nfkc)
		}
	}
}

// rawArgon2id hashes password as given, without normalising: what this
// package did before, and what other argon2id implementations do.
func rawArgon2id(t *testing.T, p Params, password string) string {
	t.Helper()
	salt := make([]byte, p.SaltLen)
	_, _ = rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, p.Iterations, p.Memory, p.Parallelism, p.KeyLen)
	return fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s", p.Memory, p.Iterations, p.Parallelism,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// TestArgon2RawFormFallback: an argon2id hash of a password that is not in
// NFKC form (made before normalisation, or imported) still verifies with
// that exact password, and asks to be rehashed even though its parameters
// are the configured ones, so that the normalised form is stored.
func TestArgon2RawFormFallback(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	const raw = "\ufb01sh-and-chips"
	enc := rawArgon2id(t, fastParams, raw)

	ok, rehash, err := h.Verify(context.Background(), enc, raw)
	if err != nil || !ok || !rehash {
		t.Fatalf("Verify(raw) = %v, %v, %v; want true, true, nil", ok, rehash, err)
	}
	// The old hash told the spellings apart; it still does. Once rehashed,
	// both verify.
	if ok, _, err := h.Verify(context.Background(), enc, "fish-and-chips"); ok || err != nil {
		t.Errorf("Verify(NFKC form) against the raw hash = %v, %v; want false, nil", ok, err)
	}
	if ok, rehash, err := h.Verify(context.Background(), enc, "\ufb01sh-and-chipz"); ok || rehash || err != nil {
		t.Errorf("wrong password = %v, %v, %v; want false, false, nil", ok, rehash, err)
	}
	upgraded, err := h.Hash(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, pw := range []string{raw, "fish-and-chips"} {
		if ok, rehash, err := h.Verify(context.Background(), upgraded, pw); !ok || rehash || err != nil {
			t.Errorf("rehashed: Verify(%+q) = %v, %v, %v; want true, false, nil", pw, ok, rehash, err)
		}
	}
}

func TestBcryptUnicode(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	bcryptOf := func(pw string) string {
		t.Helper()
		b, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	t.Run("normalised_at_import", func(t *testing.T) {
		t.Parallel()
		// The old system stored the NFKC form: any spelling verifies.
		for _, tt := range equivalentSpellings {
			enc := bcryptOf(norm.NFKC.String(tt.a))
			for _, pw := range []string{tt.a, tt.b} {
				if ok, rehash, err := h.Verify(context.Background(), enc, pw); !ok || !rehash || err != nil {
					t.Errorf("%s: Verify(%+q) = %v, %v, %v; want true, true, nil", tt.name, pw, ok, rehash, err)
				}
			}
		}
	})
	t.Run("not_normalised_at_import", func(t *testing.T) {
		t.Parallel()
		// The old system stored the bytes as typed: the NFKC form fails,
		// the raw form is tried next and matches.
		for _, tt := range equivalentSpellings {
			raw := tt.a
			if norm.NFKC.String(raw) == raw {
				raw = tt.b
			}
			enc := bcryptOf(raw)
			if ok, rehash, err := h.Verify(context.Background(), enc, raw); !ok || !rehash || err != nil {
				t.Errorf("%s: Verify(%+q) = %v, %v, %v; want true, true, nil", tt.name, raw, ok, rehash, err)
			}
			if ok, rehash, err := h.Verify(context.Background(), enc, raw+"x"); ok || rehash || err != nil {
				t.Errorf("%s: wrong password = %v, %v, %v; want false, false, nil", tt.name, ok, rehash, err)
			}
		}
	})
}

// TestBcryptLongPassword: bcrypt uses 72 bytes of a password. The system a
// hash was imported from cut longer passwords there, so they match on
// their first 72 bytes; a long wrong password is a plain mismatch, never an
// error (which would be a 500 at login).
func TestBcryptLongPassword(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	// The cut at 72 bytes falls between two runes, or inside one.
	for _, long := range []string{
		strings.Repeat("long-passphrase-", 8), // 128 bytes of ASCII
		strings.Repeat("\u00e9", 40),          // 80 bytes
		"x" + strings.Repeat("\u00e9", 40),    // 81 bytes, the cut splits an é
		strings.Repeat("\U0001F511", 32),      // 128 bytes of 4-byte runes
	} {
		prefix := long[:72]
		b, err := bcrypt.GenerateFromPassword([]byte(prefix), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		enc := string(b)
		for _, pw := range []string{long, prefix, long + "-and-more"} {
			if ok, rehash, err := h.Verify(context.Background(), enc, pw); !ok || !rehash || err != nil {
				t.Errorf("%d bytes: Verify = %v, %v, %v; want true, true, nil", len(pw), ok, rehash, err)
			}
		}
		wrong := "X" + long[1:]
		if ok, rehash, err := h.Verify(context.Background(), enc, wrong); ok || rehash || err != nil {
			t.Errorf("%d bytes, wrong: Verify = %v, %v, %v; want false, false, nil", len(wrong), ok, rehash, err)
		}
	}
}
