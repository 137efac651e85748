package web

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The paths of the OpenID provider's pages (contract-identity.md,
// section 1). /oauth2/authorize itself is the API's (adapters/httpapi):
// it checks the app's request, stores it, and sends the browser here.
const (
	// AuthorizeContinuePath takes a stored request on (GET, ?request=ID):
	// to the sign-in page, the consent page, or back to the app.
	AuthorizeContinuePath = "/oauth2/authorize/continue"
	// ConsentPath takes the consent page's answer (POST).
	ConsentPath = "/oauth2/consent"
	// EndSessionPath is RP-Initiated Logout's end_session_endpoint (GET
	// and POST).
	EndSessionPath = "/oauth2/end_session"
)

// The provider pages' templates.
const (
	tmplConsent    = "provider_consent.html"
	tmplRedirect   = "provider_redirect.html"
	tmplEndSession = "provider_end_session.html"
)

// The fields of the provider's forms.
const (
	fieldRequest  = "request"
	fieldDecision = "decision"
	// fieldClient carries the sealed name of the app on the sign-in page
	// (clientToken).
	fieldClient = "client"
)

// providerFlows is what the pages use of the OpenID provider
// (*application.ProviderService): declared here, the consumer's side, so
// that the pages' tests can play the provider.
type providerFlows interface {
	Continue(ctx context.Context, requestID string, browser *application.BrowserSession) (application.AuthorizeStep, error)
	Consent(ctx context.Context, requestID string, browser application.BrowserSession, allow bool) (application.AuthorizeStep, error)
	EndSession(ctx context.Context, in application.EndSessionInput) (application.EndSessionResult, error)
	Grants(ctx context.Context, actor *domain.Principal) ([]application.AppAccess, error)
	RevokeGrant(ctx context.Context, actor *domain.Principal, clientID string) error
}

var _ providerFlows = (*application.ProviderService)(nil)

// routeProvider routes the provider's pages. They are always routed and
// answer 404 while the provider is off (providerOn), so that the routes
// do not depend on the order the services were built in.
func (p *Pages) routeProvider() {
	p.mux.HandleFunc("GET "+AuthorizeContinuePath, p.providerOn(p.authorizeContinue))
	p.mux.HandleFunc("POST "+ConsentPath, p.providerOn(p.consent))
	p.mux.HandleFunc("GET "+EndSessionPath, p.providerOn(p.endSessionGet))
	p.mux.HandleFunc("POST "+EndSessionPath, p.providerOn(p.endSessionPost))
}

// providerOn serves h while the provider is on, else the 404 page.
func (p *Pages) providerOn(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p.provider == nil {
			p.render(w, r, http.StatusNotFound, statusPage(http.StatusNotFound))
			return
		}
		h(w, r)
	}
}

// authorizeContinue takes the request of the query on for the browser's
// sign-in. It is a GET reached by redirects from /oauth2/authorize (an
// app's link), so its own redirect to the app is allowed: no form was
// posted on the way.
func (p *Pages) authorizeContinue(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get(fieldRequest)
	if !wellFormedRequestID(id) {
		p.providerFailed(w, r, domain.ErrAuthRequestNotFound)
		return
	}
	step, err := p.provider.Continue(r.Context(), id, p.browserSession(w, r))
	p.answerStep(w, r, id, step, err, false)
}

// continueAfterPost takes the request id on after a POST of the pages
// (a sign-in that came from the flow).
func (p *Pages) continueAfterPost(w http.ResponseWriter, r *http.Request, id string, browser *application.BrowserSession) {
	step, err := p.provider.Continue(r.Context(), id, browser)
	p.answerStep(w, r, id, step, err, true)
}

// consent takes the consent page's answer. A browser that lost its
// session meanwhile (signed out in another tab, past a timeout) goes
// back through the flow, which asks it to sign in: nothing is granted
// without the session that saw the page.
func (p *Pages) consent(w http.ResponseWriter, r *http.Request) {
	form, ok := p.readForm(w, r)
	if !ok {
		return
	}
	id := form.Get(fieldRequest)
	if !wellFormedRequestID(id) {
		p.providerFailed(w, r, domain.ErrAuthRequestNotFound)
		return
	}
	browser := p.browserSession(w, r)
	if browser == nil {
		http.Redirect(w, r, continueURL(id), http.StatusSeeOther)
		return
	}
	allow := form.Get(fieldDecision) == "allow"
	step, err := p.provider.Consent(r.Context(), id, *browser, allow)
	p.answerStep(w, r, id, step, err, true)
}

// answerStep sends the browser where the flow goes next. The app's
// redirect URI is another origin: after a POST of these pages, whose
// Content-Security-Policy says form-action 'self', a browser refuses a
// redirect there (form-action governs the redirects that follow a form's
// submission), so the answer is then a page that goes on by itself
// (redirectPage) instead of a 303.
func (p *Pages) answerStep(w http.ResponseWriter, r *http.Request, id string, step application.AuthorizeStep, err error, afterPost bool) {
	switch {
	case err != nil:
		p.providerFailed(w, r, err)
	case step.Location != "" && afterPost:
		p.redirectPage(w, r, "Continue to "+appName(step.ClientName), step.ClientName, step.Location)
	case step.Location != "":
		//nolint:gosec // G710: the provider's Location is the client's registered redirect URI
		http.Redirect(w, r, step.Location, http.StatusSeeOther)
	case step.Consent != nil:
		p.renderConsole(w, r, http.StatusOK, consentPage(*step.Consent))
	case step.SignIn:
		http.Redirect(w, r, p.signInForFlow(id, step.ClientName), http.StatusSeeOther)
	default:
		p.providerFailed(w, r, errors.New("provider: an authorize step with nothing to do"))
	}
}

// appName names an app in a sentence, also when the provider did not.
func appName(name string) string {
	if name == "" {
		return "the app"
	}
	return name
}

// redirectData is the page that sends the browser on to an app.
type redirectData struct {
	// Location is the link's target (onwardData).
	Location any
	// Refresh is the <meta http-equiv="refresh"> content: at once, to
	// Location. Meta refresh is a navigation, which no directive of the
	// pages' Content-Security-Policy governs, and needs no script.
	Refresh  string
	LinkText string
	// SignedOut adds the signed-out sentence (end session).
	SignedOut bool
}

// redirectPage answers with a page that goes on to location by itself,
// with a link for a browser that does not follow meta refresh.
func (p *Pages) redirectPage(w http.ResponseWriter, r *http.Request, title, client, location string) {
	pg := providerPage(tmplRedirect, title)
	pg.Data = onwardData(location, "Continue to "+appName(client))
	p.renderConsole(w, r, http.StatusOK, pg)
}

// onwardData is the page that goes on to location, the provider's
// Location: a redirect URI the client registered, which the domain's
// rules allow to be a private-use scheme of a native app
// (com.example.app:/cb). The template would replace a link of any scheme
// but http, https and mailto with "#ZgotmplZ", so such a URI is marked
// safe here, and only such a one; anything else (a scheme without a dot,
// javascript: or data:, which no client can register) is neither
// linked nor refreshed to.
func onwardData(location, linkText string) redirectData {
	d := redirectData{Location: location, LinkText: linkText}
	u, err := url.Parse(location)
	if err == nil && (u.Scheme == "https" || u.Scheme == "http" || strings.Contains(u.Scheme, ".")) {
		d.Location = template.URL(location) //nolint:gosec // G203: a registered redirect URI, its scheme checked above
		d.Refresh = "0; url=" + location
	}
	return d
}

// providerPage starts a page of the provider: of the account area (its
// header and stylesheet), without the menu, whoever is signed in.
func providerPage(tmpl, title string) page { return newPage(accountArea, nil, tmpl, title) }

// providerFailed answers an error of the provider's flow.
func (p *Pages) providerFailed(w http.ResponseWriter, r *http.Request, err error) {
	if oerr, ok := errors.AsType[*domain.OAuthError](err); ok {
		p.providerMessage(w, r, http.StatusBadRequest, "This request cannot go on", oerr.Description,
			"Go back to the app and try again.")
		return
	}
	if errors.Is(err, domain.ErrAuthRequestNotFound) {
		p.providerMessage(w, r, http.StatusBadRequest, "This sign-in request has expired or was used",
			"Go back to the app and start again.")
		return
	}
	p.consoleFail(w, r, accountArea, nil, err)
}

// providerMessage answers a page of a title and paragraphs.
func (p *Pages) providerMessage(w http.ResponseWriter, r *http.Request, status int, title string, paragraphs ...string) {
	pg := providerPage(tmplNotice, title)
	pg.Data = noticeData{Paragraphs: paragraphs}
	p.renderConsole(w, r, status, pg)
}

// ServeProviderError answers a request of an app that the provider
// refuses without sending the browser back to it (an unknown client, a
// redirect URI it did not register: RFC 6749 §4.1.2.1 forbids the
// redirect), as a page with message, whose words the caller chooses. The
// router that serves /oauth2/authorize calls it (httpapi does).
func (p *Pages) ServeProviderError(w http.ResponseWriter, r *http.Request, status int, message string) {
	setSecurityHeaders(w.Header())
	w.Header().Set("Cache-Control", "no-store")
	p.providerMessage(w, r, status, "This sign-in cannot go on", message,
		"Go back to the app and tell its owner: nothing was sent to it.")
}

// wellFormedRequestID reports whether id can name an authorization
// request (domain.NewAuthRequestID's base64url): anything else is
// refused before the store is asked, and never goes into a URL.
func wellFormedRequestID(id string) bool {
	if len(id) < 16 || len(id) > 128 {
		return false
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// continueURL is the flow's page for the request id.
func continueURL(id string) string {
	return AuthorizeContinuePath + "?" + fieldRequest + "=" + url.QueryEscape(id)
}

// continueRequest reports whether next is exactly continueURL of a
// well-formed id, the one path outside the account area that its sign-in
// goes on to, and returns the id.
func continueRequest(next string) (string, bool) {
	prefix := AuthorizeContinuePath + "?" + fieldRequest + "="
	id, ok := strings.CutPrefix(next, prefix)
	if !ok || !wellFormedRequestID(id) {
		return "", false
	}
	return id, true
}

// browserOf is the browser session of a sign-in just opened.
func browserOf(principal *domain.Principal) *application.BrowserSession {
	return &application.BrowserSession{UserID: principal.UserID, SessionID: principal.Session.ID}
}
