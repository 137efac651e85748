package passwordhash

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestCheckEncoded(t *testing.T) {
	t.Parallel()
	h := New(fastParams)
	// The format, on a hasher whose import ceiling is the outer bounds:
	// TestCheckEncoded_import_ceiling is about the ceiling.
	wide := New(Params{Memory: MaxMemoryKiB, Iterations: MaxIterations, Parallelism: 1, SaltLen: 16, KeyLen: 32})
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
			err := wide.CheckEncoded(tc.encoded)
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

// TestCheckEncoded_import_ceiling: an import takes no hash costlier to
// check than one with the configured parameters (ceiling.go), and says
// which parameter is above it and by how much, never quoting the hash.
// Before, everything within the outer bounds was taken: bcrypt up to cost
// 16, argon2id up to 1 GiB and 20 passes.
func TestCheckEncoded_import_ceiling(t *testing.T) {
	t.Parallel()
	salt, key := "$c2FsdHNhbHRzYWx0c2FsdA$", strings.Repeat("A", 43)
	argon := func(m, tt, p int) string {
		return "$argon2id$v=19$m=" + strconv.Itoa(m) + ",t=" + strconv.Itoa(tt) + ",p=" + strconv.Itoa(p) + salt + key
	}
	b, err := bcrypt.GenerateFromPassword([]byte("correct horse battery staple"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	bcryptAt := func(cost int) string { return fmt.Sprintf("$2b$%02d$", cost) + string(b[7:]) }
	four := DefaultParams()
	four.Parallelism = 4
	for _, tc := range []struct {
		name       string
		configured Params
		encoded    string
		want       string // "" when taken, else what the error says
	}{
		{"bcrypt_at_the_ceiling", DefaultParams(), bcryptAt(8), ""},
		{"bcrypt_least_cost", DefaultParams(), bcryptAt(4), ""},
		{"bcrypt_above", DefaultParams(), bcryptAt(9), "bcrypt cost 9 above 8 (cost 9 needs m×t/p of at least 65536)"},
		{"bcrypt_cost_12", DefaultParams(), bcryptAt(12), "bcrypt cost 12 above 8"},
		{"bcrypt_16_at_a_high_cost", Params{Memory: 1 << 20, Iterations: 8, Parallelism: 1, SaltLen: 16, KeyLen: 32}, bcryptAt(16), ""},
		{"bcrypt_least_cost_always", fastParams, bcryptAt(4), ""},
		{"bcrypt_above_the_least", fastParams, bcryptAt(5), "bcrypt cost 5 above 4"},
		{"bcrypt_lanes_divide", four, bcryptAt(6), ""},
		{"bcrypt_lanes_divide_above", four, bcryptAt(7), "bcrypt cost 7 above 6"},

		{"argon2id_configured", DefaultParams(), argon(19456, 2, 1), ""},
		{"argon2id_less_memory_more_passes", DefaultParams(), argon(7168, 5, 1), ""},
		{"argon2id_more_lanes", DefaultParams(), argon(19456, 2, 8), ""},
		{"argon2id_memory_above", DefaultParams(), argon(19457, 1, 1), "argon2id memory 19457 KiB above 19456"},
		{"argon2id_1_GiB", DefaultParams(), argon(1<<20, 20, 1), "argon2id memory 1048576 KiB above 19456"},
		{"argon2id_passes_above", DefaultParams(), argon(19456, 3, 1), "argon2id m×t 58368 above 38912"},
		{"argon2id_small_memory_many_passes", DefaultParams(), argon(2048, 20, 1), "argon2id m×t 40960 above 38912"},
		{"argon2id_fewer_lanes", four, argon(19456, 2, 1), "argon2id m×t 38912 on 1 lanes above 38912 on 4"},
		{"argon2id_fewer_lanes_less_work", four, argon(9728, 2, 2), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := New(tc.configured).CheckEncoded(tc.encoded)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckEncoded = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrCostlierHash) || errors.Is(err, ErrMalformedHash) {
				t.Fatalf("CheckEncoded = %v, want ErrCostlierHash (and not ErrMalformedHash)", err)
			}
			c := tc.configured
			head := fmt.Sprintf("hash costlier than the configured argon2id (m=%d KiB, t=%d, p=%d): ", c.Memory, c.Iterations, c.Parallelism)
			if msg := err.Error(); !strings.HasPrefix(msg, head) || !strings.Contains(msg, tc.want) || strings.Contains(msg, key) {
				t.Fatalf("CheckEncoded = %q, want %q after %q, without the hash", msg, tc.want, head)
			}
		})
	}
}

// TestBcryptCeiling pins the table of the docs (docs/operations.md,
// "Importing users").
func TestBcryptCeiling(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		m, t uint32
		p    uint8
		want int
	}{
		{19456, 2, 1, 8}, {19456, 4, 1, 9}, {19456, 20, 1, 11}, {65536, 2, 1, 10}, {65536, 4, 1, 11},
		{65536, 8, 1, 12}, {131072, 4, 1, 12}, {64, 1, 1, 4}, {2048, 1, 1, 4}, {19456, 2, 4, 6}, {1 << 20, 20, 1, 16},
	} {
		p := Params{Memory: tc.m, Iterations: tc.t, Parallelism: tc.p, SaltLen: 16, KeyLen: 32}
		if got := p.bcryptCeiling(); got != tc.want {
			t.Errorf("m=%d, t=%d, p=%d: bcrypt ceiling %d, want %d", tc.m, tc.t, tc.p, got, tc.want)
		}
	}
}
