package oidcprovider_test

import (
	"bytes"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/userd/userd/adapters/oidcprovider"
	"github.com/userd/userd/domain"
)

// logs holds what the library (through slog.Default) and the adapter
// (through Options.Logger) log during the tests.
var logs lockedBuffer

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestMain(m *testing.M) {
	// zitadel logs through the default logger: into the buffer, where
	// TestLogs_hold_no_secret looks, rather than onto the test's output.
	slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	os.Exit(m.Run())
}

// Neither the library nor the adapter logs a secret, code or token, on
// success or refusal.
func TestLogs_hold_no_secret(t *testing.T) {
	const (
		secret   = "SECRET-7f3a9c"
		code     = "CODE-7f3a9c"
		verifier = "VERIFIER-7f3a9c"
		token    = "TOKEN-7f3a9c"
	)
	f := newFake()
	f.secrets[confidentialID] = secret
	h := oidcprovider.New(f, oidcprovider.Options{Issuer: issuer, ContinuePath: "/c",
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	cc := "&client_id=" + confidentialID + "&client_secret=" + secret
	requests := []req{
		{method: "POST", target: "/oauth2/token", form: "grant_type=authorization_code&code=" + code + "&redirect_uri=https%3A%2F%2Fa.example%2Fcb&code_verifier=" + verifier + cc},
		{method: "POST", target: "/oauth2/token", form: "grant_type=refresh_token&refresh_token=" + token + cc + "&refresh_token=" + token},
		{method: "POST", target: "/oauth2/token", form: "grant_type=refresh_token&refresh_token=" + token, headers: []string{"Authorization", basic(confidentialID, secret+"x")}},
		{method: "POST", target: "/oauth2/token", form: "grant_type=client_credentials" + cc, headers: []string{"Authorization", basic(confidentialID, secret)}},
		{method: "GET", target: "/oauth2/userinfo", headers: []string{"Authorization", "Bearer " + token}},
		{method: "POST", target: "/oauth2/introspect", form: "token=" + token + "&client_id=" + publicID + "&client_secret=" + secret},
		{method: "POST", target: "/oauth2/revoke", form: "token=" + token + cc},
		{method: "GET", target: "/oauth2/authorize?client_id=" + publicID + "&redirect_uri=https%3A%2F%2Fa.example%2Fcb&code_challenge=" + url.QueryEscape(verifier)},
	}
	f.tokenErr = domain.NewOAuthError(domain.OAuthInvalidGrant, "the code is unknown, used or expired")
	f.userInfoErr = domain.ErrInvalidToken
	f.authorizeErr = errBoom
	for _, q := range requests {
		q.do(t, h)
	}
	f.tokenErr, f.userInfoErr = errBoom, errBoom
	for _, q := range requests {
		q.do(t, h)
	}
	got := logs.String()
	if !strings.Contains(got, "store down") || !strings.Contains(got, "request error") {
		t.Fatalf("the log misses the adapter's or the library's errors: %s", got)
	}
	// Every secret, code and token above ends so.
	if strings.Contains(got, "7f3a9c") {
		t.Errorf("a log line holds a secret, code or token: %s", got)
	}
}
