package web

import (
	"context"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/userd/userd/domain"
)

// verifyForm shows the button that verifies the email of the link's
// token, and names the address it verifies, so that whoever opens the
// link knows what they confirm (a link may reach an address that is not
// the account's owner's). It looks at the token without using it: a mail
// scanner that follows the link changes nothing. A token that cannot
// serve (absent, malformed, unknown, used, expired) gets the page of an
// invalid link at once.
func (p *Pages) verifyForm(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get(fieldToken)
	if !domain.WellFormedLinkToken(token) {
		p.render(w, r, http.StatusBadRequest, invalidLink())
		return
	}
	email, err := p.mail.VerificationAddress(r.Context(), token)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, view{template: tmplVerify, Title: "Verify your email address", Token: token,
		Email: string(email)})
}

// verify uses the token of the form: the account's email is verified.
func (p *Pages) verify(w http.ResponseWriter, r *http.Request) {
	form, ok := p.readForm(w, r)
	if !ok {
		return
	}
	token := form.Get(fieldToken)
	if !domain.WellFormedLinkToken(token) {
		p.render(w, r, http.StatusBadRequest, invalidLink())
		return
	}
	u, err := p.mail.ConfirmEmail(r.Context(), token)
	if err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, message("Your email address is verified",
		string(u.Email)+" is confirmed as yours.", "You can close this page."))
}

// resetForm shows the form that sets a new password with the link's token,
// without using the token (see verifyForm).
func (p *Pages) resetForm(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get(fieldToken)
	if !domain.WellFormedLinkToken(token) {
		p.render(w, r, http.StatusBadRequest, invalidLink())
		return
	}
	p.render(w, r, http.StatusOK, resetView(token, nil))
}

func resetView(token string, errs map[string]string) view {
	return view{template: tmplReset, Title: "Choose a new password", Token: token, Errors: errs}
}

// reset sets the form's password with its token. Two passwords that differ
// are refused here, before the token is looked at; a password that fails
// the policy is refused by the use case, which leaves the token usable: in
// both cases the form comes back with the message beside its field.
func (p *Pages) reset(w http.ResponseWriter, r *http.Request) {
	form, ok := p.readForm(w, r)
	if !ok {
		return
	}
	token := form.Get(fieldToken)
	if !domain.WellFormedLinkToken(token) {
		p.render(w, r, http.StatusBadRequest, invalidLink())
		return
	}
	password := form.Get(fieldPassword)
	if password != form.Get(fieldConfirm) {
		p.render(w, r, http.StatusBadRequest, resetView(token, map[string]string{
			fieldConfirm: "The two passwords differ. Type the same password in both fields."}))
		return
	}
	err := p.mail.ResetPassword(r.Context(), token, password)
	var verr *domain.ValidationError
	if errors.As(err, &verr) {
		p.render(w, r, http.StatusBadRequest, resetView(token, map[string]string{fieldPassword: passwordMessage(verr)}))
		return
	}
	if err != nil {
		p.fail(w, r, err)
		return
	}
	p.render(w, r, http.StatusOK, message("Your password is changed",
		"Sign in with your new password.", "Every device that was signed in to your account has been signed out."))
}

// passwordMessage turns the policy's messages ("must be at least 8
// characters") into a sentence about the field.
func passwordMessage(verr *domain.ValidationError) string {
	var msgs []string
	for _, f := range verr.Fields {
		msgs = append(msgs, f.Message)
	}
	if len(msgs) == 0 {
		return "The new password is not accepted."
	}
	return "The new password " + strings.Join(msgs, " and ") + "."
}

// formContentType is what a browser sends for a form without files.
const formContentType = "application/x-www-form-urlencoded"

// readForm checks that a POST comes from the page itself and parses its
// form, answering when it cannot: 403 for a post from another origin (a
// cross-site request forgery, refused by Go's CrossOriginProtection), 415
// for a body that is not a form, 413 past maxFormBytes, 400 for a body
// that does not parse. Only the body counts: the token is never taken from
// the query of a POST.
func (p *Pages) readForm(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	return p.readFormUpTo(w, r, maxFormBytes)
}

// readFormUpTo is readForm for a form whose body may be up to maxBytes.
func (p *Pages) readFormUpTo(w http.ResponseWriter, r *http.Request, maxBytes int64) (url.Values, bool) {
	if err := p.csrf.Check(r); err != nil {
		p.render(w, r, http.StatusForbidden, statusPage(http.StatusForbidden))
		return nil, false
	}
	return p.parseFormUpTo(w, r, maxBytes)
}

// parseForm is readForm without the check of the origin, for the one
// form that other sites may send (an app's end_session, which changes
// nothing by itself).
func (p *Pages) parseForm(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	return p.parseFormUpTo(w, r, maxFormBytes)
}

func (p *Pages) parseFormUpTo(w http.ResponseWriter, r *http.Request, maxBytes int64) (url.Values, bool) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != formContentType {
		p.render(w, r, http.StatusUnsupportedMediaType, statusPage(http.StatusUnsupportedMediaType))
		return nil, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBytes)
	if err := r.ParseForm(); err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			p.render(w, r, http.StatusRequestEntityTooLarge, statusPage(http.StatusRequestEntityTooLarge))
			return nil, false
		}
		p.render(w, r, http.StatusBadRequest, statusPage(http.StatusBadRequest))
		return nil, false
	}
	return r.PostForm, true
}

// fail answers an error of a use case. Its text is for the log only: it
// may name internals.
func (p *Pages) fail(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	switch {
	case errors.Is(err, domain.ErrInvalidLinkToken):
		p.render(w, r, http.StatusBadRequest, invalidLink())
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer.
		p.log.LogAttrs(ctx, slog.LevelDebug, "page request abandoned by the client", slog.String("path", r.URL.Path))
		p.render(w, r, http.StatusServiceUnavailable, statusPage(http.StatusServiceUnavailable))
	case errors.Is(err, domain.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		// Expected in an outage or under overload, but operators need to see it.
		p.log.LogAttrs(ctx, slog.LevelWarn, "page request failed: unavailable",
			slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		w.Header().Set("Retry-After", "5")
		p.render(w, r, http.StatusServiceUnavailable, statusPage(http.StatusServiceUnavailable))
	default:
		p.log.LogAttrs(ctx, slog.LevelError, "page request failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		v := statusPage(http.StatusInternalServerError)
		v.RequestID = domain.RequestMetaFrom(ctx).RequestID
		p.render(w, r, http.StatusInternalServerError, v)
	}
}
