package web

import (
	"net/url"
	"slices"
	"strings"

	"github.com/userd/userd/domain"
)

// The fields of the provider forms are the API's names
// (domain.FieldProvider…): a use case's ValidationError lands beside its
// input. A checkbox sends idpCheckedForm when ticked.
const idpCheckedForm = "yes"

// adminIdpFields maps the use case's field names to the inputs' ids: the
// same names, every one of which the create form has.
var adminIdpFields = map[string]string{
	domain.FieldProviderSlug: domain.FieldProviderSlug, domain.FieldProviderDisplayName: domain.FieldProviderDisplayName,
	domain.FieldProviderKind: domain.FieldProviderKind, domain.FieldProviderIssuer: domain.FieldProviderIssuer,
	domain.FieldProviderClientID: domain.FieldProviderClientID, domain.FieldProviderClientSecret: domain.FieldProviderClientSecret,
	domain.FieldProviderScopes: domain.FieldProviderScopes, domain.FieldProviderAllowedDomains: domain.FieldProviderAllowedDomains,
	domain.FieldProviderAutoCreate: domain.FieldProviderAutoCreate, domain.FieldProviderEnabled: domain.FieldProviderEnabled,
	domain.FieldProviderTrustEmailVerified: domain.FieldProviderTrustEmailVerified,
	domain.FieldProviderAuthURL:            domain.FieldProviderAuthURL, domain.FieldProviderTokenURL: domain.FieldProviderTokenURL,
	domain.FieldProviderAPIURL: domain.FieldProviderAPIURL,
}

// adminIdpFieldNames name the inputs in the sentences of their errors.
var adminIdpFieldNames = map[string]string{ //nolint:gosec // G101: words about fields ("The client secret"), no credential
	domain.FieldProviderSlug: "The slug", domain.FieldProviderDisplayName: "The display name",
	domain.FieldProviderKind: "The kind", domain.FieldProviderIssuer: "The issuer",
	domain.FieldProviderClientID: "The client id", domain.FieldProviderClientSecret: "The client secret",
	domain.FieldProviderScopes: "The scopes", domain.FieldProviderAllowedDomains: "The allowed domains",
	domain.FieldProviderAuthURL: "The authorization URL", domain.FieldProviderTokenURL: "The token URL",
	domain.FieldProviderAPIURL: "The API URL",
}

// idpKindLabels say what each kind is, in the list and the create form.
var idpKindLabels = map[domain.IdentityProviderKind]string{
	domain.IdentityProviderOIDC:   "OpenID Connect",
	domain.IdentityProviderGitHub: "GitHub",
}

// idpKindLabel is a kind in words, or as it is when it has none.
func idpKindLabel(k domain.IdentityProviderKind) string {
	if l, ok := idpKindLabels[k]; ok {
		return l
	}
	return string(k)
}

// adminIdpForm is the create or edit form of a provider, filled from
// the provider, the defaults, or what was posted. The client secret is
// never in it: the form's secret input is always blank.
type adminIdpForm struct {
	// Create is the create form: the slug and the kind are asked (they
	// are fixed afterwards), and a secret is required.
	Create                              bool
	Slug, DisplayName, Issuer, ClientID string
	Scopes, AllowedDomains              string
	AuthURL, TokenURL, APIURL           string
	AutoCreate, TrustEmailVerified      bool
	Enabled                             bool
	// Kinds is offered at creation only.
	Kinds []choice
	// OIDC and GitHub say which kind's inputs the form has: both at
	// creation, the provider's own afterwards.
	OIDC, GitHub bool
}

// newAdminIdpForm fills the form from ip, the values a form shows first.
func newAdminIdpForm(ip domain.IdentityProvider, create bool) adminIdpForm {
	d := adminIdpForm{Create: create, Slug: ip.Slug, DisplayName: ip.DisplayName, Issuer: ip.Issuer, ClientID: ip.ClientID,
		Scopes: strings.Join(ip.Scopes, " "), AllowedDomains: strings.Join(ip.AllowedDomains, " "),
		AuthURL: ip.AuthURL, TokenURL: ip.TokenURL, APIURL: ip.APIURL,
		AutoCreate: ip.AutoCreate, TrustEmailVerified: ip.TrustEmailVerified, Enabled: ip.Enabled,
		OIDC: create || ip.Kind == domain.IdentityProviderOIDC, GitHub: create || ip.Kind == domain.IdentityProviderGitHub}
	if create {
		for _, k := range domain.IdentityProviderKinds {
			d.Kinds = append(d.Kinds, choice{ID: "kind-" + string(k), Value: string(k), Label: idpKindChoices[k],
				Checked: k == ip.Kind})
		}
	}
	return d
}

// IssuerHint says what the issuer is; the create form, which has every
// kind's inputs, says which kind it is for.
func (f adminIdpForm) IssuerHint() string {
	const hint = "he provider's issuer URL, whose /.well-known/openid-configuration userd reads: https, or http on a loopback host."
	if f.GitHub {
		return "OpenID Connect only: t" + hint
	}
	return "T" + hint
}

// idpKindChoices are the create form's kinds.
var idpKindChoices = map[domain.IdentityProviderKind]string{
	domain.IdentityProviderOIDC:   "OpenID Connect: any OpenID provider, by its issuer (Google, Microsoft Entra ID, Okta, Keycloak…)",
	domain.IdentityProviderGitHub: "GitHub, or a GitHub Enterprise server",
}

// defaultAdminIdp is what the create form shows first: the contract's
// defaults, OpenID Connect.
func defaultAdminIdp() domain.IdentityProvider {
	return domain.IdentityProvider{Kind: domain.IdentityProviderOIDC, AutoCreate: true, TrustEmailVerified: true, Enabled: true}
}

// postedAdminIdp is the provider as the form describes it, to show the
// form again after a refusal (the use case judged it, not this); kind is
// the stored provider's on an edit, empty at creation.
func postedAdminIdp(form url.Values, kind domain.IdentityProviderKind) domain.IdentityProvider {
	if kind == "" {
		kind = domain.IdentityProviderKind(form.Get(domain.FieldProviderKind))
	}
	return domain.IdentityProvider{Slug: form.Get(domain.FieldProviderSlug), DisplayName: form.Get(domain.FieldProviderDisplayName),
		Kind: kind, Issuer: form.Get(domain.FieldProviderIssuer), ClientID: form.Get(domain.FieldProviderClientID),
		Scopes: listWords(form.Get(domain.FieldProviderScopes)), AllowedDomains: listWords(form.Get(domain.FieldProviderAllowedDomains)),
		AuthURL: form.Get(domain.FieldProviderAuthURL), TokenURL: form.Get(domain.FieldProviderTokenURL),
		APIURL:     form.Get(domain.FieldProviderAPIURL),
		AutoCreate: form.Get(domain.FieldProviderAutoCreate) == idpCheckedForm, Enabled: form.Get(domain.FieldProviderEnabled) == idpCheckedForm,
		TrustEmailVerified: form.Get(domain.FieldProviderTrustEmailVerified) == idpCheckedForm}
}

// adminIdpInput is the use case's input from the form. At creation every
// field is present but the blank scopes (the kind's defaults); on an edit
// (kind is the stored provider's) the fields of the provider's kind, and
// the secret only when one was typed. A github provider's blank endpoint
// is GitHub's own, as at creation, and blank scopes the kind's defaults.
func adminIdpInput(form url.Values, kind domain.IdentityProviderKind, create bool) domain.IdentityProviderInput {
	str := func(field string) *string { s := form.Get(field); return &s }
	check := func(field string) *bool { b := form.Get(field) == idpCheckedForm; return &b }
	in := domain.IdentityProviderInput{DisplayName: str(domain.FieldProviderDisplayName),
		ClientID: str(domain.FieldProviderClientID), AllowedDomains: listWords(form.Get(domain.FieldProviderAllowedDomains)),
		AutoCreate: check(domain.FieldProviderAutoCreate), TrustEmailVerified: check(domain.FieldProviderTrustEmailVerified),
		Enabled: check(domain.FieldProviderEnabled)}
	if scopes := listWords(form.Get(domain.FieldProviderScopes)); len(scopes) > 0 {
		in.Scopes = scopes
	}
	if secret := form.Get(domain.FieldProviderClientSecret); create || secret != "" {
		in.ClientSecret = &secret
	}
	if create {
		in.Slug = str(domain.FieldProviderSlug)
		if k := form.Get(domain.FieldProviderKind); k != "" {
			in.Kind = &k
		}
		in.Issuer = str(domain.FieldProviderIssuer)
		in.AuthURL, in.TokenURL, in.APIURL = str(domain.FieldProviderAuthURL), str(domain.FieldProviderTokenURL),
			str(domain.FieldProviderAPIURL)
		return in
	}
	switch kind {
	case domain.IdentityProviderOIDC:
		in.Issuer = str(domain.FieldProviderIssuer)
		if in.Scopes == nil {
			in.Scopes = slices.Clone(domain.DefaultOIDCProviderScopes)
		}
	case domain.IdentityProviderGitHub:
		endpoint := func(field, fallback string) *string {
			s := strings.TrimSpace(form.Get(field))
			if s == "" {
				s = fallback
			}
			return &s
		}
		in.AuthURL = endpoint(domain.FieldProviderAuthURL, domain.GitHubAuthURL)
		in.TokenURL = endpoint(domain.FieldProviderTokenURL, domain.GitHubTokenURL)
		in.APIURL = endpoint(domain.FieldProviderAPIURL, domain.GitHubAPIURL)
		if in.Scopes == nil {
			in.Scopes = slices.Clone(domain.DefaultGitHubProviderScopes)
		}
	}
	return in
}

// listWords are the values of a list typed on one line, separated by spaces
// or commas; never nil: a blank line is an empty list.
func listWords(text string) []string {
	out := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if out == nil {
		return []string{}
	}
	return out
}

// CheckBox describes a checkbox of the page's form, for the "check"
// partial: its name is its id, it sends idpCheckedForm when ticked.
func (pg page) CheckBox(id, label, hint string, checked bool) checkView {
	return checkView{Page: pg, ID: id, Label: label, Hint: hint, Checked: checked}
}

// checkView is one checkbox with its hint.
type checkView struct {
	Page            page
	ID, Label, Hint string
	Checked         bool
}
