package web

import (
	"encoding/base64"
	"errors"
	"net/http"
	"time"

	"github.com/userd/userd/domain"
)

// MagicLinkPath is the page the link of a sign-in message opens
// (USERD_PUBLIC_URL/account/magic?token=T): its GET shows a button that
// POSTs the token back, which signs the browser in.
const MagicLinkPath = "/account/magic"

// MagicNextCookie carries, from the sign-in page that asked for a code to
// the magic link's page in the same browser, where the sign-in goes on
// (next: a path of userd, or the continuation of an app's flow). It holds
// no secret: its value is judged by nextPath when used, as a form's next
// is, so a forged one can only pick another page of userd.
const MagicNextCookie = "__Host-userd_magic"

// The templates of the sign-in by email.
const (
	tmplEmailCode = "emailcode.html"
	tmplMagicLink = "magiclink.html"
)

// emailCodeData is what the page that asks for the code shows.
type emailCodeData struct {
	signInData
	Email string
}

// magicLinkData is what the magic link's page carries into its form.
type magicLinkData struct {
	Token string
}

// routeEmailSignIn routes the sign-in by email of a: the request for a
// code from the sign-in page, the code's page, and (once, for the
// account area) the magic link's page.
func (p *Pages) routeEmailSignIn(a *area) {
	if !p.svc.EmailSignIn.Enabled() {
		return
	}
	p.mux.HandleFunc("POST "+a.LoginPath()+"/email-code", p.requestEmailCode(a))
	p.mux.HandleFunc("POST "+a.LoginPath()+"/email-code/verify", p.verifyEmailCode(a))
	if a == accountArea {
		p.mux.HandleFunc("GET "+MagicLinkPath, p.magicLinkForm)
		p.mux.HandleFunc("POST "+MagicLinkPath, p.magicLink)
	}
}

// emailCodePage is the page where the person types the code sent to
// email, carrying next and the app of a flow on.
func emailCodePage(a *area, d signInData, email string) page {
	d.StartAgain = startAgainPath(a, d)
	pg := newPage(a, nil, tmplEmailCode, "Check your email")
	pg.Data = emailCodeData{signInData: d, Email: email}
	return pg
}

// requestEmailCode asks for a code for the form's email (the "Email me a
// code" button of the sign-in form) and shows the page to type it in,
// whether or not an account has the address: the page says so.
func (p *Pages) requestEmailCode(a *area) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		form, ok := p.readForm(w, r)
		if !ok {
			return
		}
		next := nextPath(a, form.Get(fieldNext))
		d := p.signInFor(r.Context(), next, form.Get(fieldClient))
		email := form.Get(fieldEmail)
		if err := p.svc.EmailSignIn.RequestCode(r.Context(), email); err != nil {
			pg := signInPage(a, d)
			pg.Form = form
			p.signInFailed(w, r, pg, err)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: MagicNextCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(next)),
			Path: "/", MaxAge: int(domain.DefaultEmailCodeTTL / time.Second), Secure: true, HttpOnly: true,
			SameSite: http.SameSiteLaxMode})
		p.renderConsole(w, r, http.StatusOK, emailCodePage(a, d, email))
	}
}

// verifyEmailCode signs in with the code typed on the code's page:
// the session, or the second step (signedIn).
func (p *Pages) verifyEmailCode(a *area) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		form, ok := p.readForm(w, r)
		if !ok {
			return
		}
		next := nextPath(a, form.Get(fieldNext))
		email := form.Get(fieldEmail)
		res, err := p.svc.EmailSignIn.VerifyCode(signInContext(r), email, form.Get(fieldCode))
		if err != nil {
			pg := emailCodePage(a, p.signInFor(r.Context(), next, form.Get(fieldClient)), email)
			p.emailCodeFailed(w, r, pg, err)
			return
		}
		forgetMagicNext(w)
		p.signedIn(w, r, a, next, res)
	}
}

// emailCodeFailed shows the code's page again with what went wrong.
func (p *Pages) emailCodeFailed(w http.ResponseWriter, r *http.Request, pg page, err error) {
	switch {
	case errors.Is(err, domain.ErrInvalidEmailCode):
		p.renderConsole(w, r, http.StatusUnauthorized, pg.AddError(fieldCode,
			"The code is not right, or no longer works. Type the 6 digits of the newest message, or ask for a new code."))
		return
	case errors.As(err, new(*domain.ValidationError)):
		p.renderConsole(w, r, http.StatusBadRequest, pg.AddError(fieldCode, fieldMessage(fieldCode, "must not be empty")))
		return
	}
	p.signInFailed(w, r, pg, err)
}

// magicLinkForm is the magic link's page: a button that POSTs the token.
// The GET neither looks at nor uses the token: a mail scanner that
// follows the link changes nothing.
func (p *Pages) magicLinkForm(w http.ResponseWriter, r *http.Request) {
	pg := newPage(accountArea, nil, tmplMagicLink, "Sign in")
	pg.Data = magicLinkData{Token: r.URL.Query().Get("token")}
	p.renderConsole(w, r, http.StatusOK, pg)
}

// magicLink signs the browser in with the link's token, and goes on where
// the sign-in page that asked for the code was going (MagicNextCookie),
// or to the account page.
func (p *Pages) magicLink(w http.ResponseWriter, r *http.Request) {
	form, ok := p.readForm(w, r)
	if !ok {
		return
	}
	next := accountArea.Prefix
	if c, err := r.Cookie(MagicNextCookie); err == nil {
		if b, err := base64.RawURLEncoding.DecodeString(c.Value); err == nil {
			next = nextPath(accountArea, string(b))
		}
	}
	res, err := p.svc.EmailSignIn.VerifyLink(signInContext(r), form.Get("token"))
	if err != nil {
		if errors.Is(err, domain.ErrInvalidEmailCode) {
			pg := signInPage(accountArea, p.signInFor(r.Context(), next, ""))
			p.renderConsole(w, r, http.StatusUnauthorized, pg.AddError("",
				"The link is not right, or no longer works: it works once, for a few minutes, and a newer message replaces it. Ask for a new code."))
			return
		}
		p.signInFailed(w, r, signInPage(accountArea, p.signInFor(r.Context(), next, "")), err)
		return
	}
	forgetMagicNext(w)
	p.signedIn(w, r, accountArea, next, res)
}

// forgetMagicNext deletes MagicNextCookie once a sign-in by email is done.
func forgetMagicNext(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: MagicNextCookie, Value: "", Path: "/", MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}
