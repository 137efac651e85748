package domain_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

var clientNow = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func str(s string) *string { return &s }

// clientInput is a valid input of the type typ: a name, and one redirect
// URI for the code flow of the defaults.
func clientInput(typ string, redirects ...string) domain.OAuthClientInput {
	if redirects == nil {
		redirects = []string{"https://app.example.com/callback"}
	}
	return domain.OAuthClientInput{Name: str("Grafana"), Type: str(typ), RedirectURIs: redirects}
}

// validationFields returns the fields of a *ValidationError, and fails on
// any other error.
func validationFields(t *testing.T, err error) []domain.FieldError {
	t.Helper()
	if err == nil {
		return nil
	}
	var verr *domain.ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error %v (%T), want a *ValidationError", err, err)
	}
	return verr.Fields
}

// wantField checks that err is a validation error naming field, with a
// message that holds msg, and no other field.
func wantField(t *testing.T, err error, field, msg string) {
	t.Helper()
	got := validationFields(t, err)
	if len(got) == 0 {
		t.Fatalf("no error; want %s: %q", field, msg)
	}
	for _, f := range got {
		if f.Field != field || !strings.Contains(f.Message, msg) {
			t.Errorf("field error %s: %q; want %s: %q", f.Field, f.Message, field, msg)
		}
	}
}

func TestParseOAuthClientID(t *testing.T) {
	t.Parallel()
	id := domain.NewOAuthClientID(clientNow)
	if got, err := domain.ParseOAuthClientID(id.String()); err != nil || got != id {
		t.Errorf("ParseOAuthClientID(%q) = %q, %v", id, got, err)
	}
	for _, bad := range []string{"", "me", strings.ToUpper(id.String()), id.String() + "0", "../../etc/passwd"} {
		if _, err := domain.ParseOAuthClientID(bad); !errors.Is(err, domain.ErrInvalidOAuthClientID) {
			t.Errorf("ParseOAuthClientID(%q) = %v, want ErrInvalidOAuthClientID", bad, err)
		}
	}
}

func TestNewOAuthClient_defaults_and_secret(t *testing.T) {
	t.Parallel()
	c, secret, err := domain.NewOAuthClient(clientInput("confidential"), clientNow)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := domain.ParseOAuthClientID(c.ID.String()); err != nil {
		t.Errorf("id %q: %v", c.ID, err)
	}
	if c.Name != "Grafana" || c.Type != domain.OAuthClientConfidential || c.FirstParty ||
		c.IDTokenSigningAlg != domain.IDTokenRS256 || !c.CreatedAt.Equal(clientNow) || !c.UpdatedAt.Equal(clientNow) ||
		!slices.Equal(c.GrantTypes, []domain.OAuthGrantType{domain.GrantAuthorizationCode, domain.GrantRefreshToken}) ||
		!slices.Equal(c.Scopes, domain.OAuthScopes) || len(c.PostLogoutRedirectURIs) != 0 || c.PostLogoutRedirectURIs == nil {
		t.Errorf("client %+v: not the contract's defaults", c)
	}
	if len(secret) != 43 || strings.ContainsAny(secret, "+/=") {
		t.Errorf("secret %q: want 43 characters of base64url", secret)
	}
	if c.SecretHash != domain.HashOAuthClientSecret(secret) || strings.Contains(c.SecretHash, secret) {
		t.Errorf("hash %q is not the secret's", c.SecretHash)
	}
	if !c.SecretMatches(secret) || c.SecretMatches(secret[:42]) || c.SecretMatches("") || c.SecretMatches(c.SecretHash) {
		t.Error("SecretMatches takes the wrong secret or refuses the right one")
	}
	other, otherSecret, err := domain.NewOAuthClient(clientInput("confidential"), clientNow)
	if err != nil || otherSecret == secret || other.ID == c.ID {
		t.Errorf("two clients share a secret or an id: %v", err)
	}

	pub, secret, err := domain.NewOAuthClient(clientInput("public"), clientNow)
	if err != nil || secret != "" || pub.SecretHash != "" || !pub.IsPublic() {
		t.Fatalf("public client %+v, secret %q, %v: want no secret", pub, secret, err)
	}
	if pub.SecretMatches("") || pub.SecretMatches(domain.HashOAuthClientSecret("")) {
		t.Error("a public client matches a secret")
	}
}

func TestNewOAuthClient_fields(t *testing.T) {
	t.Parallel()
	in := func(change func(*domain.OAuthClientInput)) domain.OAuthClientInput {
		i := clientInput("confidential")
		change(&i)
		return i
	}
	for _, tc := range []struct {
		name string
		// form: the field's form alone is wrong, which Check reports
		// before the client is read; the others need the whole client.
		form       bool
		in         domain.OAuthClientInput
		field, msg string
	}{
		{"no_name", false, in(func(i *domain.OAuthClientInput) { i.Name = nil }), "name", "must not be empty"},
		{"blank_name", true, in(func(i *domain.OAuthClientInput) { i.Name = str("  ") }), "name", "must not be empty"},
		{"long_name", true, in(func(i *domain.OAuthClientInput) { i.Name = str(strings.Repeat("x", 101)) }), "name", "at most 100"},
		{"invisible_name", true, in(func(i *domain.OAuthClientInput) { i.Name = str("Graf\u200bana") }), "name", "invisible"},
		{"no_type", false, in(func(i *domain.OAuthClientInput) { i.Type = nil }), "type", "required"},
		{"bad_type", true, in(func(i *domain.OAuthClientInput) { i.Type = str("Public") }), "type", "confidential or public"},
		{"unknown_grant", true, in(func(i *domain.OAuthClientInput) { i.GrantTypes = []string{"password"} }), "grantTypes", `"password" is not a grant type`},
		{"implicit_grant", true, in(func(i *domain.OAuthClientInput) { i.GrantTypes = []string{"implicit"} }), "grantTypes", "not a grant type"},
		{"no_grant", true, in(func(i *domain.OAuthClientInput) { i.GrantTypes = []string{} }), "grantTypes", "at least one"},
		{"refresh_alone", false, in(func(i *domain.OAuthClientInput) { i.GrantTypes = []string{"refresh_token"} }), "grantTypes", "needs authorization_code"},
		{"unknown_scope", true, in(func(i *domain.OAuthClientInput) { i.Scopes = []string{"openid", "admin"} }), "scopes", `"admin" is not a scope`},
		{"no_scope", true, in(func(i *domain.OAuthClientInput) { i.Scopes = []string{} }), "scopes", "at least one"},
		{"bad_alg", true, in(func(i *domain.OAuthClientInput) { i.IDTokenSigningAlg = str("HS256") }), "idTokenSigningAlg", "RS256 or EdDSA"},
		{"code_flow_without_redirect", false, in(func(i *domain.OAuthClientInput) { i.RedirectURIs = []string{} }), "redirectUris", "at least one URI"},
		{"code_flow_redirects_absent", false, in(func(i *domain.OAuthClientInput) { i.RedirectURIs = nil }), "redirectUris", "at least one URI"},
		{"too_many_redirects", true, in(func(i *domain.OAuthClientInput) {
			for n := range domain.MaxRedirectURIs + 1 {
				i.RedirectURIs = append(i.RedirectURIs, "https://app.example.com/"+strings.Repeat("a", n))
			}
		}), "redirectUris", "at most 20"},
		{"too_many_logouts", true, in(func(i *domain.OAuthClientInput) {
			i.PostLogoutRedirectURIs = slices.Repeat([]string{"https://app.example.com/"}, domain.MaxRedirectURIs+1)
		}), "postLogoutRedirectUris", "at most 20"},
		{"bad_logout", true, in(func(i *domain.OAuthClientInput) { i.PostLogoutRedirectURIs = []string{"http://app.example.com/bye"} }),
			"postLogoutRedirectUris", "entry 1 may use http only on a loopback host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := tc.in.Check(); tc.form {
				wantField(t, err, tc.field, tc.msg)
			} else if err != nil {
				t.Errorf("Check = %v; the form is right", err)
			}
			c, secret, err := domain.NewOAuthClient(tc.in, clientNow)
			wantField(t, err, tc.field, tc.msg)
			if c.ID != "" || secret != "" {
				t.Errorf("a refused input made client %+v, secret %q", c, secret)
			}
		})
	}
}

func TestNewOAuthClient_grants_and_scopes_are_canonical(t *testing.T) {
	t.Parallel()
	in := clientInput("confidential")
	in.GrantTypes = []string{"client_credentials", "refresh_token", "authorization_code", "refresh_token"}
	in.Scopes = []string{"offline_access", "openid", "openid"}
	in.FirstParty, in.IDTokenSigningAlg = new(bool), str("EdDSA")
	*in.FirstParty = true
	in.RedirectURIs = []string{"https://b.example.com/cb", "https://a.example.com/cb", "https://b.example.com/cb"}
	c, _, err := domain.NewOAuthClient(in, clientNow)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.GrantTypes, domain.OAuthGrantTypes) || !slices.Equal(c.Scopes, []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeOfflineAccess}) {
		t.Errorf("grants %v, scopes %v: want each once, in the canonical order", c.GrantTypes, c.Scopes)
	}
	if !slices.Equal(c.RedirectURIs, []string{"https://b.example.com/cb", "https://a.example.com/cb"}) {
		t.Errorf("redirect URIs %v: want each once, in the order given", c.RedirectURIs)
	}
	if !c.FirstParty || c.IDTokenSigningAlg != domain.IDTokenEdDSA || !c.HasGrant(domain.GrantClientCredentials) ||
		!c.AllowsScope(domain.ScopeOfflineAccess) || c.AllowsScope(domain.ScopeEmail) {
		t.Errorf("client %+v", c)
	}

	// A service account: client credentials alone, no redirect URI.
	svc := domain.OAuthClientInput{Name: str("Billing"), Type: str("confidential"), GrantTypes: []string{"client_credentials"}}
	if c, _, err := domain.NewOAuthClient(svc, clientNow); err != nil || c.HasGrant(domain.GrantAuthorizationCode) {
		t.Errorf("client credentials alone: %+v, %v", c, err)
	}
	svc.Type = str("public")
	_, _, err = domain.NewOAuthClient(svc, clientNow)
	wantField(t, err, "grantTypes", "client_credentials is for confidential clients only")
}

func TestOAuthClient_Apply(t *testing.T) {
	t.Parallel()
	orig, _, err := domain.NewOAuthClient(clientInput("confidential"), clientNow)
	if err != nil {
		t.Fatal(err)
	}
	later := clientNow.Add(time.Hour)

	c := orig
	fields, err := c.Apply(domain.OAuthClientInput{}, later)
	if err != nil || fields != nil || !c.UpdatedAt.Equal(clientNow) {
		t.Errorf("an empty change: %v, %v, updated %s", fields, err, c.UpdatedAt)
	}
	// The values it has already, the type among them: nothing changes.
	fields, err = c.Apply(domain.OAuthClientInput{Name: str(" Grafana "), Type: str("confidential"),
		Scopes: []string{"profiles", "openid", "profile", "email", "offline_access"}}, later)
	if err != nil || fields != nil || !c.UpdatedAt.Equal(clientNow) {
		t.Errorf("the same values: %v, %v", fields, err)
	}

	fields, err = c.Apply(domain.OAuthClientInput{Name: str("Grafana (prod)"), Scopes: []string{"openid", "email"},
		PostLogoutRedirectURIs: []string{"https://app.example.com/bye"}}, later)
	if err != nil || !slices.Equal(fields, []string{"name", "postLogoutRedirectUris", "scopes"}) {
		t.Fatalf("Apply = %v, %v", fields, err)
	}
	if c.Name != "Grafana (prod)" || !c.UpdatedAt.Equal(later) || !slices.Equal(c.RedirectURIs, orig.RedirectURIs) ||
		c.SecretHash != orig.SecretHash || c.ID != orig.ID || !c.CreatedAt.Equal(clientNow) ||
		!slices.Equal(c.GrantTypes, orig.GrantTypes) || c.IDTokenSigningAlg != orig.IDTokenSigningAlg {
		t.Errorf("after Apply: %+v; the absent fields must be kept", c)
	}

	before := c
	for _, tc := range []struct {
		name       string
		in         domain.OAuthClientInput
		field, msg string
	}{
		{"type_is_fixed", domain.OAuthClientInput{Type: str("public")}, "type", "cannot be changed"},
		{"bad_field", domain.OAuthClientInput{Name: str(""), RedirectURIs: []string{"ftp://x"}}, "", ""},
		// Judged with the fields kept: the code flow needs a redirect URI.
		{"code_flow_loses_its_redirects", domain.OAuthClientInput{RedirectURIs: []string{}}, "redirectUris", "at least one URI"},
		{"private_use_on_confidential", domain.OAuthClientInput{RedirectURIs: []string{"com.example.app:/cb"}}, "redirectUris", "only a public"},
		{"refresh_without_code", domain.OAuthClientInput{GrantTypes: []string{"refresh_token", "client_credentials"}}, "grantTypes", "needs authorization_code"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := before
			fields, err := c.Apply(tc.in, later.Add(time.Hour))
			if tc.field == "" {
				if got := validationFields(t, err); len(got) != 2 {
					t.Errorf("errors %v, want one for each bad field", got)
				}
			} else {
				wantField(t, err, tc.field, tc.msg)
			}
			if fields != nil || !slices.Equal(c.RedirectURIs, before.RedirectURIs) || c.Name != before.Name ||
				!slices.Equal(c.GrantTypes, before.GrantTypes) || !c.UpdatedAt.Equal(before.UpdatedAt) {
				t.Errorf("a refused change changed the client: %+v", c)
			}
		})
	}

	// A client without the code flow needs no redirect URI.
	fields, err = c.Apply(domain.OAuthClientInput{GrantTypes: []string{"client_credentials"}, RedirectURIs: []string{}}, later)
	if err != nil || !slices.Equal(fields, []string{"redirectUris", "grantTypes"}) || len(c.RedirectURIs) != 0 {
		t.Errorf("to client credentials alone: %v, %v, %+v", fields, err, c)
	}
}

func TestOAuthClient_RotateSecret(t *testing.T) {
	t.Parallel()
	c, old, err := domain.NewOAuthClient(clientInput("confidential"), clientNow)
	if err != nil {
		t.Fatal(err)
	}
	later := clientNow.Add(time.Minute)
	secret, err := c.RotateSecret(later)
	if err != nil || secret == old || len(secret) != 43 || !c.SecretMatches(secret) || c.SecretMatches(old) || !c.UpdatedAt.Equal(later) {
		t.Errorf("RotateSecret = %q, %v; old secret still matches: %v", secret, err, c.SecretMatches(old))
	}
	pub, _, err := domain.NewOAuthClient(clientInput("public"), clientNow)
	if err != nil {
		t.Fatal(err)
	}
	if secret, err := pub.RotateSecret(later); !errors.Is(err, domain.ErrPublicOAuthClient) || secret != "" || pub.SecretHash != "" {
		t.Errorf("RotateSecret of a public client = %q, %v; want ErrPublicOAuthClient", secret, err)
	}
}
