package web

import (
	"net/url"
	"strings"

	"github.com/userd/userd/domain"
)

// The fields of the client forms: the API's names (domain.FieldClient…),
// so that a use case's ValidationError lands beside its input, except the
// type, whose name the audit filter's input has already ("type").
const (
	fieldClientName       = domain.FieldClientName
	fieldClientType       = "clientType"
	fieldRedirectURIs     = domain.FieldRedirectURIs
	fieldPostLogoutURIs   = domain.FieldPostLogoutRedirectURIs
	fieldGrantTypes       = domain.FieldGrantTypes
	fieldScopes           = domain.FieldScopes
	fieldFirstParty       = domain.FieldFirstParty
	fieldIDTokenAlg       = domain.FieldIDTokenSigningAlg
	firstPartyCheckedForm = "yes"
)

// clientFields maps the use case's field names to the inputs' ids.
var clientFields = map[string]string{
	domain.FieldClientName: fieldClientName, domain.FieldClientType: fieldClientType,
	domain.FieldRedirectURIs: fieldRedirectURIs, domain.FieldPostLogoutRedirectURIs: fieldPostLogoutURIs,
	domain.FieldGrantTypes: fieldGrantTypes, domain.FieldScopes: fieldScopes,
	domain.FieldFirstParty: fieldFirstParty, domain.FieldIDTokenSigningAlg: fieldIDTokenAlg,
}

// clientFormData is the create or edit form of a client, filled from the
// client, the defaults, or what was posted.
type clientFormData struct {
	Name, RedirectURIs, PostLogoutURIs string
	// Types is offered at creation only: a client's type is fixed.
	Types      []choice
	Grants     []choice
	Scopes     []choice
	Algs       []choice
	FirstParty bool
}

// choice is one checkbox or radio button.
type choice struct {
	ID, Value, Label string
	Checked          bool
}

// grantLabels and the others say what each choice is.
var (
	grantLabels = map[domain.OAuthGrantType]string{
		domain.GrantAuthorizationCode: "authorization_code: signs people in (code flow with PKCE)",
		domain.GrantRefreshToken:      "refresh_token: stays signed in (needs authorization_code)",
		domain.GrantClientCredentials: "client_credentials: a service acting as itself (confidential only)",
	}
	typeLabels = []choice{
		{Value: string(domain.OAuthClientConfidential), Label: "Confidential: runs on a server and keeps a secret"},
		{Value: string(domain.OAuthClientPublic), Label: "Public: a browser or native app, without a secret"},
	}
	algLabels = []choice{
		{Value: string(domain.IDTokenRS256), Label: "RS256 (every OpenID client supports it)"},
		{Value: string(domain.IDTokenEdDSA), Label: "EdDSA"},
	}
)

// newClientForm fills the form from c, the values a form shows first.
func newClientForm(c domain.OAuthClient, create bool) clientFormData {
	d := clientFormData{Name: c.Name, RedirectURIs: strings.Join(c.RedirectURIs, "\n"),
		PostLogoutURIs: strings.Join(c.PostLogoutRedirectURIs, "\n"), FirstParty: c.FirstParty}
	if create {
		for _, t := range typeLabels {
			t.ID, t.Checked = "type-"+t.Value, t.Value == string(c.Type)
			d.Types = append(d.Types, t)
		}
	}
	for _, g := range domain.OAuthGrantTypes {
		d.Grants = append(d.Grants, choice{ID: "grant-" + string(g), Value: string(g), Label: grantLabels[g],
			Checked: c.HasGrant(g)})
	}
	for _, s := range domain.OAuthScopes {
		d.Scopes = append(d.Scopes, choice{ID: "scope-" + string(s), Value: string(s),
			Label: string(s) + ": " + scopeWords[s], Checked: c.AllowsScope(s)})
	}
	for _, a := range algLabels {
		a.ID, a.Checked = "alg-"+a.Value, a.Value == string(c.IDTokenSigningAlg)
		d.Algs = append(d.Algs, a)
	}
	return d
}

// defaultClient is what the create form shows first: the contract's
// defaults, confidential.
func defaultClient() domain.OAuthClient {
	return domain.OAuthClient{Type: domain.OAuthClientConfidential, GrantTypes: domain.DefaultOAuthGrantTypes,
		Scopes: domain.DefaultOAuthScopes, IDTokenSigningAlg: domain.DefaultIDTokenAlg}
}

// postedClient is the client as the form describes it, to show the form
// again after a refusal (the use case judged it, not this).
func postedClient(form url.Values) domain.OAuthClient {
	c := domain.OAuthClient{Name: form.Get(fieldClientName), Type: domain.OAuthClientType(form.Get(fieldClientType)),
		RedirectURIs: lines(form.Get(fieldRedirectURIs)), PostLogoutRedirectURIs: lines(form.Get(fieldPostLogoutURIs)),
		FirstParty: form.Get(fieldFirstParty) == firstPartyCheckedForm, IDTokenSigningAlg: domain.IDTokenAlg(form.Get(fieldIDTokenAlg))}
	for _, g := range form[fieldGrantTypes] {
		c.GrantTypes = append(c.GrantTypes, domain.OAuthGrantType(g))
	}
	for _, s := range form[fieldScopes] {
		c.Scopes = append(c.Scopes, domain.OAuthScope(s))
	}
	return c
}

// clientInput is the use case's input from the form: every field
// present (an unticked list is an empty one, which the use case
// refuses), the type at creation only.
func clientInput(form url.Values, create bool) domain.OAuthClientInput {
	name, alg := form.Get(fieldClientName), form.Get(fieldIDTokenAlg)
	firstParty := form.Get(fieldFirstParty) == firstPartyCheckedForm
	in := domain.OAuthClientInput{Name: &name, RedirectURIs: lines(form.Get(fieldRedirectURIs)),
		PostLogoutRedirectURIs: lines(form.Get(fieldPostLogoutURIs)), GrantTypes: values(form[fieldGrantTypes]),
		Scopes: values(form[fieldScopes]), FirstParty: &firstParty}
	if alg != "" {
		in.IDTokenSigningAlg = &alg
	}
	if create {
		if typ := form.Get(fieldClientType); typ != "" {
			in.Type = &typ
		}
	}
	return in
}

// lines are the non-blank lines of a textarea, trimmed: one URI a line.
// Never nil: an empty textarea is an empty list, which is present.
func lines(text string) []string {
	out := []string{}
	for l := range strings.Lines(text) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// values is a form's list, never nil.
func values(vs []string) []string {
	if vs == nil {
		return []string{}
	}
	return vs
}

// areaView is a textarea of a page's form, for the "textarea" partial.
type areaView struct {
	Page                   page
	ID, Label, Hint, Value string
	// Rows is the textarea's height in lines; 0 is 3.
	Rows int
}

// TextArea describes a textarea of the page's form: its name is its id.
func (pg page) TextArea(id, label, hint, value string) areaView {
	return areaView{Page: pg, ID: id, Label: label, Hint: hint, Value: value}
}

// Tall sets the textarea's height in lines.
func (a areaView) Tall(rows int) areaView { a.Rows = rows; return a }

// choicesView is a fieldset of checkboxes or radio buttons, for the
// "choices" partial: its inputs' name is its id.
type choicesView struct {
	Page            page
	ID, Label, Type string
	Choices         []choice
}

// Choices describes a fieldset of the page's form.
func (pg page) Choices(id, label, typ string, choices []choice) choicesView {
	return choicesView{Page: pg, ID: id, Label: label, Type: typ, Choices: choices}
}
