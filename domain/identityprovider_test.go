package domain_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

func ptrTo[T any](v T) *T { return &v }

func oidcProviderInput() domain.IdentityProviderInput {
	return domain.IdentityProviderInput{Slug: ptrTo("acme"), DisplayName: ptrTo("Acme SSO"), Kind: ptrTo("oidc"),
		Issuer: ptrTo("https://login.acme.example"), ClientID: ptrTo("userd"), ClientSecret: ptrTo("s3cret")}
}

var providerNow = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

// A provider takes the contract's defaults: every flag on, the scopes of
// its kind, GitHub's endpoints for github.
func TestNewIdentityProvider_defaults(t *testing.T) {
	p, err := domain.NewIdentityProvider(oidcProviderInput(), providerNow)
	if err != nil {
		t.Fatal(err)
	}
	if !p.AutoCreate || !p.TrustEmailVerified || !p.Enabled || !slices.Equal(p.Scopes, []string{"openid", "email", "profile"}) ||
		p.AuthURL != "" || len(p.AllowedDomains) != 0 || p.AllowedDomains == nil || !p.CreatedAt.Equal(providerNow) {
		t.Errorf("oidc provider = %+v", p)
	}
	gh, err := domain.NewIdentityProvider(domain.IdentityProviderInput{Slug: ptrTo("github"), DisplayName: ptrTo("GitHub"),
		Kind: ptrTo("github"), ClientID: ptrTo("Iv1.abc"), ClientSecret: ptrTo("x")}, providerNow)
	if err != nil {
		t.Fatal(err)
	}
	if gh.AuthURL != domain.GitHubAuthURL || gh.TokenURL != domain.GitHubTokenURL || gh.APIURL != domain.GitHubAPIURL ||
		!slices.Equal(gh.Scopes, []string{"read:user", "user:email"}) {
		t.Errorf("github provider = %+v", gh)
	}
}

// Every field's rules, each refusal naming its field.
func TestNewIdentityProvider_refusals(t *testing.T) {
	tests := []struct {
		name   string
		change func(*domain.IdentityProviderInput)
		field  string
	}{
		{"no slug", func(in *domain.IdentityProviderInput) { in.Slug = nil }, "slug"},
		{"upper-case slug", func(in *domain.IdentityProviderInput) { in.Slug = ptrTo("Acme") }, "slug"},
		{"long slug", func(in *domain.IdentityProviderInput) { in.Slug = ptrTo(strings.Repeat("a", 33)) }, "slug"},
		{"slug with a slash", func(in *domain.IdentityProviderInput) { in.Slug = ptrTo("a/b") }, "slug"},
		{"no display name", func(in *domain.IdentityProviderInput) { in.DisplayName = ptrTo(" ") }, "displayName"},
		{"unknown kind", func(in *domain.IdentityProviderInput) { in.Kind = ptrTo("saml") }, "kind"},
		{"oidc without issuer", func(in *domain.IdentityProviderInput) { in.Issuer = nil }, "issuer"},
		{"http issuer", func(in *domain.IdentityProviderInput) { in.Issuer = ptrTo("http://login.acme.example") }, "issuer"},
		{"issuer with a query", func(in *domain.IdentityProviderInput) { in.Issuer = ptrTo("https://a.example/?x=1") }, "issuer"},
		{"issuer with a fragment", func(in *domain.IdentityProviderInput) { in.Issuer = ptrTo("https://a.example/#x") }, "issuer"},
		{"relative issuer", func(in *domain.IdentityProviderInput) { in.Issuer = ptrTo("/issuer") }, "issuer"},
		{"no client id", func(in *domain.IdentityProviderInput) { in.ClientID = nil }, "clientId"},
		{"empty secret", func(in *domain.IdentityProviderInput) { in.ClientSecret = ptrTo("") }, "clientSecret"},
		{"a scope with a space", func(in *domain.IdentityProviderInput) { in.Scopes = []string{"openid email"} }, "scopes"},
		{"a domain with an @", func(in *domain.IdentityProviderInput) { in.AllowedDomains = []string{"a@b.example"} }, "allowedDomains"},
		{"github endpoints on oidc", func(in *domain.IdentityProviderInput) { in.AuthURL = ptrTo("https://gh.example/auth") }, "authUrl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := oidcProviderInput()
			tt.change(&in)
			_, err := domain.NewIdentityProvider(in, providerNow)
			var verr *domain.ValidationError
			if !errors.As(err, &verr) || !slices.ContainsFunc(verr.Fields, func(f domain.FieldError) bool { return f.Field == tt.field }) {
				t.Fatalf("error = %v, want a validation error at %s", err, tt.field)
			}
		})
	}
	// A loopback issuer may be http (a provider on the same machine, tests).
	in := oidcProviderInput()
	in.Issuer = ptrTo("http://127.0.0.1:9000")
	if _, err := domain.NewIdentityProvider(in, providerNow); err != nil {
		t.Errorf("a loopback http issuer: %v", err)
	}
}

// A change replaces what it names, keeps the rest, never the slug or the
// kind, and names what changed (the secret without comparing it).
func TestIdentityProvider_Apply(t *testing.T) {
	p, err := domain.NewIdentityProvider(oidcProviderInput(), providerNow)
	if err != nil {
		t.Fatal(err)
	}
	later := providerNow.Add(time.Hour)
	changed, err := p.Apply(domain.IdentityProviderInput{DisplayName: ptrTo("Acme"), AllowedDomains: []string{"ACME.example", "acme.example"},
		ClientSecret: ptrTo("new"), Enabled: ptrTo(false)}, later)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changed, []string{"displayName", "allowedDomains", "enabled", "clientSecret"}) {
		t.Errorf("changed = %v", changed)
	}
	if p.DisplayName != "Acme" || !slices.Equal(p.AllowedDomains, []string{"acme.example"}) || p.Enabled ||
		p.ClientSecret != "new" || p.Issuer != "https://login.acme.example" || !p.UpdatedAt.Equal(later) {
		t.Errorf("applied = %+v", p)
	}
	before := p
	for name, in := range map[string]domain.IdentityProviderInput{
		"slug": {Slug: ptrTo("other")}, "kind": {Kind: ptrTo("github")}, "issuer": {Issuer: ptrTo("")},
	} {
		if _, err := p.Apply(in, later); err == nil {
			t.Errorf("a change of %s was taken", name)
		}
	}
	if p.DisplayName != before.DisplayName || p.Issuer != before.Issuer {
		t.Error("a refused change changed the provider")
	}
}

// Check judges each field's form alone: what a change holds, whatever
// provider it is applied to.
func TestIdentityProviderInput_Check(t *testing.T) {
	if err := (domain.IdentityProviderInput{Slug: ptrTo("other"), Kind: ptrTo("github"), Enabled: ptrTo(false)}).Check(); err != nil {
		t.Errorf("well-formed fields: %v", err)
	}
	var verr *domain.ValidationError
	err := domain.IdentityProviderInput{Slug: ptrTo("Bad"), Issuer: ptrTo("http://sso.example"), Scopes: []string{"a b"}}.Check()
	if !errors.As(err, &verr) || len(verr.Fields) != 3 {
		t.Fatalf("Check = %v, want the slug, the issuer and the scopes", err)
	}
}

// allowedDomains is an exact match on the email's domain.
func TestIdentityProvider_AllowsEmailDomain(t *testing.T) {
	p := domain.IdentityProvider{AllowedDomains: []string{"acme.example"}}
	for email, want := range map[domain.Email]bool{"ada@acme.example": true, "ada@ACME.example": true,
		"ada@sub.acme.example": false, "ada@acme.example.evil": false, "acme.example": false} {
		if got := p.AllowsEmailDomain(email); got != want {
			t.Errorf("%s: %v, want %v", email, got, want)
		}
	}
	if !(domain.IdentityProvider{}).AllowsEmailDomain("x@any.example") {
		t.Error("a provider without domains refused one")
	}
}
