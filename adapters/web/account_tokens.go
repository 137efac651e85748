package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// accountTokensPath lists the visitor's personal access tokens
// (contract-identity.md, section 3), which the menu calls "Access
// tokens", with the form that makes one and a "Revoke…" link for each.
const accountTokensPath = AccountPrefix + "tokens"

// The token pages' templates.
const (
	tmplAccountTokens = "account_tokens.html"
	tmplAccountToken  = "account_token.html"
)

// The create form's fields: the API's names, so that the use case's
// ValidationError lands beside its input.
const (
	fieldTokenScopes  = application.FieldScopes
	fieldTokenExpires = application.FieldExpiresInDays
)

// scriptCopy is the copy button's script: the token is in a read-only
// input that a person can select and copy without it.
const scriptCopy = "copy.js"

// tokenLifetimes are the lifetimes the form offers, in days; the default
// (domain.DefaultPersonalTokenDays) is among them.
var tokenLifetimes = []int{7, 30, domain.DefaultPersonalTokenDays, domain.MaxPersonalTokenDays}

// tokenScopeChoices say what each scope lets a script do, in the
// contract's order.
var tokenScopeChoices = []struct {
	Scope       domain.TokenScope
	Label, Hint string
}{
	{domain.ScopeUsersRead, "Read (users:read)",
		"Read through the API what you can read: your account, and other users' if you are an administrator."},
	{domain.ScopeUsersWrite, "Read and change (users:write)",
		"Also change through the API what you can change. A token never changes your password, email address, " +
			"two-step verification, passkeys, sessions or tokens."},
}

// accountTokenNotices are what the page says after an action's redirect.
var accountTokenNotices = map[string]string{ //nolint:gosec // G101: sentences about tokens, no credential
	"token-revoked": "The token is revoked: it no longer works.",
	"token-gone":    "That token was revoked or had expired already.",
}

// tokenLimitMessage is the refusal of a token past the limit.
const tokenLimitMessage = "You have 50 tokens already, the most an account may hold: revoke one you no longer use first."

// routeAccountTokens routes the tokens page, its create form, and the
// revoke of a token (a page of its own, whose button is the confirm
// step).
func (p *Pages) routeAccountTokens() {
	a := accountArea
	p.mux.HandleFunc("GET "+accountTokensPath, p.guard(a, p.tokensPage))
	p.mux.HandleFunc("POST "+accountTokensPath, p.guard(a, p.createToken))
	p.mux.HandleFunc("GET "+accountTokensPath+"/{tid}/revoke", p.guard(a, p.revokeTokenForm))
	p.mux.HandleFunc("POST "+accountTokensPath+"/{tid}/revoke", p.guard(a, p.revokeOwnToken))
}

// tokenRow is one personal access token as the pages show it, the
// account's and the console's alike.
type tokenRow struct {
	ID, Name, Prefix, Scopes, Created, Expires, LastUsed string
	// Revoke is the path of its revoke's confirm page.
	Revoke string
}

// newTokenRows are the tokens as the pages show them; revoke makes each
// one's revoke path.
func newTokenRows(tokens []domain.PersonalToken, revoke func(id domain.PersonalTokenID) string) []tokenRow {
	rows := make([]tokenRow, len(tokens))
	for i, t := range tokens {
		last := "Never"
		if !t.LastUsedAt.IsZero() {
			last = consoleTime(t.LastUsedAt)
		}
		rows[i] = tokenRow{ID: string(t.ID), Name: t.Name, Prefix: domain.PersonalTokenPrefix + t.Prefix + "…",
			Scopes: strings.Join(stringsOfScopes(t.Scopes), ", "), Created: consoleTime(t.CreatedAt),
			Expires: consoleTime(t.ExpiresAt), LastUsed: last, Revoke: revoke(t.ID)}
	}
	return rows
}

func stringsOfScopes(scopes []domain.TokenScope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

// accountTokenPath is the revoke page of the visitor's token id.
func accountTokenPath(id domain.PersonalTokenID) string {
	return accountTokensPath + "/" + url.PathEscape(string(id)) + "/revoke"
}

// accountTokensData is the page.
type accountTokensData struct {
	Tokens []tokenRow
	// Created is the token just made, shown this once (the answer of the
	// create form's POST), with its name.
	Created, CreatedName string
	Scopes               []scopeChoice
	Lifetimes            []lifetimeChoice
}

// scopeChoice is a checkbox of the create form, with what it allows.
type scopeChoice struct {
	ID, Value, Label, Hint string
	Checked                bool
}

// lifetimeChoice is an option of the lifetime's select.
type lifetimeChoice struct {
	Days     int
	Selected bool
}

// tokensPage lists the visitor's tokens above the create form.
func (p *Pages) tokensPage(w http.ResponseWriter, r *http.Request, v visitor) {
	pg, err := p.accountTokensPage(r, v, nil)
	if err != nil {
		p.accountFail(w, r, v, err)
		return
	}
	p.renderConsole(w, r, http.StatusOK, pg)
}

// accountTokensPage builds the page, its create form filled with form
// (what was posted), or with the defaults when form is nil.
func (p *Pages) accountTokensPage(r *http.Request, v visitor, form url.Values) (page, error) {
	tokens, err := p.svc.Tokens.List(r.Context(), v.principal, string(v.user.ID))
	if err != nil {
		return page{}, err
	}
	pg := accountPage(r, &v, tmplAccountTokens, "Access tokens", accountTokensPath)
	pg.Notice = noticeOf(r, accountTokenNotices)
	if form == nil {
		form = url.Values{fieldTokenScopes: {string(domain.ScopeUsersRead)},
			fieldTokenExpires: {strconv.Itoa(domain.DefaultPersonalTokenDays)}}
	}
	pg.Form = form
	d := accountTokensData{Tokens: newTokenRows(tokens, accountTokenPath)}
	for _, c := range tokenScopeChoices {
		d.Scopes = append(d.Scopes, scopeChoice{ID: "scope-" + strings.ReplaceAll(string(c.Scope), ":", "-"),
			Value: string(c.Scope), Label: c.Label, Hint: c.Hint, Checked: slices.Contains(form[fieldTokenScopes], string(c.Scope))})
	}
	for _, days := range tokenLifetimes {
		d.Lifetimes = append(d.Lifetimes, lifetimeChoice{Days: days, Selected: form.Get(fieldTokenExpires) == strconv.Itoa(days)})
	}
	pg.Data = d
	return pg, nil
}

// createToken makes a token from the form, as POST /api/users/me/tokens
// does, and answers the page with it, this once: only its hash is
// stored, so the answer to the POST itself shows it (never a redirect,
// whose address would carry it), under Cache-Control: no-store like
// every page. A refused form comes back with each message beside its
// field.
func (p *Pages) createToken(w http.ResponseWriter, r *http.Request, v visitor) {
	form := r.PostForm
	in := application.CreateTokenInput{Name: form.Get(fieldName), Scopes: form[fieldTokenScopes]}
	build := func() (page, error) { return p.accountTokensPage(r, v, form) }
	if raw := form.Get(fieldTokenExpires); raw != "" {
		days, err := strconv.Atoi(raw)
		if err != nil {
			verr := &domain.ValidationError{}
			verr.Add(fieldTokenExpires, "must be a whole number of days between 1 and 365")
			p.refused(w, r, v, verr, nil, build)
			return
		}
		in.ExpiresInDays = &days
	}
	created, err := p.svc.Tokens.Create(r.Context(), v.principal, string(v.user.ID), in)
	switch {
	case errors.Is(err, domain.ErrTokenLimit):
		p.refused(w, r, v, formError(http.StatusConflict, tokenLimitMessage), nil, build)
		return
	case err != nil:
		p.refused(w, r, v, tokenRefusal(err), nil, build)
		return
	}
	pg, err := p.accountTokensPage(r, v, nil)
	if err != nil {
		p.accountFail(w, r, v, err)
		return
	}
	d := pg.Data.(accountTokensData)
	d.Created, d.CreatedName = created.Token, created.Name
	pg.Data = d
	pg.Notice = "The token “" + created.Name + "” is created."
	pg.Scripts = []string{scriptCopy}
	p.renderConsole(w, r, http.StatusOK, pg)
}

// tokenRefusal words the use case's refusal of the scopes for the page,
// whose boxes a person ticks rather than names.
func tokenRefusal(err error) error {
	verr, ok := errors.AsType[*domain.ValidationError](err)
	if !ok {
		return err
	}
	out := &domain.ValidationError{}
	for _, f := range verr.Fields {
		if f.Field == fieldTokenScopes {
			f.Message = "must have at least one box ticked: read, or read and change"
		}
		out.Add(f.Field, f.Message)
	}
	return out
}

// tokenPageData is the revoke page of one token.
type tokenPageData struct {
	Token tokenRow
	// Action is the revoke's POST.
	Action string
}

// tokenOf finds the visitor's live token of the path's id, or
// domain.ErrPersonalTokenNotFound.
func (p *Pages) tokenOf(r *http.Request, v visitor) (tokenRow, error) {
	tokens, err := p.svc.Tokens.List(r.Context(), v.principal, string(v.user.ID))
	if err != nil {
		return tokenRow{}, err
	}
	for _, row := range newTokenRows(tokens, accountTokenPath) {
		if row.ID == r.PathValue("tid") {
			return row, nil
		}
	}
	return tokenRow{}, domain.ErrPersonalTokenNotFound
}

// revokeTokenForm asks whether to revoke a token: its button is the
// confirm step.
func (p *Pages) revokeTokenForm(w http.ResponseWriter, r *http.Request, v visitor) {
	row, err := p.tokenOf(r, v)
	if err != nil {
		p.accountFail(w, r, v, err)
		return
	}
	pg := accountPage(r, &v, tmplAccountToken, "Revoke a token", accountTokensPath)
	pg.Data = tokenPageData{Token: row, Action: row.Revoke}
	p.renderConsole(w, r, http.StatusOK, pg)
}

// revokeOwnToken revokes a token of the visitor, as DELETE
// /api/users/me/tokens/{tokenId} does. A token revoked or expired
// meanwhile says so.
func (p *Pages) revokeOwnToken(w http.ResponseWriter, r *http.Request, v visitor) {
	err := p.svc.Tokens.Revoke(r.Context(), v.principal, string(v.user.ID), r.PathValue("tid"))
	switch {
	case errors.Is(err, domain.ErrPersonalTokenNotFound):
		seeOther(w, r, accountTokensPath, "token-gone")
	case err != nil:
		p.accountFail(w, r, v, err)
	default:
		seeOther(w, r, accountTokensPath, "token-revoked")
	}
}
