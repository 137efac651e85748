package domain_test

import (
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

// The contract's test vector: the 32 bytes 0x00…0x1f.
func TestPersonalToken_contract_vector(t *testing.T) {
	b := make([]byte, 32)
	for i := range b {
		b[i] = byte(i)
	}
	const want = "udp_003aUlTJC7tjlCTQj2uNU3MFagCXG9LRKRcwGkBIDlf1Yo7hP"
	if got := domain.PersonalTokenFromBytes(b); got != want {
		t.Fatalf("token = %s, want %s", got, want)
	}
	if !domain.WellFormedPersonalToken(want) || len(want) != domain.PersonalTokenLen {
		t.Errorf("the vector is not well formed")
	}
	if got := domain.PersonalTokenPrefixOf(want); got != "003aUlTJ" {
		t.Errorf("prefix = %s", got)
	}
}

// A token with any character changed, cut or lengthened fails its
// checksum or its form; fresh tokens are well formed and distinct.
func TestPersonalToken_checksum_refuses_changes(t *testing.T) {
	tok := domain.NewPersonalTokenSecret()
	if !domain.WellFormedPersonalToken(tok) || tok == domain.NewPersonalTokenSecret() {
		t.Fatalf("fresh token %s", tok)
	}
	for i := len(domain.PersonalTokenPrefix); i < len(tok); i++ {
		c := byte('A')
		if tok[i] == 'A' {
			c = 'B'
		}
		changed := tok[:i] + string(c) + tok[i+1:]
		if domain.WellFormedPersonalToken(changed) {
			t.Errorf("a change at %d passes the checksum: %s", i, changed)
		}
	}
	for _, bad := range []string{"", tok[:len(tok)-1], tok + "0", strings.Replace(tok, "udp_", "udx_", 1), tok[:10] + "-" + tok[11:]} {
		if domain.WellFormedPersonalToken(bad) {
			t.Errorf("%q is well formed", bad)
		}
	}
}

func TestParseTokenScopes(t *testing.T) {
	got, msg := domain.ParseTokenScopes([]string{"users:write", "users:read"})
	if msg != "" || len(got) != 2 || got[0] != domain.ScopeUsersRead {
		t.Errorf("scopes = %v, %q", got, msg)
	}
	for _, bad := range [][]string{nil, {"admin"}, {"users:read", "users:read"}} {
		if _, msg := domain.ParseTokenScopes(bad); msg == "" {
			t.Errorf("%v accepted", bad)
		}
	}
	read := domain.PersonalToken{Scopes: []domain.TokenScope{domain.ScopeUsersRead}}
	write := domain.PersonalToken{Scopes: []domain.TokenScope{domain.ScopeUsersWrite}}
	if !read.Allows(domain.ScopeUsersRead) || read.Allows(domain.ScopeUsersWrite) || !write.Allows(domain.ScopeUsersRead) {
		t.Error("Allows")
	}
}
