package domain

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// The fields of an identity provider, as the API names them.
const (
	FieldProviderSlug               = "slug"
	FieldProviderDisplayName        = "displayName"
	FieldProviderKind               = "kind"
	FieldProviderIssuer             = "issuer"
	FieldProviderClientID           = "clientId"
	FieldProviderClientSecret       = "clientSecret" //nolint:gosec // G101: a field's name, not a credential
	FieldProviderScopes             = "scopes"
	FieldProviderAllowedDomains     = "allowedDomains"
	FieldProviderAutoCreate         = "autoCreate"
	FieldProviderTrustEmailVerified = "trustEmailVerified"
	FieldProviderEnabled            = "enabled"
	FieldProviderAuthURL            = "authUrl"
	FieldProviderTokenURL           = "tokenUrl"
	FieldProviderAPIURL             = "apiUrl"
)

// Bounds of a provider's lists and strings.
const (
	maxProviderScopes   = 20
	maxProviderDomains  = 50
	maxProviderValueLen = 256
	maxProviderSecret   = 1024
)

// IdentityProviderInput is a provider to create, or a change of one: a
// nil field is absent (kept on a change; the default on a create).
type IdentityProviderInput struct {
	Slug               *string
	DisplayName        *string
	Kind               *string
	Issuer             *string
	ClientID           *string
	ClientSecret       *string
	Scopes             []string
	AllowedDomains     []string
	AutoCreate         *bool
	TrustEmailVerified *bool
	Enabled            *bool
	AuthURL            *string
	TokenURL           *string
	APIURL             *string
}

// Check reports every field of in whose form is wrong, whatever provider
// it is applied to: what can be judged before the provider is read (the
// contract's order: the request's shape before the caller's right and
// the provider's existence). Apply judges the rest.
func (in IdentityProviderInput) Check() error {
	verr := &ValidationError{}
	in.applyTo(&IdentityProvider{}, verr)
	return verr.Err()
}

// NewIdentityProvider makes a provider of in, at now: slug, displayName,
// kind, clientId and clientSecret are required, and an issuer for oidc;
// the rest take the contract's defaults. Every refused field is in the
// *ValidationError.
func NewIdentityProvider(in IdentityProviderInput, now time.Time) (IdentityProvider, error) {
	verr := &ValidationError{}
	for _, f := range []struct {
		name  string
		value *string
	}{{FieldProviderSlug, in.Slug}, {FieldProviderDisplayName, in.DisplayName}, {FieldProviderKind, in.Kind},
		{FieldProviderClientID, in.ClientID}, {FieldProviderClientSecret, in.ClientSecret}} {
		if f.value == nil {
			verr.Add(f.name, "is required")
		}
	}
	p := IdentityProvider{AutoCreate: true, TrustEmailVerified: true, Enabled: true, CreatedAt: now, UpdatedAt: now}
	in.applyTo(&p, verr)
	if p.Kind == IdentityProviderGitHub {
		p.AuthURL = cmp.Or(p.AuthURL, GitHubAuthURL)
		p.TokenURL = cmp.Or(p.TokenURL, GitHubTokenURL)
		p.APIURL = cmp.Or(p.APIURL, GitHubAPIURL)
	}
	if p.Scopes == nil {
		p.Scopes = slices.Clone(DefaultOIDCProviderScopes)
		if p.Kind == IdentityProviderGitHub {
			p.Scopes = slices.Clone(DefaultGitHubProviderScopes)
		}
	}
	if p.AllowedDomains == nil {
		p.AllowedDomains = []string{}
	}
	if err := verr.Err(); err != nil {
		return IdentityProvider{}, err
	}
	if err := p.validate(); err != nil {
		return IdentityProvider{}, err
	}
	return p, nil
}

// Apply changes p by in at now: fields present are replaced (a list
// whole), absent ones kept, and the whole is judged again. The slug and
// the kind cannot change. It returns the names of the fields that
// changed (clientSecret when one was given: it is never compared).
func (p *IdentityProvider) Apply(in IdentityProviderInput, now time.Time) ([]string, error) {
	verr := &ValidationError{}
	if in.Slug != nil && *in.Slug != p.Slug {
		verr.Add(FieldProviderSlug, "cannot change")
	}
	if in.Kind != nil && IdentityProviderKind(*in.Kind) != p.Kind {
		verr.Add(FieldProviderKind, "cannot change")
	}
	next := *p
	next.Scopes, next.AllowedDomains = slices.Clone(p.Scopes), slices.Clone(p.AllowedDomains)
	in.applyTo(&next, verr)
	if err := verr.Err(); err != nil {
		return nil, err
	}
	if err := next.validate(); err != nil {
		return nil, err
	}
	changed := p.changedFields(next)
	if in.ClientSecret != nil {
		changed = append(changed, FieldProviderClientSecret)
	}
	if len(changed) > 0 {
		next.UpdatedAt = now
	}
	*p = next
	return changed, nil
}

// applyTo checks each present field of in on its own and sets it on p,
// adding its problems to verr.
func (in IdentityProviderInput) applyTo(p *IdentityProvider, verr *ValidationError) {
	if in.Slug != nil {
		if s, msg := ParseIdentityProviderSlug(*in.Slug); msg != "" {
			verr.Add(FieldProviderSlug, msg)
		} else {
			p.Slug = s
		}
	}
	if in.DisplayName != nil {
		if name, msg := ParseName(*in.DisplayName); msg != "" {
			verr.Add(FieldProviderDisplayName, msg)
		} else {
			p.DisplayName = name
		}
	}
	if in.Kind != nil {
		if k := IdentityProviderKind(*in.Kind); slices.Contains(IdentityProviderKinds, k) {
			p.Kind = k
		} else {
			verr.Add(FieldProviderKind, "must be oidc or github")
		}
	}
	setString(&p.ClientID, in.ClientID, FieldProviderClientID, maxProviderValueLen, verr)
	setString(&p.ClientSecret, in.ClientSecret, FieldProviderClientSecret, maxProviderSecret, verr)
	setURL(&p.Issuer, in.Issuer, FieldProviderIssuer, true, verr)
	setURL(&p.AuthURL, in.AuthURL, FieldProviderAuthURL, false, verr)
	setURL(&p.TokenURL, in.TokenURL, FieldProviderTokenURL, false, verr)
	setURL(&p.APIURL, in.APIURL, FieldProviderAPIURL, false, verr)
	if in.Scopes != nil {
		p.Scopes = parseProviderScopes(in.Scopes, verr)
	}
	if in.AllowedDomains != nil {
		p.AllowedDomains = parseEmailDomains(in.AllowedDomains, verr)
	}
	for _, b := range []struct {
		to   *bool
		from *bool
	}{{&p.AutoCreate, in.AutoCreate}, {&p.TrustEmailVerified, in.TrustEmailVerified}, {&p.Enabled, in.Enabled}} {
		if b.from != nil {
			*b.to = *b.from
		}
	}
}

// validate judges the provider whole: what each kind needs.
func (p IdentityProvider) validate() error {
	verr := &ValidationError{}
	switch p.Kind {
	case IdentityProviderOIDC:
		if p.Issuer == "" {
			verr.Add(FieldProviderIssuer, "is required for an oidc provider")
		}
		for field, v := range map[string]string{FieldProviderAuthURL: p.AuthURL, FieldProviderTokenURL: p.TokenURL,
			FieldProviderAPIURL: p.APIURL} {
			if v != "" {
				verr.Add(field, "is for a github provider only: an oidc provider's endpoints come from its discovery")
			}
		}
	case IdentityProviderGitHub:
		if p.Issuer != "" {
			verr.Add(FieldProviderIssuer, "is for an oidc provider only")
		}
	}
	slices.SortFunc(verr.Fields, func(a, b FieldError) int { return strings.Compare(a.Field, b.Field) })
	return verr.Err()
}

// changedFields names the fields in which next differs from p, the
// secret aside.
func (p IdentityProvider) changedFields(next IdentityProvider) []string {
	var out []string
	for _, f := range []struct {
		name string
		same bool
	}{
		{FieldProviderDisplayName, p.DisplayName == next.DisplayName},
		{FieldProviderIssuer, p.Issuer == next.Issuer},
		{FieldProviderClientID, p.ClientID == next.ClientID},
		{FieldProviderScopes, slices.Equal(p.Scopes, next.Scopes)},
		{FieldProviderAllowedDomains, slices.Equal(p.AllowedDomains, next.AllowedDomains)},
		{FieldProviderAutoCreate, p.AutoCreate == next.AutoCreate},
		{FieldProviderTrustEmailVerified, p.TrustEmailVerified == next.TrustEmailVerified},
		{FieldProviderEnabled, p.Enabled == next.Enabled},
		{FieldProviderAuthURL, p.AuthURL == next.AuthURL},
		{FieldProviderTokenURL, p.TokenURL == next.TokenURL},
		{FieldProviderAPIURL, p.APIURL == next.APIURL},
	} {
		if !f.same {
			out = append(out, f.name)
		}
	}
	return out
}

// setString sets *to from a present from: trimmed, not empty, at most
// max bytes, no control characters.
func setString(to, from *string, field string, maxLen int, verr *ValidationError) {
	if from == nil {
		return
	}
	s := strings.TrimSpace(*from)
	switch {
	case s == "":
		verr.Add(field, "must not be empty")
	case len(s) > maxLen:
		verr.Add(field, "is too long")
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		verr.Add(field, "must not contain control characters")
	default:
		*to = s
	}
}

// setURL sets *to from a present from: a provider URL, or empty to clear
// it.
func setURL(to, from *string, field string, issuer bool, verr *ValidationError) {
	if from == nil {
		return
	}
	if *from == "" {
		*to = ""
		return
	}
	if u, msg := parseProviderURL(*from, issuer); msg != "" {
		verr.Add(field, msg)
	} else {
		*to = u
	}
}

// parseProviderScopes keeps each scope once, in the order given: each a
// scope-token of RFC 6749 §3.3 (printable ASCII but space, '"' and '\').
func parseProviderScopes(scopes []string, verr *ValidationError) []string {
	if len(scopes) > maxProviderScopes {
		verr.Add(FieldProviderScopes, "may hold at most 20 scopes")
		return nil
	}
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		if s == "" || len(s) > maxProviderValueLen || strings.ContainsFunc(s, func(r rune) bool {
			return r <= 0x20 || r >= 0x7f || r == '"' || r == '\\'
		}) {
			verr.Add(FieldProviderScopes, "each must be a scope: printable ASCII without spaces, quotes or backslashes")
			return nil
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// parseEmailDomains keeps each domain once, in lower case: each a host
// name an email may have after its @.
func parseEmailDomains(domains []string, verr *ValidationError) []string {
	if len(domains) > maxProviderDomains {
		verr.Add(FieldProviderAllowedDomains, "may hold at most 50 domains")
		return nil
	}
	out := make([]string, 0, len(domains))
	for _, d := range domains {
		d = strings.ToLower(strings.TrimSpace(d))
		if _, msg := ParseEmail("x@" + d); msg != "" || d == "" || strings.ContainsAny(d, "@ ") {
			verr.Add(FieldProviderAllowedDomains, "each must be an email domain, such as example.com")
			return nil
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}
