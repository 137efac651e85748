package application_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

func providerIn(slug string) domain.IdentityProviderInput {
	return domain.IdentityProviderInput{Slug: ptr(slug), DisplayName: ptr("Acme SSO"), Kind: ptr("oidc"),
		Issuer: ptr("https://login.acme.example"), ClientID: ptr("userd"), ClientSecret: ptr("provider-secret-1")}
}

// An admin creates, lists, reads, changes and deletes providers; the
// contract's order of checks holds: 401, the form (400), 403, then 404
// or 409.
func TestIdentityProviders_admin_use_cases(t *testing.T) {
	e := newEnv(t)
	_, admin := e.seed(t, "admin@example.com", domain.ProfileAdmin)
	_, customer := e.seed(t, "ada@example.com")
	svc := e.svc.IdentityProviders

	_, err := svc.CreateIdentityProvider(ctx, nil, providerIn("acme"))
	wantErr(t, err, domain.ErrUnauthenticated)
	var verr *domain.ValidationError
	if _, err := svc.CreateIdentityProvider(ctx, customer, domain.IdentityProviderInput{}); !errors.As(err, &verr) {
		t.Fatalf("a bad form from a customer: %v, want the validation error first", err)
	}
	_, err = svc.CreateIdentityProvider(ctx, customer, providerIn("acme"))
	wantErr(t, err, domain.ErrForbidden)

	p, err := svc.CreateIdentityProvider(ctx, admin, providerIn("acme"))
	wantErr(t, err, nil)
	if p.ClientSecret != "provider-secret-1" || !p.Enabled {
		t.Errorf("created = %+v", p)
	}
	_, err = svc.CreateIdentityProvider(ctx, admin, providerIn("acme"))
	wantErr(t, err, domain.ErrIdentityProviderSlugTaken)

	list, err := svc.IdentityProviders(ctx, admin)
	wantErr(t, err, nil)
	if len(list) != 1 || list[0].Slug != "acme" {
		t.Errorf("list = %+v", list)
	}
	_, err = svc.IdentityProviders(ctx, customer)
	wantErr(t, err, domain.ErrForbidden)

	// A change's form is judged before the caller's right.
	if _, err := svc.UpdateIdentityProvider(ctx, customer, "nope", domain.IdentityProviderInput{Slug: ptr("Bad")}); !errors.As(err, &verr) {
		t.Errorf("a bad change from a customer: %v, want the validation error first", err)
	}
	_, err = svc.UpdateIdentityProvider(ctx, customer, "acme", domain.IdentityProviderInput{Enabled: ptr(false)})
	wantErr(t, err, domain.ErrForbidden)
	changed, err := svc.UpdateIdentityProvider(ctx, admin, "acme", domain.IdentityProviderInput{Enabled: ptr(false)})
	wantErr(t, err, nil)
	if changed.Enabled || changed.ClientSecret != "provider-secret-1" {
		t.Errorf("updated = %+v: the secret is kept when absent", changed)
	}
	_, err = svc.UpdateIdentityProvider(ctx, admin, "acme", domain.IdentityProviderInput{Kind: ptr("github")})
	if !errors.As(err, &verr) {
		t.Errorf("a change of kind: %v, want a validation error", err)
	}
	_, err = svc.UpdateIdentityProvider(ctx, admin, "nope", domain.IdentityProviderInput{Enabled: ptr(true)})
	wantErr(t, err, domain.ErrIdentityProviderNotFound)

	wantErr(t, svc.DeleteIdentityProvider(ctx, customer, "acme"), domain.ErrForbidden)
	wantErr(t, svc.DeleteIdentityProvider(ctx, admin, "acme"), nil)
	_, err = svc.IdentityProvider(ctx, admin, "acme")
	wantErr(t, err, domain.ErrIdentityProviderNotFound)
}

// The operator at the command line creates, lists, changes and deletes
// providers without a principal; the trail records no actor.
func TestIdentityProviders_operator_use_cases(t *testing.T) {
	e := newAuditEnv(t, nil)
	svc := e.env.svc.IdentityProviders

	p, err := svc.CreateIdentityProviderAsOperator(ctx, providerIn("acme"))
	wantErr(t, err, nil)
	if p.ClientSecret != "provider-secret-1" {
		t.Errorf("created = %+v", p)
	}
	_, err = svc.CreateIdentityProviderAsOperator(ctx, providerIn("acme"))
	wantErr(t, err, domain.ErrIdentityProviderSlugTaken)
	var verr *domain.ValidationError
	if _, err := svc.CreateIdentityProviderAsOperator(ctx, domain.IdentityProviderInput{}); !errors.As(err, &verr) {
		t.Errorf("an empty provider: %v, want a validation error", err)
	}
	list, err := svc.IdentityProvidersAsOperator(ctx)
	wantErr(t, err, nil)
	if len(list) != 1 || list[0].Slug != "acme" {
		t.Errorf("list = %+v", list)
	}
	changed, err := svc.UpdateIdentityProviderAsOperator(ctx, "acme", domain.IdentityProviderInput{Enabled: ptr(false)})
	wantErr(t, err, nil)
	if changed.Enabled || changed.ClientSecret != "provider-secret-1" {
		t.Errorf("updated = %+v", changed)
	}
	_, err = svc.UpdateIdentityProviderAsOperator(ctx, "nope", domain.IdentityProviderInput{Enabled: ptr(true)})
	wantErr(t, err, domain.ErrIdentityProviderNotFound)
	wantErr(t, svc.DeleteIdentityProviderAsOperator(ctx, "acme"), nil)
	wantErr(t, svc.DeleteIdentityProviderAsOperator(ctx, "acme"), domain.ErrIdentityProviderNotFound)

	var trail []string
	for _, ev := range e.trail(t) {
		if strings.HasPrefix(string(ev.Type), "identity_provider.") {
			if ev.ActorID != "" {
				t.Errorf("%s has actor %s", ev.Type, ev.ActorID)
			}
			trail = append(trail, string(ev.Type)+" "+ev.Detail)
		}
	}
	want := []string{"identity_provider.created provider=acme kind=oidc", "identity_provider.updated provider=acme fields=enabled",
		"identity_provider.deleted provider=acme"}
	if !slices.Equal(trail, want) {
		t.Errorf("trail %q, want %q", trail, want)
	}
}
