package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/domain"
)

// tokenField is the read-only input that shows a token just created.
var tokenField = regexp.MustCompile(`<input id="token" class="secret" type="text" readonly value="(udp_[0-9A-Za-z]{49})"`)

// newTokenForm is the create form as a browser sends it.
func newTokenForm(name, days string, scopes ...string) url.Values {
	return url.Values{"name": {name}, "scopes": scopes, "expiresInDays": {days}}
}

// seedTokens stores n live tokens of the account of email, straight in
// the store.
func (e *env) seedTokens(email string, n int) []domain.PersonalToken {
	e.t.Helper()
	u := e.user(email)
	now := e.clock.Now()
	out := make([]domain.PersonalToken, n)
	for i := range n {
		secret := domain.NewPersonalTokenSecret()
		t := domain.PersonalToken{ID: domain.NewPersonalTokenID(), UserID: u.ID, Name: fmt.Sprintf("Seeded %d", i+1),
			Scopes: []domain.TokenScope{domain.ScopeUsersRead}, Hash: domain.HashPersonalToken(secret),
			Prefix: domain.PersonalTokenPrefixOf(secret), CreatedAt: now, ExpiresAt: now.Add(90 * 24 * time.Hour)}
		if err := e.store.PersonalTokens().CreateToken(context.Background(), t, domain.MaxLivePersonalTokens); err != nil {
			e.t.Fatal(err)
		}
		out[i] = t
	}
	return out
}

func TestAccountTokens_create_show_once_and_revoke(t *testing.T) {
	t.Parallel()
	trail := memory.NewAuditLog()
	e := newEnv(t, withAccountAudit(trail))
	ada := e.addUser("ada@example.com", false)
	v := e.signedInUser("ada@example.com")

	res := v.get("/account/tokens")
	wantPage(t, res, http.StatusOK, "Access tokens")
	wantBody(t, res, `id="no-tokens"`, `href="/account/tokens" aria-current="page"`,
		`id="scope-users-read" name="scopes" value="users:read" checked`, `id="scope-users-write" name="scopes" value="users:write" aria-describedby`,
		`<option value="90" selected>90 days</option>`, `<option value="365">365 days</option>`, `<label for="name">Name</label>`,
		`<label for="expiresInDays">Lifetime</label>`)
	if strings.Contains(res.Body, `id="new-token"`) || strings.Contains(res.Body, "copy.js") {
		t.Error("the list shows a new token's section")
	}

	// Created: the answer of the POST shows the token, this once, in a
	// read-only input, with the copy script; no redirect carries it.
	res = v.post("/account/tokens", newTokenForm("CI <job>", "30", "users:read", "users:write"))
	wantPage(t, res, http.StatusOK, "Access tokens")
	m := tokenField.FindStringSubmatch(res.Body)
	if m == nil {
		t.Fatalf("no token shown:\n%s", res.Body)
	}
	token := m[1]
	if !domain.WellFormedPersonalToken(token) {
		t.Errorf("the token %q is not well formed", token)
	}
	if res.Header.Get("Location") != "" || res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Location %q, Cache-Control %q", res.Header.Get("Location"), res.Header.Get("Cache-Control"))
	}
	wantNotice(t, res, "The token “CI &lt;job&gt;” is created.")
	wantBody(t, res, `Token “CI &lt;job&gt;”`, "<strong>Copy it now: it is not shown again.</strong>",
		`id="copy-token" data-copy="token" hidden>Copy</button>`, `src="/account/assets/copy.js?v=`,
		// The form is back to its defaults.
		`<option value="90" selected>`)
	p, err := e.svc.Auth.Authenticate(context.Background(), token)
	if err != nil || p.UserID != ada.ID || p.Token == nil || len(p.Token.Scopes) != 2 {
		t.Fatalf("the token shown authenticates as %+v, %v", p, err)
	}
	if a := v.get("/account/assets/copy.js"); a.Status != http.StatusOK || !strings.Contains(a.Body, "navigator.clipboard") {
		t.Errorf("the copy script: %d", a.Status)
	}

	// Listed, never shown again.
	stored := e.tokensOf("ada@example.com")
	if len(stored) != 1 {
		t.Fatalf("stored %+v", stored)
	}
	tk := stored[0]
	res = v.get("/account/tokens")
	if strings.Contains(res.Body, token) {
		t.Error("the list shows the token again")
	}
	wantBody(t, res, `<p class="title" id="token-`+string(tk.ID)+`">CI &lt;job&gt;</p>`,
		"<code>udp_"+token[4:12]+"…</code>", "users:read, users:write", consoleTimeOf(tk.CreatedAt),
		consoleTimeOf(tk.CreatedAt.Add(30*24*time.Hour)),
		// The use just above, to the minute.
		"<dt>Last used</dt><dd>"+consoleTimeOf(e.clock.Now())+"</dd>",
		`href="/account/tokens/`+string(tk.ID)+`/revoke" id="revoke-`+string(tk.ID)+`">Revoke…`)

	// Revoked through its page, whose button is the confirm step.
	revoke := "/account/tokens/" + string(tk.ID) + "/revoke"
	res = v.get(revoke)
	wantPage(t, res, http.StatusOK, "Revoke a token")
	wantBody(t, res, `<form method="post" action="`+revoke+`">`, `id="revoke-token"`, "CI &lt;job&gt;")
	wantDone(t, v, v.post(revoke, url.Values{}), "/account/tokens", "token-revoked", "Access tokens",
		"The token is revoked: it no longer works.")
	if _, err := e.svc.Auth.Authenticate(context.Background(), token); err == nil {
		t.Error("a revoked token authenticates")
	}
	wantRedirect(t, v.post(revoke, url.Values{}), "/account/tokens?done=token-gone")
	wantPage(t, v.get(revoke), http.StatusNotFound, "")
	wantPage(t, v.get("/account/tokens/not-an-id/revoke"), http.StatusNotFound, "")
	if !audited(t, trail, domain.AuditTokenCreated, ada.ID, ada.ID) || !audited(t, trail, domain.AuditTokenRevoked, ada.ID, ada.ID) {
		t.Error("the creation and the revocation are not audited with the user as actor")
	}

	// Signed out: the sign-in page; from another site: refused, nothing
	// made.
	wantRedirect(t, e.get("/account/tokens"), "/account/login?next=%2Faccount%2Ftokens")
	wantPage(t, v.post("/account/tokens", newTokenForm("x", "90", "users:read"), withHeader("Sec-Fetch-Site", "cross-site")),
		http.StatusForbidden, "")
	if n := len(e.tokensOf("ada@example.com")); n != 0 {
		t.Errorf("%d live tokens after a cross-site post", n)
	}
}

func TestAccountTokens_refusals_at_their_fields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	v := e.signedInUser("ada@example.com")

	res := v.post("/account/tokens", newTokenForm("", "30"))
	wantPage(t, res, http.StatusBadRequest, "Access tokens")
	wantField(t, res, "name", "The name must not be empty.")
	wantBody(t, res, `<fieldset id="scopes" class="field invalid" aria-describedby="scopes-error">`,
		"The scopes must have at least one box ticked: read, or read and change.", `href="#scopes"`,
		// What was chosen is kept: no box, 30 days.
		`<option value="30" selected>`, `value="users:read" aria-describedby`)
	if tokenField.MatchString(res.Body) {
		t.Error("a refused form shows a token")
	}

	for _, days := range []string{"abc", "400", "0"} {
		res = v.post("/account/tokens", newTokenForm("Backup", days, "users:read"))
		wantPage(t, res, http.StatusBadRequest, "Access tokens")
		wantBody(t, res, `id="expiresInDays-error"`, `href="#expiresInDays"`, "The lifetime must",
			`aria-describedby="expiresInDays-hint expiresInDays-error" aria-invalid="true"`, `value="Backup"`)
	}
	res = v.post("/account/tokens", newTokenForm("Backup", "90", "users:delete"))
	wantPage(t, res, http.StatusBadRequest, "Access tokens")
	wantBody(t, res, `id="scopes-error"`)
	if n := len(e.tokensOf("ada@example.com")); n != 0 {
		t.Errorf("%d tokens made by refused forms", n)
	}

	// The 51st live token: 409, a message about the form.
	e.seedTokens("ada@example.com", domain.MaxLivePersonalTokens)
	res = v.post("/account/tokens", newTokenForm("One more", "90", "users:read"))
	wantPage(t, res, http.StatusConflict, "Access tokens")
	wantBody(t, res, "You have 50 tokens already, the most an account may hold: revoke one you no longer use first.",
		`value="One more"`)
}

func TestAdminUser_lists_and_revokes_tokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	admin := e.adminVisitor()
	e.addUser("ada@example.com", false)
	page := e.pathOf("ada@example.com")

	res := admin.get(page)
	wantBody(t, res, `<h2 id="tokens-heading">Access tokens</h2>`, `id="no-tokens"`)
	tk := e.seedTokens("ada@example.com", 1)[0]
	res = admin.get(page)
	revoke := page + "/tokens/" + string(tk.ID) + "/revoke"
	wantBody(t, res, `<tr id="token-`+string(tk.ID)+`"><th scope="row">Seeded 1</th><td><code>udp_`+tk.Prefix+`…</code></td><td>users:read</td><td>`+
		consoleTimeOf(tk.CreatedAt)+`</td><td>`+consoleTimeOf(tk.ExpiresAt)+`</td><td>Never</td>`, `href="`+revoke+`">Revoke…`)
	// The console makes no token for another: there is no form for it,
	// nor any address.
	if strings.Contains(res.Body, `action="`+page+`/tokens"`) || strings.Contains(res.Body, `name="scopes"`) {
		t.Error("the user's page offers to create a token")
	}
	wantPage(t, admin.post(page+"/tokens", newTokenForm("For Ada", "90", "users:read")), http.StatusNotFound, "")

	res = admin.get(revoke)
	wantPage(t, res, http.StatusOK, "Revoke the token “Seeded 1” of ada@example.com?")
	wantBody(t, res, `<form method="post" action="`+revoke+`">`, `id="confirm-revoke-token"`, "udp_"+tk.Prefix+"…")
	wantPage(t, admin.get(page+"/tokens/0123456789abcdef0123456789abcdef/revoke"), http.StatusNotFound, "Token not found")

	wantRedirect(t, admin.post(revoke, url.Values{}), page+"?done=token-revoked")
	res = admin.get(page + "?done=token-revoked")
	wantNotice(t, res, "The access token is revoked: it no longer works.")
	wantBody(t, res, `id="no-tokens"`)
	wantRedirect(t, admin.post(revoke, url.Values{}), page+"?done=token-gone")
	e.wantAudited(domain.AuditTokenRevoked, e.user("ada@example.com").ID)

	// A user who is not an admin: 403, nothing revoked.
	grace := e.seedTokens("root@example.com", 1)[0]
	e.addUser("grace@example.com", false)
	v := e.signedInUser("grace@example.com")
	wantPage(t, v.post(e.pathOf("root@example.com")+"/tokens/"+string(grace.ID)+"/revoke", url.Values{}), http.StatusForbidden, "")
	if n := len(e.tokensOf("root@example.com")); n != 1 {
		t.Errorf("%d live tokens after a non-admin's revoke", n)
	}
}

// tokensOf are the live tokens of the account of email.
func (e *env) tokensOf(email string) []domain.PersonalToken {
	e.t.Helper()
	list, err := e.store.PersonalTokens().Tokens(context.Background(), e.user(email).ID, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return list
}

// consoleTimeOf is a time as the pages show it.
func consoleTimeOf(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }
