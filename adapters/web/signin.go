package web

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The templates of the sign-in flow.
const (
	tmplSignIn     = "signin.html"
	tmplSecondStep = "secondstep.html"
	tmplNotice     = "notice.html"
)

// The fields of the sign-in forms.
const (
	fieldEmail      = "email"
	fieldMFAToken   = "mfaToken"
	fieldCode       = "code"
	fieldNext       = "next"
	fieldCeremonyID = "ceremonyId"
	fieldCredential = "credential"
	fieldMethods    = "methods"
)

// The script of the passkey buttons (sign-in and the account page).
const scriptPasskey = "passkey.js"

// signInData is what the sign-in pages show besides the form.
type signInData struct {
	Next    string
	Expired bool
	// ClientName names the app whose sign-in this is, and ClientToken
	// carries it sealed through the forms (signInForFlow).
	ClientName, ClientToken string
	// StartAgain is the second step's way back to the sign-in form.
	StartAgain string
	// Providers are the buttons of the enabled identity providers.
	Providers []providerButton
	// EmailCode offers "Email me a code" beside the password.
	EmailCode bool
	// LinkProvider and LinkEmail say, after a provider's callback, that
	// an account with the email exists: signing in to it links the
	// provider's identity (pendingLink).
	LinkProvider, LinkEmail string
	// MFAToken and Methods are the second step's.
	MFAToken string
	Methods  string
	TOTP     bool
	Passkey  bool
}

// signInForm shows the sign-in form of a, or goes on to the area when the
// visitor is signed in already.
func (p *Pages) signInForm(a *area) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		next := nextPath(a, q.Get(fieldNext))
		_, flow := continueRequest(next)
		// The provider sends a browser here to sign in, or to sign in
		// again (prompt=login, max_age): a live console session does
		// not answer it, and going back would only come here again.
		if _, _, err := p.session(w, r); err == nil && !flow {
			//nolint:gosec // G710: nextPath admits only a path of the area, never another site
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		d := p.signInFor(r.Context(), next, q.Get(fieldClient))
		d.Expired = q.Get("expired") == "1"
		pg := signInPage(a, d)
		pg.Notice = noticeOf(r, signInNotices)
		p.renderConsole(w, r, http.StatusOK, pg)
	}
}

// signInNotices are the sign-in page's notices.
var signInNotices = map[string]string{"signed-out": "You are signed out.",
	"session-ended": "Your session has ended. Sign in again.",
	// After the account page's changes that end every session.
	"password-changed": "Your password is changed, and every session of your account is signed out. Sign in with the new password.",
	"email-changed": "Your email address is changed, and every session of your account is signed out. " +
		"We sent a link to the new address: open it to verify the address, and sign in with the new address.",
}

// signInFor is the sign-in page's data for next, naming the app of a
// flow by its sealed name.
func (p *Pages) signInFor(ctx context.Context, next, clientToken string) signInData {
	d := signInData{Next: next}
	if name := p.clientNameOf(next, clientToken); name != "" {
		d.ClientName, d.ClientToken = name, clientToken
	}
	d.Providers = p.providerButtons(ctx, next)
	d.EmailCode = p.svc.EmailSignIn.Enabled()
	return d
}

// providerButton is a sign-in page's button of an identity provider.
type providerButton struct {
	Slug, DisplayName, Href string
}

// providerButtons are the buttons of the enabled providers, each
// starting a flow that goes on to next. A store that fails leaves them
// out: the page's other ways still sign in.
func (p *Pages) providerButtons(ctx context.Context, next string) []providerButton {
	providers, err := p.svc.Federation.SignInProviders(ctx)
	if err != nil {
		p.log.LogAttrs(ctx, slog.LevelWarn, "sign-in providers not listed", slog.String("error", err.Error()))
		return nil
	}
	out := make([]providerButton, len(providers))
	for i, pr := range providers {
		out[i] = providerButton{Slug: pr.Slug, DisplayName: pr.DisplayName,
			Href: IDPPrefix + pr.Slug + "/start?" + url.Values{fieldNext: {next}}.Encode()}
	}
	return out
}

// startAgainPath is the way from a later step of the sign-in d (the second
// step, the emailed code's page) back to a's sign-in form, with the app
// of a flow carried on.
func startAgainPath(a *area, d signInData) string {
	if d.ClientToken == "" {
		return a.LoginPath()
	}
	return a.LoginPath() + "?" + url.Values{fieldNext: {d.Next}, fieldClient: {d.ClientToken}}.Encode()
}

func signInPage(a *area, d signInData) page {
	pg := newPage(a, nil, tmplSignIn, "Sign in")
	pg.Data = d
	pg.Scripts = []string{scriptPasskey}
	return pg
}

// signIn checks the email and password of the form. A right one opens the
// session, or, for an account with a second factor, shows the second step
// (signedIn).
func (p *Pages) signIn(a *area) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		form, ok := p.readForm(w, r)
		if !ok {
			return
		}
		next := nextPath(a, form.Get(fieldNext))
		res, err := p.svc.Auth.Login(signInContext(r), application.LoginInput{
			Email: form.Get(fieldEmail), Password: form.Get(fieldPassword)})
		if err != nil {
			pg := signInPage(a, p.signInFor(r.Context(), next, form.Get(fieldClient)))
			pg.Form = form
			p.signInFailed(w, r, pg, err)
			return
		}
		p.signedIn(w, r, a, next, res)
	}
}

// secondStepPage is the second step of the sign-in d (its next, and the
// app of a flow, which it names and carries on).
func secondStepPage(a *area, d signInData, token string, methods []string) page {
	d.MFAToken, d.Methods = token, strings.Join(methods, ",")
	d.StartAgain = startAgainPath(a, d)
	for _, m := range methods {
		switch m {
		case domain.MFAMethodTOTP, domain.MFAMethodRecoveryCode:
			d.TOTP = true
		case domain.MFAMethodPasskey:
			d.Passkey = true
		}
	}
	pg := newPage(a, nil, tmplSecondStep, "Confirm it is you")
	pg.Data = d
	pg.Scripts = []string{scriptPasskey}
	return pg
}

// signInCode finishes a sign-in with a TOTP or recovery code.
func (p *Pages) signInCode(a *area) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		form, ok := p.readForm(w, r)
		if !ok {
			return
		}
		next := nextPath(a, form.Get(fieldNext))
		token, code := form.Get(fieldMFAToken), form.Get(fieldCode)
		res, err := p.svc.Auth.LoginMFA(signInContext(r), application.MFALoginInput{MFAToken: &token, Code: &code})
		if err != nil {
			p.secondStepFailed(w, r, a, next, token, err)
			return
		}
		p.signedIn(w, r, a, next, res)
	}
}

// passkeyOptions starts a passkey ceremony for the page's script: the
// second step of a sign-in when the form carries its mfaToken, a sign-in
// with a passkey alone otherwise. It answers JSON: {ceremonyId,
// publicKey}, or {error} with a message to show.
func (p *Pages) passkeyOptions(w http.ResponseWriter, r *http.Request) {
	form, ok := p.readForm(w, r)
	if !ok {
		return
	}
	var token *string
	if t := form.Get(fieldMFAToken); t != "" {
		token = &t
	}
	o, err := p.svc.Passkeys.BeginLogin(r.Context(), token)
	if err != nil {
		p.passkeyJSONFailed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, passkeyOptionsJSON{CeremonyID: o.CeremonyID, PublicKey: o.PublicKey})
}

// passkeyOptionsJSON is the answer of the options routes: the API's shape.
type passkeyOptionsJSON struct {
	CeremonyID string          `json:"ceremonyId"`
	PublicKey  json.RawMessage `json:"publicKey"`
}

// signInPasskey finishes a sign-in with the passkey assertion that the
// page's script put in the form.
func (p *Pages) signInPasskey(a *area) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		form, ok := p.readForm(w, r)
		if !ok {
			return
		}
		next := nextPath(a, form.Get(fieldNext))
		ceremony := form.Get(fieldCeremonyID)
		in := application.PasskeyLoginInput{CeremonyID: &ceremony, Credential: json.RawMessage(form.Get(fieldCredential))}
		token := form.Get(fieldMFAToken)
		if token != "" {
			in.MFAToken = &token
		}
		res, err := p.svc.Passkeys.FinishLogin(signInContext(r), in)
		if err != nil {
			if token != "" {
				p.secondStepFailed(w, r, a, next, token, err)
				return
			}
			p.signInFailed(w, r, signInPage(a, p.signInFor(r.Context(), next, form.Get(fieldClient))), err)
			return
		}
		p.signedIn(w, r, a, next, res)
	}
}

// signedIn answers a sign-in: the second step's page when the account
// asks for one, the session it opened otherwise.
func (p *Pages) signedIn(w http.ResponseWriter, r *http.Request, a *area, next string, res application.SignInResult) {
	if step := res.SecondStep; step != nil {
		d := p.signInFor(r.Context(), next, r.PostForm.Get(fieldClient))
		p.renderConsole(w, r, http.StatusOK, secondStepPage(a, d, step.MFAToken, step.Methods))
		return
	}
	p.opened(w, r, a, next, *res.Tokens)
}

// opened finishes a sign-in: the cookie is set and the visitor goes on.
// A non-admin who signs in to the admin console is refused (403), and the
// session just opened is ended at once. The session of the cookie that
// the new one replaces, if it held one, is ended: the browser forgets
// that cookie, and with it the only means to sign that session out.
func (p *Pages) opened(w http.ResponseWriter, r *http.Request, a *area, next string, pair application.TokenPair) {
	p.openedAfter(w, r, a, next, pair, false)
}

// openedAfter is opened for a request that is a cross-site navigation
// (crossSite: the callback of a provider, where the new session's
// cookies would not go with a redirect) or not. A sign-in that an
// identity waited for (IDPCookie) links it, and ends on the page of the
// linked identities, unless it continues an app's flow.
func (p *Pages) openedAfter(w http.ResponseWriter, r *http.Request, a *area, next string, pair application.TokenPair, crossSite bool) {
	principal, err := p.svc.Auth.Authenticate(r.Context(), pair.Access.Token)
	if err != nil {
		p.consoleFail(w, r, a, nil, err)
		return
	}
	if a.AdminOnly && !principal.IsAdmin() {
		p.endSession(r, consoleState{Refresh: pair.RefreshToken})
		v := visitor{principal: principal, user: pair.User}
		p.renderConsole(w, r, http.StatusForbidden, notAdminPage(a, &v))
		return
	}
	if err := p.startSession(w, pair); err != nil {
		p.consoleFail(w, r, a, nil, err)
		return
	}
	// The provider's cookie names the session just opened: a sign-in on
	// either area's page is a sign-in for the apps too.
	if err := p.startSSO(w, principal); err != nil {
		p.consoleFail(w, r, a, nil, err)
		return
	}
	p.endCookieSession(r)
	id, flow := continueRequest(next)
	flow = flow && p.provider != nil
	if linked := p.linkPending(w, r, principal); linked != "" && !flow {
		next = identityLinkedPath(linked)
	}
	switch {
	case flow:
		// Back to an app's flow: its end is another origin, which a
		// redirect after this POST may not reach (form-action).
		p.continueAfterPost(w, r, id, browserOf(principal))
	case crossSite:
		p.sameSiteStep(w, r, next)
	default:
		//nolint:gosec // G710: nextPath admits only a path of the area, never another site
		http.Redirect(w, r, next, http.StatusSeeOther)
	}
}

// signOutHandler ends the session and shows the sign-in page again.
func (p *Pages) signOutHandler(a *area) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := p.readForm(w, r); !ok {
			return
		}
		p.signOut(w, r)
		seeOther(w, r, a.LoginPath(), "signed-out")
	}
}

// signInFailed shows the sign-in form again with what went wrong. A wrong
// email and a wrong password read alike, as in the API.
func (p *Pages) signInFailed(w http.ResponseWriter, r *http.Request, pg page, err error) {
	pg.Form.Del(fieldPassword)
	if verr, ok := errors.AsType[*domain.ValidationError](err); ok {
		for _, f := range verr.Fields {
			pg = pg.AddError(f.Field, fieldMessage(f.Field, f.Message))
		}
		p.renderConsole(w, r, http.StatusBadRequest, pg)
		return
	}
	status, msg := signInError(err)
	if status == 0 {
		p.consoleFail(w, r, pg.Area, nil, err)
		return
	}
	if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
		w.Header().Set("Retry-After", retryAfterSeconds(tooMany.RetryAfter))
	}
	p.renderConsole(w, r, status, pg.AddError("", msg))
}

// secondStepFailed shows the second step again with what went wrong, or,
// when its mfaToken no longer serves, the sign-in form.
func (p *Pages) secondStepFailed(w http.ResponseWriter, r *http.Request, a *area, next, token string, err error) {
	d := p.signInFor(r.Context(), next, r.PostForm.Get(fieldClient))
	switch {
	case errors.Is(err, domain.ErrInvalidMFAToken):
		pg := signInPage(a, d)
		p.renderConsole(w, r, http.StatusUnauthorized,
			pg.AddError("", "The sign-in took too long or had too many wrong codes. Sign in again."))
		return
	case errors.Is(err, domain.ErrMFACodeRejected), errors.Is(err, domain.ErrInvalidPasskey),
		errors.Is(err, domain.ErrMalformedPasskeyCredential):
		pg := secondStepPage(a, d, token, secondStepMethods(r))
		if errors.Is(err, domain.ErrMFACodeRejected) {
			p.renderConsole(w, r, http.StatusUnauthorized, pg.AddError(fieldCode,
				"The code is not right. Type the 6 digits your app shows now, or one of your recovery codes."))
			return
		}
		p.renderConsole(w, r, http.StatusUnauthorized, pg.AddError("", "The passkey was not accepted. Try again, or use a code."))
		return
	}
	if verr, ok := errors.AsType[*domain.ValidationError](err); ok {
		pg := secondStepPage(a, d, token, secondStepMethods(r))
		for _, f := range verr.Fields {
			pg = pg.AddError(fieldCode, fieldMessage(fieldCode, f.Message))
		}
		p.renderConsole(w, r, http.StatusBadRequest, pg)
		return
	}
	p.signInFailed(w, r, signInPage(a, d), err)
}

// secondStepMethods are the methods the second step offers again after a
// failure: those the form carried back (fieldMethods), as the login named
// them. Only the page's choice of inputs depends on it: a method the
// account lacks fails as a wrong answer does.
func secondStepMethods(r *http.Request) []string {
	var out []string
	for _, m := range strings.Split(r.PostForm.Get(fieldMethods), ",") {
		switch m {
		case domain.MFAMethodTOTP, domain.MFAMethodRecoveryCode, domain.MFAMethodPasskey:
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		out = []string{domain.MFAMethodTOTP, domain.MFAMethodRecoveryCode}
	}
	return out
}

// signInError is the status and message of a refused sign-in; 0 for an
// error that is not about the sign-in (the store is down).
func signInError(err error) (int, string) {
	switch {
	case errors.Is(err, domain.ErrInvalidCredentials):
		return http.StatusUnauthorized, "The email address or the password is not right."
	case errors.Is(err, domain.ErrInvalidPasskey), errors.Is(err, domain.ErrMalformedPasskeyCredential):
		return http.StatusUnauthorized, "The passkey was not accepted."
	case errors.Is(err, domain.ErrAccountDisabled):
		return http.StatusForbidden, "This account is disabled. Ask an administrator."
	case errors.Is(err, domain.ErrEmailNotVerified):
		return http.StatusForbidden, "Verify your email address first: open the link we sent you."
	case errors.Is(err, domain.ErrHookFailed):
		return http.StatusBadGateway, "The sign-in could not be completed. Try again later, or ask an administrator."
	}
	if refused, ok := errors.AsType[*domain.SignInRefusedError](err); ok {
		return http.StatusForbidden, refused.Message
	}
	if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
		return http.StatusTooManyRequests, "Too many failed attempts. Try again in " + waitText(tooMany.RetryAfter) + "."
	}
	return 0, ""
}
