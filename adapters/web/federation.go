package web

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The browser's side of a sign-in through another identity provider
// (contract-identity.md, section 2): the start, which sends the browser
// to the provider, and the callback it comes back to. What the flow must
// remember between the two (its state, nonce and PKCE verifier, where
// the browser goes next) travels with the browser in IDPCookie, sealed
// by the secret box, so that any node may finish a flow that another
// began; nothing of it is stored.

// IDPCookie holds the flow under way, or, after a callback that found an
// account with the person's email, the identity that waits for that
// account's sign-in (application.PendingLink). It is Lax because the
// callback is a cross-site navigation from the provider, on which a
// Strict cookie would not be sent; it lives FederationFlowTTL at most.
const IDPCookie = "__Host-userd_idp"

// IDPPrefix is where the flows' routes are: IDPPrefix{slug}/start and
// IDPPrefix{slug}/callback.
const IDPPrefix = "/auth/idp/"

// The purposes a sealed IDPCookie is bound to: a flow does not open as a
// pending link, nor either as any other sealed value of userd.
var (
	idpFlowSealAD    = []byte("userd identity provider flow v1")
	idpPendingSealAD = []byte("userd identity provider pending link v1")
)

// routeFederation routes the flows and the account page's "Link".
func (p *Pages) routeFederation() {
	p.mux.HandleFunc("GET "+IDPPrefix+"{slug}/start", p.startFederation)
	p.mux.HandleFunc("GET "+IDPPrefix+"{slug}/callback", p.federationCallback)
	p.mux.HandleFunc("POST "+accountIdentitiesPath+"/{slug}/link", p.guard(accountArea, p.linkIdentity))
}

// startFederation sends the browser to the provider, its flow sealed in
// IDPCookie. next is judged as the sign-in page judges it.
func (p *Pages) startFederation(w http.ResponseWriter, r *http.Request) {
	next := p.federationNext(r.URL.Query().Get(fieldNext))
	st, err := p.svc.Federation.Start(r.Context(), r.PathValue("slug"), next, nil)
	if err != nil {
		p.federationFailed(w, r, err)
		return
	}
	if err := p.setIDPCookie(w, st.Flow, idpFlowSealAD, st.Flow.Expires); err != nil {
		p.consoleFail(w, r, accountArea, nil, err)
		return
	}
	// No body: the URL carries the flow's state and challenge, which a
	// page need not repeat.
	w.Header().Set("Location", st.Location)
	w.WriteHeader(http.StatusSeeOther)
}

// linkIdentity starts, for the signed-in visitor, a flow that links their
// identity at the provider to their account. The provider is another
// origin, which a redirect after this POST may not reach (form-action
// 'self'): the answer is a page that goes on by itself.
func (p *Pages) linkIdentity(w http.ResponseWriter, r *http.Request, v visitor) {
	st, err := p.svc.Federation.Start(r.Context(), r.PathValue("slug"), accountIdentitiesPath, v.principal)
	if err != nil {
		p.federationFailed(w, r, err)
		return
	}
	if err := p.setIDPCookie(w, st.Flow, idpFlowSealAD, st.Flow.Expires); err != nil {
		p.accountFail(w, r, v, err)
		return
	}
	pg := providerPage(tmplRedirect, "Continue to the provider")
	pg.Data = onwardData(st.Location, "Continue to the provider")
	p.renderConsole(w, r, http.StatusOK, pg)
}

// federationCallback ends the flow: the application checks it and
// matches the identity. The flow's cookie is spent whatever the outcome.
func (p *Pages) federationCallback(w http.ResponseWriter, r *http.Request) {
	var flow *application.FederationFlow
	if f, ok := readIDPCookie[application.FederationFlow](r, p, idpFlowSealAD); ok {
		flow = &f
	}
	clearIDPCookie(w)
	q := r.URL.Query()
	out, err := p.svc.Federation.Finish(signInContext(r), flow, r.PathValue("slug"),
		application.FederationCallback{State: q.Get("state"), Code: q.Get("code"), Error: q.Get("error")})
	if err != nil {
		p.federationFailed(w, r, err)
		return
	}
	next := flow.Next
	a := p.areaOf(next)
	switch {
	case out.Linked != nil:
		p.sameSiteStep(w, r, identityLinkedPath(out.Linked.Provider))
	case out.Pending != nil:
		p.pendingLink(w, r, a, next, out)
	case out.SignIn.SecondStep != nil:
		step := out.SignIn.SecondStep
		p.renderConsole(w, r, http.StatusOK, secondStepPage(a, signInData{Next: next}, step.MFAToken, step.Methods))
	default:
		p.openedAfter(w, r, a, next, *out.SignIn.Tokens, true)
	}
}

// pendingLink asks the person to sign in to the account that has the
// email the provider vouched for, with the method it has; the identity
// waits in IDPCookie and is linked by that sign-in (opened).
func (p *Pages) pendingLink(w http.ResponseWriter, r *http.Request, a *area, next string, out application.FederationOutcome) {
	pending := *out.Pending
	if err := p.setIDPCookie(w, pending, idpPendingSealAD, pending.Expires); err != nil {
		p.consoleFail(w, r, a, nil, err)
		return
	}
	d := p.signInFor(r.Context(), next, "")
	d.LinkProvider, d.LinkEmail = out.ProviderName, string(pending.Email)
	// The way in is the account's own method now, not another provider.
	d.Providers = nil
	pg := signInPage(a, d)
	pg.Form = url.Values{fieldEmail: {string(pending.Email)}}
	p.renderConsole(w, r, http.StatusOK, pg)
}

// linkPending links the identity that waited in IDPCookie to the account
// principal just signed in to, and returns its provider's slug, "" when
// it linked none. The cookie is spent either way; an identity that was
// for another account, or whose time passed, is left unlinked.
func (p *Pages) linkPending(w http.ResponseWriter, r *http.Request, principal *domain.Principal) string {
	pending, ok := readIDPCookie[application.PendingLink](r, p, idpPendingSealAD)
	if !ok {
		return ""
	}
	clearIDPCookie(w)
	if _, err := p.svc.Federation.LinkPending(r.Context(), principal, pending); err != nil {
		p.log.LogAttrs(r.Context(), slog.LevelInfo, "identity not linked after the sign-in", slog.String("error", err.Error()))
		return ""
	}
	return pending.Provider
}

// sameSiteStep answers the callback, a navigation that began on the
// provider's site, with a page of userd's own that goes on to path: the
// session's cookies (SameSite=Strict) are sent on that navigation, which
// a redirect would not give them.
func (p *Pages) sameSiteStep(w http.ResponseWriter, r *http.Request, path string) {
	pg := providerPage(tmplRedirect, "Signing you in")
	pg.Data = redirectData{Location: path, LinkText: "Continue", Refresh: "0; url=" + path}
	p.renderConsole(w, r, http.StatusOK, pg)
}

// federationFailed answers a refused flow with a page that says what went
// wrong (never with a session): 404 for a provider that is unknown or
// off, 403 for a person the deployment's rules refuse, 502 for a
// provider that could not be reached, 400 for a flow that failed a check;
// a refusal of the account itself as the sign-in page says it.
func (p *Pages) federationFailed(w http.ResponseWriter, r *http.Request, err error) {
	back := navLink{AccountPrefix + "login", "Back to sign in"}
	show := func(status int, title string, paragraphs ...string) {
		pg := providerPage(tmplNotice, title)
		pg.Data = noticeData{Paragraphs: paragraphs, Link: back}
		p.renderConsole(w, r, status, pg)
	}
	if errors.Is(err, domain.ErrIdentityProviderNotFound) {
		sp := statusPage(http.StatusNotFound)
		show(http.StatusNotFound, sp.Title, sp.Paragraphs...)
		return
	}
	if refused, ok := errors.AsType[*domain.FederationRefusedError](err); ok {
		status, title, why := federationRefusal(refused)
		show(status, title, why)
		return
	}
	if status, msg := signInError(err); status != 0 {
		show(status, "You could not be signed in", msg)
		return
	}
	p.consoleFail(w, r, accountArea, nil, err)
}

// federationRefusal is the status, title and sentence of a refused flow.
func federationRefusal(e *domain.FederationRefusedError) (int, string, string) {
	const title = "Signing in with the provider did not work"
	switch e.Reason {
	case domain.RefusedDomainNotAllowed:
		return http.StatusForbidden, "This account may not sign in here",
			"Only accounts of the organisations this service allows may sign in with this provider."
	case domain.RefusedAutoCreateOff:
		return http.StatusForbidden, "There is no account for you here",
			"This provider signs in only people who have an account already. Ask an administrator for one."
	case domain.RefusedEmailUnverified:
		return http.StatusForbidden, "Your email address is not verified",
			"The provider did not confirm your email address, so no account was made or linked. " +
				"Verify the address with the provider, then try again."
	case domain.RefusedIdentityTaken:
		return http.StatusForbidden, "That account is linked already",
			"This account at the provider is linked to another account here, or yours has one of this provider already."
	case domain.RefusedProviderError:
		return http.StatusBadRequest, title, "The provider did not sign you in. Try again, or sign in another way."
	case domain.RefusedStateMismatch:
		return http.StatusBadRequest, title,
			"The sign-in took too long, or was started in another browser or tab. Start again from the sign-in page."
	case domain.RefusedProviderUnreachable:
		return http.StatusBadGateway, title, "The provider could not be reached. Try again in a few moments."
	}
	return http.StatusBadRequest, title, "The provider's answer could not be accepted. Try again, or sign in another way."
}

// federationNext is where a flow's browser goes once signed in: a path
// of the admin console when it is on and next is one, else of the
// account area or an OpenID flow's continuation (nextPath).
func (p *Pages) federationNext(next string) string {
	if p.adminConsole && strings.HasPrefix(next, AdminPrefix) {
		return nextPath(adminArea, next)
	}
	return nextPath(accountArea, next)
}

// areaOf is the area whose path next is.
func (p *Pages) areaOf(next string) *area {
	if p.adminConsole && strings.HasPrefix(next, AdminPrefix) {
		return adminArea
	}
	return accountArea
}

// setIDPCookie seals v into IDPCookie under ad until expires.
func (p *Pages) setIDPCookie(w http.ResponseWriter, v any, ad []byte, expires time.Time) error {
	plain, err := json.Marshal(v)
	if err != nil {
		return err
	}
	sealed, err := p.box.Seal(plain, ad)
	if err != nil {
		return err
	}
	left := expires.Sub(p.clock.Now())
	http.SetCookie(w, &http.Cookie{Name: IDPCookie, Value: base64.RawURLEncoding.EncodeToString(sealed),
		Path: "/", MaxAge: max(int(left/time.Second), 1), Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	return nil
}

// readIDPCookie opens the request's IDPCookie as a T sealed under ad;
// its times are the application's to judge.
func readIDPCookie[T any](r *http.Request, p *Pages, ad []byte) (T, bool) {
	var v T
	c, err := r.Cookie(IDPCookie)
	if err != nil || c.Value == "" {
		return v, false
	}
	sealed, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return v, false
	}
	plain, err := p.box.Open(sealed, ad)
	if err != nil || json.Unmarshal(plain, &v) != nil {
		return v, false
	}
	return v, true
}

func clearIDPCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: IDPCookie, Value: "", Path: "/", MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}
