package kit

import (
	"net/http"
	"testing"
)

// User is the part of the user representation the suites read.
type User struct {
	ID            string `json:"id"`
	Email         string `json:"email"`
	EmailVerified bool   `json:"emailVerified"`
}

// Tokens is the part of a token answer the suites read.
type Tokens struct {
	AccessToken  string `json:"accessToken"`
	RefreshToken string `json:"refreshToken"`
	User         User   `json:"user"`
}

// Register creates a customer through the open registration of the node
// at base (POST /api/users), with extra request headers given as name,
// value pairs, and fails t unless it is created.
func Register(t testing.TB, base, name, email, password string, headers ...string) User {
	t.Helper()
	var u User
	Want(t, "register "+email, Send(t, http.MethodPost, base+"/api/users",
		map[string]string{"name": name, "email": email, "password": password}, "", headers...), http.StatusCreated, &u)
	return u
}

// Login signs in with a password at the node at base (POST /auth/login),
// with extra request headers given as name, value pairs, and fails t
// unless tokens come back.
func Login(t testing.TB, base, email, password string, headers ...string) Tokens {
	t.Helper()
	var tok Tokens
	Want(t, "login "+email, Send(t, http.MethodPost, base+"/auth/login",
		map[string]string{"email": email, "password": password}, "", headers...), http.StatusOK, &tok)
	return tok
}
