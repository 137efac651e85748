package federation_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/federation"
	"github.com/userd/userd/domain"
)

// TestClient_bounds_answers: an answer over 1 MiB is not read whole: the
// discovery document that never ends is an unreachable provider.
func TestClient_bounds_answers(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"issuer":"` + strings.Repeat("a", 2<<20) + `"}`))
	}))
	t.Cleanup(srv.Close)
	c := federation.New(federation.Options{HTTPClient: srv.Client()})
	_, err := c.AuthCodeURL(context.Background(), domain.IdentityProvider{
		Slug: "big", Kind: domain.IdentityProviderOIDC, Issuer: srv.URL, ClientID: "c",
	}, newFlow())
	if got := domain.FederationReason(err); got != domain.RefusedProviderUnreachable || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("reason = %q (%v), want %q for an answer too long", got, err, domain.RefusedProviderUnreachable)
	}
}

// TestClient_unknown_kind: a kind the adapter does not speak is an
// error, not a refusal of the person.
func TestClient_unknown_kind(t *testing.T) {
	t.Parallel()
	c := federation.New(federation.Options{})
	p := domain.IdentityProvider{Slug: "x", Kind: "saml"}
	if _, err := c.AuthCodeURL(context.Background(), p, newFlow()); err == nil || domain.FederationReason(err) != "" {
		t.Errorf("AuthCodeURL of kind saml = %v, want a plain error", err)
	}
	if _, err := c.Exchange(context.Background(), p, newFlow(), "code"); err == nil || domain.FederationReason(err) != "" {
		t.Errorf("Exchange of kind saml = %v, want a plain error", err)
	}
}
