package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/kit"
)

// tableOf returns the HTML of the table id on the page, empty when absent.
func tableOf(body, id string) string {
	start := strings.Index(body, `<table id="`+id+`">`)
	if start < 0 {
		return ""
	}
	end := strings.Index(body[start:], "</table>")
	if end < 0 {
		return ""
	}
	return body[start : start+end]
}

// With the OpenID provider on, the page lists its RS256 keys in a table of
// their own, and a rotation adds one of each, named in the notice and
// marked in their tables, one audit event each.
func TestAdmin_keys_page_shows_and_rotates_the_provider_keys(t *testing.T) {
	t.Parallel()
	e := newEnvOver(t, kit.AppParts{OIDCProvider: true})
	v := e.signedInAdmin()
	before, err := e.svc.Keys.ListAsOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var accessKID, oidcKID string
	for _, k := range before {
		switch k.Purpose {
		case domain.KeyPurposeAccessToken:
			accessKID = k.KID
		case domain.KeyPurposeOIDC:
			oidcKID = k.KID
		}
	}
	if len(before) != 2 || accessKID == "" || oidcKID == "" {
		t.Fatalf("keys at start: %+v, want one of each purpose", before)
	}

	page := v.get("/admin/keys")
	wantPage(t, page, http.StatusOK, "Signing keys")
	wantBody(t, page, `<h2 id="keys-heading">Access-token keys</h2>`, `<h2 id="oidc-keys-heading">OpenID provider keys</h2>`,
		"A rotation adds an access-token key and a key of the OpenID provider.", `>Rotate now</button>`)
	if access, oidc := tableOf(page.Body, "keys"), tableOf(page.Body, "oidc-keys"); !strings.Contains(access, `id="key-`+accessKID+`"`) ||
		strings.Contains(access, oidcKID) || !strings.Contains(oidc, `id="key-`+oidcKID+`"`) || !strings.Contains(oidc, "<td>RS256</td>") ||
		!strings.Contains(oidc, "active (signs)") || strings.Contains(oidc, accessKID) {
		t.Fatalf("each key is not in its purpose's table:\naccess: %s\noidc: %s", access, oidc)
	}

	res := v.post("/admin/keys/rotate", url.Values{"when": {"published"}})
	loc := res.Header.Get("Location")
	m := regexp.MustCompile(`^/admin/keys\?kid=([0-9a-f]+)&kid=([0-9a-f]+)&done=rotated$`).FindStringSubmatch(loc)
	if res.Status != http.StatusSeeOther || m == nil {
		t.Fatalf("rotate: %d to %q", res.Status, loc)
	}
	after, err := e.svc.Keys.ListAsOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 4 || after[1].KID != m[1] || after[1].Purpose != domain.KeyPurposeAccessToken ||
		after[3].KID != m[2] || after[3].Purpose != domain.KeyPurposeOIDC || after[3].Algorithm != jwtissuer.RS256 ||
		after[3].Status != domain.KeyPending || !after[3].ActiveFrom.Equal(after[1].ActiveFrom) {
		t.Fatalf("keys after the rotation (%s, %s): %+v", m[1], m[2], after)
	}
	page = v.get(loc)
	wantBody(t, page, "New signing keys are added: "+m[1]+", pending; "+m[2]+", pending.")
	if !strings.Contains(tableOf(page.Body, "keys"), `<code>`+m[1]+`</code> <strong>(new)</strong>`) ||
		!strings.Contains(tableOf(page.Body, "oidc-keys"), `<code>`+m[2]+`</code> <strong>(new)</strong>`) {
		t.Errorf("the new keys are not marked in their tables:\n%s", page.Body)
	}
	var rotated []string
	for _, ev := range e.auditTrail() {
		if ev.Type == domain.AuditKeyRotated {
			rotated = append(rotated, ev.Detail)
		}
	}
	if len(rotated) != 2 || !strings.HasPrefix(rotated[0], "kid="+m[1]+" algorithm=EdDSA") || !strings.HasPrefix(rotated[1], "kid="+m[2]+" algorithm=RS256") {
		t.Errorf("key.rotated events: %q, want one per key", rotated)
	}
}

// With the access-token key configured and the provider on, the page
// still offers a rotation, which adds the provider's key alone.
func TestAdmin_keys_page_with_a_configured_key_rotates_the_provider_key(t *testing.T) {
	t.Parallel()
	e := newEnvOver(t, kit.AppParts{OIDCProvider: true}, func(s *envSettings) {
		opts := kit.TokenOptions
		opts.Algorithm, opts.HMACSecret, opts.OIDCProvider = jwtissuer.HS256, []byte("0123456789abcdef0123456789abcdef-configured"), true
		m, err := jwtissuer.NewKeyManager(s.deps.Stores.Keys, s.deps.Clock, opts)
		if err != nil {
			t.Fatal(err)
		}
		s.deps.Keys = m
	})
	v := e.signedInAdmin()
	page := v.get("/admin/keys")
	wantBody(t, page, "a rotation adds a key of the OpenID provider alone.", `>Rotate now</button>`, "active (configured)")
	e.clock.Advance(time.Minute)
	res := v.post("/admin/keys/rotate", url.Values{"when": {"now"}})
	loc := res.Header.Get("Location")
	m := regexp.MustCompile(`^/admin/keys\?kid=([0-9a-f]+)&done=rotated$`).FindStringSubmatch(loc)
	if res.Status != http.StatusSeeOther || m == nil {
		t.Fatalf("rotate: %d to %q", res.Status, loc)
	}
	page = v.get(loc)
	wantBody(t, page, "A new signing key is added: "+m[1]+", active (signs).")
	if !strings.Contains(tableOf(page.Body, "oidc-keys"), `id="key-`+m[1]+`"`) {
		t.Errorf("the new key is not among the provider's:\n%s", page.Body)
	}
}
