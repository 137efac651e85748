package domain

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Field names of the validation errors about a client: its
// representation's names.
const (
	FieldClientName             = "name"
	FieldClientType             = "type"
	FieldRedirectURIs           = "redirectUris"
	FieldPostLogoutRedirectURIs = "postLogoutRedirectUris"
	FieldGrantTypes             = "grantTypes"
	FieldScopes                 = "scopes"
	FieldFirstParty             = "firstParty"
	FieldIDTokenSigningAlg      = "idTokenSigningAlg"
)

// OAuthClientInput is a client's settable fields as a caller gave them.
// A nil field is absent: at creation it takes its default, at an update
// it keeps its value. A list that is present may be empty.
type OAuthClientInput struct {
	Name                   *string
	Type                   *string
	RedirectURIs           []string
	PostLogoutRedirectURIs []string
	GrantTypes             []string
	Scopes                 []string
	FirstParty             *bool
	IDTokenSigningAlg      *string
}

// Defaults of a new client's absent fields (the contract's).
var (
	// DefaultOAuthGrantTypes: the code flow, with refresh tokens.
	DefaultOAuthGrantTypes = []OAuthGrantType{GrantAuthorizationCode, GrantRefreshToken}
	// DefaultOAuthScopes: every scope.
	DefaultOAuthScopes = OAuthScopes
)

// DefaultIDTokenAlg signs the ID tokens of a client that names none.
const DefaultIDTokenAlg = IDTokenRS256

// Check reports every field of in whose form is wrong, whatever client it
// is applied to: what can be judged before the client is read (the
// contract's order: the request's shape before the caller's right and
// the client's existence). Apply judges the rest.
func (in OAuthClientInput) Check() error {
	var verr ValidationError
	in.parse(&verr)
	return verr.Err()
}

// NewOAuthClient makes the client that in describes, created at now: a
// fresh id, the defaults for the fields in leaves out (name and type are
// required), and for a confidential client a fresh secret, which it
// returns (empty for a public client): only its hash is kept. Every
// problem is reported in one *ValidationError.
func NewOAuthClient(in OAuthClientInput, now time.Time) (OAuthClient, string, error) {
	var verr ValidationError
	p := in.parse(&verr)
	if in.Name == nil {
		_, msg := ParseName("")
		verr.Add(FieldClientName, msg)
	}
	if in.Type == nil {
		verr.Add(FieldClientType, "is required: confidential or public")
	}
	c := OAuthClient{
		ID: NewOAuthClientID(now), RedirectURIs: []string{}, PostLogoutRedirectURIs: []string{},
		GrantTypes: slices.Clone(DefaultOAuthGrantTypes), Scopes: slices.Clone(DefaultOAuthScopes),
		IDTokenSigningAlg: DefaultIDTokenAlg, CreatedAt: now, UpdatedAt: now,
	}
	p.applyTo(&c)
	if err := verr.Err(); err != nil {
		return OAuthClient{}, "", err
	}
	if err := c.validate(); err != nil {
		return OAuthClient{}, "", err
	}
	secret := ""
	if !c.IsPublic() {
		secret, c.SecretHash = NewOAuthClientSecret()
	}
	return c, secret, nil
}

// Apply changes c at now by the fields present in in, and reports the
// names of those that changed (none: c is as it was, UpdatedAt too). The
// client's type is fixed: a confidential client holds a secret its app
// was given, a public one none. The whole client is judged again: a
// change that would leave it invalid changes nothing.
func (c *OAuthClient) Apply(in OAuthClientInput, now time.Time) ([]string, error) {
	var verr ValidationError
	p := in.parse(&verr)
	if p.typ != nil && *p.typ != c.Type {
		verr.Add(FieldClientType, "cannot be changed: create another client")
	}
	if err := verr.Err(); err != nil {
		return nil, err
	}
	next := *c
	p.applyTo(&next)
	if err := next.validate(); err != nil {
		return nil, err
	}
	changed := c.changedFields(next)
	if len(changed) > 0 {
		next.UpdatedAt = now
		*c = next
	}
	return changed, nil
}

// changedFields names the settable fields in which next differs from c.
func (c OAuthClient) changedFields(next OAuthClient) []string {
	var out []string
	add := func(differs bool, field string) {
		if differs {
			out = append(out, field)
		}
	}
	add(c.Name != next.Name, FieldClientName)
	add(!slices.Equal(c.RedirectURIs, next.RedirectURIs), FieldRedirectURIs)
	add(!slices.Equal(c.PostLogoutRedirectURIs, next.PostLogoutRedirectURIs), FieldPostLogoutRedirectURIs)
	add(!slices.Equal(c.GrantTypes, next.GrantTypes), FieldGrantTypes)
	add(!slices.Equal(c.Scopes, next.Scopes), FieldScopes)
	add(c.FirstParty != next.FirstParty, FieldFirstParty)
	add(c.IDTokenSigningAlg != next.IDTokenSigningAlg, FieldIDTokenSigningAlg)
	return out
}

// parsedClient is an OAuthClientInput whose present fields are valid on
// their own, in stored form; nil for absent or invalid ones.
type parsedClient struct {
	name       *string
	typ        *OAuthClientType
	redirects  []string
	postLogout []string
	grants     []OAuthGrantType
	scopes     []OAuthScope
	firstParty *bool
	idTokenAlg *IDTokenAlg
}

// parse checks each present field of in on its own, adding its problems to
// verr.
func (in OAuthClientInput) parse(verr *ValidationError) parsedClient {
	p := parsedClient{firstParty: in.FirstParty}
	if in.Name != nil {
		if name, msg := ParseName(*in.Name); msg != "" {
			verr.Add(FieldClientName, msg)
		} else {
			p.name = &name
		}
	}
	if in.Type != nil {
		switch t := OAuthClientType(*in.Type); t {
		case OAuthClientConfidential, OAuthClientPublic:
			p.typ = &t
		default:
			verr.Add(FieldClientType, "must be confidential or public")
		}
	}
	if in.RedirectURIs != nil {
		p.redirects = parseRedirectURIs(in.RedirectURIs, FieldRedirectURIs, verr)
	}
	if in.PostLogoutRedirectURIs != nil {
		p.postLogout = parseRedirectURIs(in.PostLogoutRedirectURIs, FieldPostLogoutRedirectURIs, verr)
	}
	if in.GrantTypes != nil {
		p.grants = parseVocabulary(in.GrantTypes, OAuthGrantTypes, FieldGrantTypes, "a grant type", verr)
	}
	if in.Scopes != nil {
		p.scopes = parseVocabulary(in.Scopes, OAuthScopes, FieldScopes, "a scope", verr)
	}
	if in.IDTokenSigningAlg != nil {
		switch a := IDTokenAlg(*in.IDTokenSigningAlg); a {
		case IDTokenRS256, IDTokenEdDSA:
			p.idTokenAlg = &a
		default:
			verr.Add(FieldIDTokenSigningAlg, "must be RS256 or EdDSA")
		}
	}
	return p
}

// applyTo sets the fields of c that p holds.
func (p parsedClient) applyTo(c *OAuthClient) {
	if p.name != nil {
		c.Name = *p.name
	}
	if p.typ != nil {
		c.Type = *p.typ
	}
	if p.redirects != nil {
		c.RedirectURIs = p.redirects
	}
	if p.postLogout != nil {
		c.PostLogoutRedirectURIs = p.postLogout
	}
	if p.grants != nil {
		c.GrantTypes = p.grants
	}
	if p.scopes != nil {
		c.Scopes = p.scopes
	}
	if p.firstParty != nil {
		c.FirstParty = *p.firstParty
	}
	if p.idTokenAlg != nil {
		c.IDTokenSigningAlg = *p.idTokenAlg
	}
}

// parseRedirectURIs checks a list of redirect URIs, each on its own
// (entries are counted from 1 in the messages), and returns it without
// repeated entries, in the order given: never nil, even empty; nil when
// it has a problem.
func parseRedirectURIs(uris []string, field string, verr *ValidationError) []string {
	if len(uris) > MaxRedirectURIs {
		verr.Add(field, "must hold at most "+strconv.Itoa(MaxRedirectURIs)+" URIs")
		return nil
	}
	out, ok := make([]string, 0, len(uris)), true
	for i, u := range uris {
		if _, msg := parseRedirectURI(u); msg != "" {
			verr.Add(field, "entry "+strconv.Itoa(i+1)+" "+msg)
			ok = false
		}
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	if !ok {
		return nil
	}
	return out
}

// parseVocabulary checks that every value of given is one of known (what
// names one, for the message), and returns them once each in the order of
// known; nil when one is not. An empty list is one value short.
func parseVocabulary[T ~string](given []string, known []T, field, what string, verr *ValidationError) []T {
	if len(given) == 0 {
		verr.Add(field, "must hold at least one value")
		return nil
	}
	names := make([]string, len(known))
	for i, k := range known {
		names[i] = string(k)
	}
	for _, g := range given {
		if !slices.Contains(names, g) {
			verr.Add(field, strconv.Quote(g)+" is not "+what+" (known: "+strings.Join(names, ", ")+")")
			return nil
		}
	}
	out := make([]T, 0, len(known))
	for _, k := range known {
		if slices.Contains(given, string(k)) {
			out = append(out, k)
		}
	}
	return out
}

// validate judges the client as a whole: the rules that tie its fields to
// one another.
func (c OAuthClient) validate() error {
	var verr ValidationError
	for _, f := range []struct {
		field string
		uris  []string
	}{{FieldRedirectURIs, c.RedirectURIs}, {FieldPostLogoutRedirectURIs, c.PostLogoutRedirectURIs}} {
		for i, u := range f.uris {
			if kind, _ := parseRedirectURI(u); kind == redirectPrivateUse && !c.IsPublic() {
				verr.Add(f.field, "entry "+strconv.Itoa(i+1)+" has a private-use scheme, which only a public (native) client may use")
			}
		}
	}
	if c.HasGrant(GrantClientCredentials) && c.IsPublic() {
		verr.Add(FieldGrantTypes, "client_credentials is for confidential clients only")
	}
	if c.HasGrant(GrantRefreshToken) && !c.HasGrant(GrantAuthorizationCode) {
		verr.Add(FieldGrantTypes, "refresh_token needs authorization_code: refresh tokens come from a code flow")
	}
	if c.HasGrant(GrantAuthorizationCode) && len(c.RedirectURIs) == 0 {
		verr.Add(FieldRedirectURIs, "must hold at least one URI for the authorization_code grant")
	}
	return verr.Err()
}
