package passwordhash

import (
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestCheckEncoded(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	argon, err := h.Hash(context.Background(), "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	b, err := bcrypt.GenerateFromPassword([]byte("correct horse battery staple"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	bc := string(b) // $2a$04$...
	salt := "$c2FsdHNhbHRzYWx0c2FsdA$"
	key := strings.Repeat("A", 43)

	for _, tc := range []struct {
		name    string
		encoded string
		ok      bool
	}{
		{"argon2id_default", argon, true},
		{"argon2id_other_params", "$argon2id$v=19$m=65536,t=3,p=4" + salt + key, true},
		{"argon2id_params_in_any_order", "$argon2id$v=19$p=1,m=19456,t=2" + salt + key, true},
		{"bcrypt_2a", bc, true},
		{"bcrypt_2b", "$2b$" + bc[4:], true},
		{"bcrypt_2y", "$2y$" + bc[4:], true},
		{"bcrypt_cost_16", "$2b$16$" + bc[7:], true},

		{"empty", "", false},
		{"plain_text", "hunter2hunter2", false},
		{"argon2i", "$argon2i$v=19$m=19456,t=2,p=1" + salt + key, false},
		{"argon2id_old_version", "$argon2id$v=16$m=19456,t=2,p=1" + salt + key, false},
		{"argon2id_missing_param", "$argon2id$v=19$m=19456,t=2" + salt + key, false},
		{"argon2id_huge_memory", "$argon2id$v=19$m=4194304,t=2,p=1" + salt + key, false},
		{"argon2id_padded_base64", "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA==$" + key, false},
		{"argon2id_short_salt", "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$" + key, false},
		{"argon2id_extra_field", argon + "$x", false},
		{"bcrypt_2x", "$2x$" + bc[4:], false},
		{"bcrypt_2_only", "$2$" + bc[4:], false},
		{"bcrypt_cost_17", "$2b$17$" + bc[7:], false},
		{"bcrypt_cost_3", "$2b$03$" + bc[7:], false},
		{"bcrypt_one_digit_cost", "$2b$4$" + bc[7:], false},
		{"bcrypt_truncated", bc[:59], false},
		{"bcrypt_trailing", bc + "x", false},
		{"bcrypt_bad_alphabet", bc[:59] + "+", false},
		{"bcrypt_newline", bc + "\n", false},
		{"md5_crypt", "$1$saltsalt$qjXMvbEw8oaL.CzflDugX/", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := h.CheckEncoded(tc.encoded)
			if tc.ok && err != nil {
				t.Fatalf("CheckEncoded(%q) = %v, want nil", tc.encoded, err)
			}
			if !tc.ok && !errors.Is(err, ErrMalformedHash) {
				t.Fatalf("CheckEncoded(%q) = %v, want ErrMalformedHash", tc.encoded, err)
			}
			if err != nil && strings.Contains(err.Error(), tc.encoded) && tc.encoded != "" {
				t.Fatalf("the error quotes the hash: %v", err)
			}
			// Whatever CheckEncoded accepts, Verify can check without error
			// (cost 16 takes seconds: left out).
			if tc.ok && tc.name != "bcrypt_cost_16" {
				if _, _, err := h.Verify(context.Background(), tc.encoded, "correct horse battery staple"); err != nil {
					t.Fatalf("Verify of an accepted hash: %v", err)
				}
			}
		})
	}
}
