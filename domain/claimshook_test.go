package domain_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

func TestParseHookClaims(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		raw, want string
		failed    bool
	}{
		{`{"tenant": "acme", "n": [1, 2]}`, `{"n":[1,2],"tenant":"acme"}`, false},
		{`{}`, ``, false},
		{`{"a":1,"a":2}`, `{"a":2}`, false},
		{`{"azp":"x"}`, ``, true},
		{`{"email":"x@example.com"}`, ``, true},
		{`[]`, ``, true},
		{`null`, ``, true},
		{`{"big":"` + strings.Repeat("x", domain.MaxHookClaimsSize) + `"}`, ``, true},
	} {
		c, err := domain.ParseHookClaims(json.RawMessage(tt.raw))
		if tt.failed != errors.Is(err, domain.ErrHookFailed) || string(c.JSON()) != tt.want {
			t.Errorf("ParseHookClaims(%.40s) = %s, %v", tt.raw, c.JSON(), err)
		}
	}
}

// Not parallel: AllocsPerRun counts the whole process's allocations.
func TestMergeClaims(t *testing.T) {
	c, err := domain.ParseHookClaims(json.RawMessage(`{"tenant":"acme"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(domain.MergeClaims([]byte(`{"sub":"u"}`), c)); got != `{"sub":"u","tenant":"acme"}` {
		t.Errorf("merged %s", got)
	}
	if got := string(domain.MergeClaims([]byte(`{}`), c)); got != `{"tenant":"acme"}` {
		t.Errorf("merged into {}: %s", got)
	}
	payload := []byte(`{"sub":"u"}`)
	if allocs := testing.AllocsPerRun(100, func() { _ = domain.MergeClaims(payload, domain.HookClaims{}) }); allocs != 0 {
		t.Errorf("%v allocations without claims", allocs)
	}
}
