package web

import (
	"net/http"
	"net/url"

	"github.com/userd/userd/application"
)

// The parameters of RP-Initiated Logout 1.0 §2.
const (
	paramIDTokenHint           = "id_token_hint"
	paramClientID              = "client_id"
	paramPostLogoutRedirectURI = "post_logout_redirect_uri"
	paramState                 = "state"
)

var endSessionParams = []string{paramIDTokenHint, paramClientID, paramPostLogoutRedirectURI, paramState}

// endSessionGet is an app's link to sign out. With an id_token_hint the
// app proves it was given this person's sign-in, and the session ends at
// once; without one, any page on the web could link here and sign people
// out, so the page asks first (RP-Initiated Logout §2 lets the OP ask for
// confirmation), and its button POSTs from userd's own origin.
func (p *Pages) endSessionGet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get(paramIDTokenHint) == "" {
		p.confirmEndSession(w, r, q)
		return
	}
	p.logoutFor(w, r, q, false)
}

// endSessionPost is the confirmation page's button, or an app's own form
// (the specification allows POST). An app's POST is cross-site: it
// carries neither cookie (Lax and Strict are not sent on another site's
// POST), so there is no session to end yet; it gets the confirmation
// page, whose own POST carries them.
func (p *Pages) endSessionPost(w http.ResponseWriter, r *http.Request) {
	if p.csrf.Check(r) != nil {
		form, ok := p.parseForm(w, r)
		if !ok {
			return
		}
		p.confirmEndSession(w, r, form)
		return
	}
	form, ok := p.readForm(w, r)
	if !ok {
		return
	}
	p.logoutFor(w, r, form, true)
}

// endSessionData is the confirmation page: the request's parameters go
// back in hidden fields.
type endSessionData struct {
	Paragraphs []string
	Hidden     []hiddenField
}

type hiddenField struct{ Name, Value string }

// confirmEndSession asks whether to sign out, naming the app when the
// request names a registered one.
func (p *Pages) confirmEndSession(w http.ResponseWriter, r *http.Request, params url.Values) {
	d := endSessionData{Paragraphs: []string{"This signs you out of your userd account in this browser. An app you are signed in to keeps its own session until you sign out there too."}}
	if name := p.clientName(r, params.Get(paramClientID)); name != "" {
		d.Paragraphs = append([]string{name + " asks to sign you out."}, d.Paragraphs...)
	}
	for _, k := range endSessionParams {
		if v := params.Get(k); v != "" {
			d.Hidden = append(d.Hidden, hiddenField{k, v})
		}
	}
	pg := providerPage(tmplEndSession, "Sign out?")
	pg.Data = d
	p.renderConsole(w, r, http.StatusOK, pg)
}

// clientName is the name of the registered client id, or "".
func (p *Pages) clientName(r *http.Request, id string) string {
	if id == "" || p.svc.OAuthClients == nil {
		return ""
	}
	c, err := p.svc.OAuthClients.Client(r.Context(), id)
	if err != nil {
		return ""
	}
	return c.Name
}

// logoutFor ends the browser's session for the provider and the pages
// alike (one session: the SSO cookie names the console's), clears both
// cookies, and goes where the provider says: back to the app, or the
// signed-out page. A request the provider refuses (a post-logout
// redirect URI that is not the app's, a hint that is not its own) ends
// nothing and says why. After a POST of the pages the way back to the
// app is a page that goes on by itself, as in answerStep.
func (p *Pages) logoutFor(w http.ResponseWriter, r *http.Request, params url.Values, afterPost bool) {
	in := application.EndSessionInput{IDTokenHint: params.Get(paramIDTokenHint), ClientID: params.Get(paramClientID),
		PostLogoutRedirectURI: params.Get(paramPostLogoutRedirectURI), State: params.Get(paramState),
		Browser: p.currentBrowser(r)}
	res, err := p.provider.EndSession(r.Context(), in)
	if err != nil {
		p.providerFailed(w, r, err)
		return
	}
	p.signOut(w, r)
	switch {
	case res.Location != "" && afterPost:
		pg := providerPage(tmplRedirect, "You are signed out")
		d := onwardData(res.Location, "Back to "+appName(res.ClientName))
		d.SignedOut = true
		pg.Data = d
		p.renderConsole(w, r, http.StatusOK, pg)
	case res.Location != "":
		//nolint:gosec // G710: the provider's Location is one of the client's registered post-logout redirect URIs
		http.Redirect(w, r, res.Location, http.StatusSeeOther)
	default:
		paragraphs := []string{"You are signed out of your userd account in this browser."}
		if res.ClientName != "" {
			paragraphs = append(paragraphs, "You can close this page, or go back to "+res.ClientName+".")
		}
		pg := providerPage(tmplNotice, "You are signed out")
		pg.Data = noticeData{Paragraphs: paragraphs, Link: navLink{accountArea.LoginPath(), "Sign in again"}}
		p.renderConsole(w, r, http.StatusOK, pg)
	}
}

// currentBrowser is the request's SSO session within its timeouts,
// without renewing its cookie (it is about to end).
func (p *Pages) currentBrowser(r *http.Request) *application.BrowserSession {
	st, ok := p.readSSO(r)
	if !ok || !st.live(p.clock.Now()) {
		return nil
	}
	return st.browser()
}
