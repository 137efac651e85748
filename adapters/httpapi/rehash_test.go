package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/text/unicode/norm"

	"github.com/userd/userd/adapters/passwordhash"
	"github.com/userd/userd/domain"
)

// harnessParams are the argon2id parameters newTestServer configures.
var harnessParams = passwordhash.Params{Memory: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}

// harnessPrefix starts every hash made with harnessParams.
const harnessPrefix = "$argon2id$v=19$m=64,t=1,p=1$"

// setPasswordHash replaces the stored hash of the user with id, as an
// import from another system would have written it.
func (s *testServer) setPasswordHash(id, hash string) {
	s.t.Helper()
	uid, err := domain.ParseUserID(id)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.store.Users().Update(context.Background(), uid, func(u *domain.User) error {
		u.PasswordHash = hash
		return nil
	}); err != nil {
		s.t.Fatal(err)
	}
}

// passwordHash returns the stored hash of the user with id.
func (s *testServer) passwordHash(id string) string {
	s.t.Helper()
	uid, err := domain.ParseUserID(id)
	if err != nil {
		s.t.Fatal(err)
	}
	u, err := s.store.Users().ByID(context.Background(), uid)
	if err != nil {
		s.t.Fatal(err)
	}
	return u.PasswordHash
}

func TestLogin_rehashesOldHashes(t *testing.T) {
	t.Parallel()
	const password = "imported-Passphrase-9"
	bcryptHash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	otherParams, err := passwordhash.New(passwordhash.Params{Memory: 128, Iterations: 2, Parallelism: 2, SaltLen: 8, KeyLen: 16}).Hash(context.Background(), password)
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct{ name, hash string }{
		{"bcrypt", string(bcryptHash)},
		{"bcrypt_2y", "$2y$" + string(bcryptHash[4:])},
		{"argon2id_other_params", otherParams},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTestServer(t)
			u := s.register("Imported", "imported@example.com")
			s.setPasswordHash(u.ID, tt.hash)

			// A wrong password leaves the old hash alone.
			wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": u.Email, "password": password + "x"}),
				http.StatusUnauthorized, "invalid_credentials")
			if got := s.passwordHash(u.ID); got != tt.hash {
				t.Fatalf("a failed login changed the hash to %q", got)
			}

			tb := s.login(u.Email, password)
			if tb.User.ID != u.ID {
				t.Errorf("logged in as %q, want %q", tb.User.ID, u.ID)
			}
			rehashed := s.passwordHash(u.ID)
			if !strings.HasPrefix(rehashed, harnessPrefix) {
				t.Fatalf("hash after login = %q, want argon2id with the configured parameters (%s…)", rehashed, harnessPrefix)
			}
			ok, again, err := passwordhash.New(harnessParams).Verify(context.Background(), rehashed, password)
			if err != nil || !ok || again {
				t.Errorf("Verify(rehashed) = %v, %v, %v; want true, false, nil", ok, again, err)
			}

			// The new hash signs in and is kept as it is.
			s.login(u.Email, password)
			if got := s.passwordHash(u.ID); got != rehashed {
				t.Errorf("a login with current parameters rehashed again")
			}
		})
	}
}

// TestLogin_unicodeNormalForms: a password registered in one Unicode normal
// form signs in when typed in another (a Mac sends NFD, most others NFC).
func TestLogin_unicodeNormalForms(t *testing.T) {
	t.Parallel()
	const password = "Crème brûlée à la française"
	nfc, nfd := norm.NFC.String(password), norm.NFD.String(password)
	if nfc == nfd {
		t.Fatal("the two normal forms are the same string")
	}
	for _, tt := range []struct{ name, register, login string }{
		{"nfc_then_nfd", nfc, nfd},
		{"nfd_then_nfc", nfd, nfc},
		{"ligature_then_letters", "\ufb01sh and chips, please", "fish and chips, please"},
		{"fullwidth_then_ascii", "door code \uff11\uff19\uff18\uff14", "door code 1984"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTestServer(t)
			var u userBody
			wantJSON(t, s.do("POST", "/api/users", map[string]string{
				"name": "Zoë", "email": "zoe@example.com", "password": tt.register,
			}), http.StatusCreated, &u)
			stored := s.passwordHash(u.ID)
			for _, pw := range []string{tt.login, tt.register} {
				if tb := s.login(u.Email, pw); tb.User.ID != u.ID {
					t.Errorf("login(%+q) signed in %q, want %q", pw, tb.User.ID, u.ID)
				}
			}
			if got := s.passwordHash(u.ID); got != stored {
				t.Error("a login in another normal form rehashed the password")
			}
		})
	}
}
