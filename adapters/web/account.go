package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The pages of the account area, one a menu entry, each with its own
// forms: a page never holds two inputs of one name, so that an error is
// tied to the one input it is about.
const (
	accountEmailPath    = AccountPrefix + "email"
	accountPasswordPath = AccountPrefix + "password"
	accountMFAPath      = AccountPrefix + "mfa"
	accountPasskeysPath = AccountPrefix + "passkeys"
	accountSessionsPath = AccountPrefix + "sessions"
	// accountCodesTextPath answers recovery codes as a text file.
	accountCodesTextPath = AccountPrefix + "recovery-codes.txt"
)

// The account pages' templates.
const (
	tmplAccountHome     = "account_home.html"
	tmplAccountPassword = "account_password.html"
	tmplAccountMFA      = "account_mfa.html"
	tmplAccountTOTP     = "account_totp.html"
	tmplAccountCodes    = "account_codes.html"
	tmplAccountPasskeys = "account_passkeys.html"
	tmplAccountPasskey  = "account_passkey.html"
	tmplAccountSessions = "account_sessions.html"
)

// The account forms' fields that have no constant of the sign-in's.
const (
	fieldName            = domain.FieldName
	fieldCurrentPassword = application.FieldCurrentPassword
	// fieldNewPassword is the id of the password page's new password
	// (named password, as in the API), for its messages.
	fieldNewPassword = "newPassword"
	// fieldDisableCode and fieldRenewCode are the ids of the two code
	// inputs of the two-step page (both named code).
	fieldDisableCode = "disable-code"
	fieldRenewCode   = "renew-code"
	fieldCodes       = "codes"
	fieldUnderstood  = "understood"
)

// limitedAccountPosts are the account page's actions that check a
// password or a code: they fall under the per-IP allowance of /auth
// (LimitedByIP).
var limitedAccountPosts = map[string]bool{
	accountEmailPath:                   true,
	accountPasswordPath:                true,
	accountMFAPath + "/totp":           true,
	accountMFAPath + "/totp/confirm":   true,
	accountMFAPath + "/totp/disable":   true,
	accountMFAPath + "/recovery-codes": true,
	accountPasskeysPath + "/options":   true,
}

// routeAccount routes the account page and its actions. Every one is
// behind guard: signed in, state changes by POST from userd's own pages
// only.
func (p *Pages) routeAccount() {
	a := accountArea
	p.mux.HandleFunc("GET "+a.Prefix+"{$}", p.guard(a, p.accountHome))
	p.mux.HandleFunc("POST "+a.Prefix+"name", p.guard(a, p.changeName))
	p.mux.HandleFunc("POST "+accountEmailPath, p.guard(a, p.changeEmail))
	p.mux.HandleFunc("GET "+accountPasswordPath, p.guard(a, p.passwordPage))
	p.mux.HandleFunc("POST "+accountPasswordPath, p.guard(a, p.changePassword))
	p.routeAccountMFA()
	p.routeAccountPasskeys()
	p.routeAccountSessions()
	p.routeAccountApps()
	p.routeAccountIdentities()
	p.routeAccountTokens()
}

// accountNotices are what the account pages say after an action's
// redirect.
var accountNotices = map[string]string{
	"name-changed":     "Your name is changed.",
	"email-same":       "That is your email address already: nothing changed.",
	"totp-off":         "The authenticator app is turned off: signing in no longer asks for its codes.",
	"totp-off-already": "The authenticator app was off already.",
	"totp-on-already":  "The authenticator app is on already.",
	"totp-restart":     "That set-up had ended or was replaced by another. Start again.",
	"passkey-added":    "The passkey is added. You can sign in with it.",
	"passkey-renamed":  "The passkey is renamed.",
	"passkey-removed":  "The passkey is removed: it no longer signs you in.",
	"passkey-gone":     "That passkey was removed already.",
	"session-ended":    "That session is signed out.",
	"session-gone":     "That session had ended already.",
	"others-ended":     "Every other session is signed out. This one goes on.",
	"no-others":        "There was no other session to sign out.",
	"no-codes":         "Two-step verification is off: there are no recovery codes to renew.",
	"app-revoked":      "The app's access is removed: it is signed out, and asks you again at your next sign-in.",
	"app-gone":         "That app had no access any more.",
}

// accountPage starts a page of the account area, with the notice of the
// action that led to it.
func accountPage(r *http.Request, v *visitor, tmpl, title, nav string) page {
	pg := newPage(accountArea, v, tmpl, title)
	pg.Nav = nav
	pg.Notice = noticeOf(r, accountNotices)
	return pg
}

// profileData is what the home page shows besides its forms.
type profileData struct {
	Name, Email   string
	EmailVerified bool
	MFA           bool
	// Metadata and AppMetadata are the account's objects, indented for
	// reading: the page shows them and changes neither.
	Metadata, AppMetadata string
}

// prettyJSON is m indented by two spaces.
func prettyJSON(m domain.Metadata) string {
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(m.String()), "", "  "); err != nil {
		return m.String() // canonical JSON always indents; shown as is otherwise
	}
	return b.String()
}

// accountHome is the signed-in person's own page: the profile, and the
// forms that change the name and the email address.
func (p *Pages) accountHome(w http.ResponseWriter, r *http.Request, v visitor) {
	p.renderConsole(w, r, http.StatusOK, homePage(r, v))
}

func homePage(r *http.Request, v visitor) page {
	pg := accountPage(r, &v, tmplAccountHome, "My account", AccountPrefix)
	pg.Data = profileData{Name: v.user.Name, Email: string(v.user.Email), EmailVerified: v.user.EmailVerified,
		MFA: v.user.MFAEnabled, Metadata: prettyJSON(v.user.Metadata), AppMetadata: prettyJSON(v.user.AppMetadata)}
	return pg
}

// changeName changes the visitor's name.
func (p *Pages) changeName(w http.ResponseWriter, r *http.Request, v visitor) {
	name := r.PostForm.Get(fieldName)
	_, err := p.svc.Users.Update(r.Context(), v.principal, string(v.user.ID), application.UpdateInput{Name: &name})
	if err != nil {
		p.refused(w, r, v, err, map[string]string{fieldName: fieldName}, func() (page, error) { return homePage(r, v), nil })
		return
	}
	seeOther(w, r, AccountPrefix, "name-changed")
}

// changeEmail changes the visitor's email address, proven by the current
// password, which the page always asks for and the use case checks. The
// use case mails a verification link to the new address and a notice to
// the old one, and ends every session of the account, this one too: the
// visitor lands on the sign-in page, which says so.
func (p *Pages) changeEmail(w http.ResponseWriter, r *http.Request, v visitor) {
	email, current := r.PostForm.Get(fieldEmail), r.PostForm.Get(fieldCurrentPassword)
	fields := map[string]string{fieldEmail: fieldEmail, fieldCurrentPassword: fieldCurrentPassword}
	build := func() (page, error) { return homePage(r, v), nil }
	if current == "" {
		p.refused(w, r, v, missing(fieldCurrentPassword), fields, build)
		return
	}
	u, err := p.svc.Users.Update(r.Context(), v.principal, string(v.user.ID),
		application.UpdateInput{Email: &email, CurrentPassword: &current})
	if err != nil {
		p.refused(w, r, v, err, fields, build)
		return
	}
	if u.Email == v.user.Email {
		seeOther(w, r, AccountPrefix, "email-same")
		return
	}
	p.signedOutByChange(w, r, "email-changed")
}

// signedOutByChange ends the visit after a change that ended every
// session of the account, the visitor's too, on the sign-in page, which
// says why.
func (p *Pages) signedOutByChange(w http.ResponseWriter, r *http.Request, done string) {
	signedOutTo(w, r, accountArea, done)
}

// missing is the validation error of a required field left empty: the
// account forms ask for the current password even where the use case
// would do without (USERD_REQUIRE_CURRENT_PASSWORD off); an empty one is
// refused here rather than sent and counted as a wrong password.
func missing(field string) error {
	verr := &domain.ValidationError{}
	verr.Add(field, "must not be empty")
	return verr
}

// refused answers an account form that the use case refused: the form's
// page again (build makes it), with each message beside its field, what
// was typed kept (passwords and codes never), and the status of the
// refusal. fields maps the use case's field names to the ids of the
// page's inputs; a message about any other field is about the form. A
// session that ended meanwhile goes to the sign-in page; an unexpected
// error to the failure page.
func (p *Pages) refused(w http.ResponseWriter, r *http.Request, v visitor, err error, fields map[string]string,
	build func() (page, error)) {
	status, messages := refusal(err)
	if status == 0 {
		p.accountFail(w, r, v, err)
		return
	}
	pg, berr := build()
	if berr != nil {
		p.accountFail(w, r, v, berr)
		return
	}
	pg.Form = typedValues(r.PostForm)
	pg = withRefusal(pg, messages, fields)
	if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
		w.Header().Set("Retry-After", retryAfterSeconds(tooMany.RetryAfter))
	}
	if budget, ok := errors.AsType[*domain.MailBudgetError](err); ok {
		w.Header().Set("Retry-After", retryAfterSeconds(budget.RetryAfter))
	}
	p.renderConsole(w, r, status, pg)
}

// accountFail answers an error that is not about the form: a session
// that ended meanwhile (revoked from elsewhere) goes to the sign-in page;
// a path that names no passkey, session or token of the visitor's (malformed,
// or another's, or gone) is 404; anything else gets the failure page.
func (p *Pages) accountFail(w http.ResponseWriter, r *http.Request, v visitor, err error) {
	switch {
	case errors.Is(err, domain.ErrUnauthenticated), errors.Is(err, domain.ErrInvalidToken):
		clearConsoleCookie(w)
		p.toSignIn(w, r, accountArea, false)
	case errors.Is(err, domain.ErrPasskeyNotFound), errors.Is(err, domain.ErrSessionNotFound),
		errors.Is(err, domain.ErrInvalidID), errors.Is(err, domain.ErrInvalidSessionID),
		errors.Is(err, domain.ErrPersonalTokenNotFound):
		p.accountNotFound(w, r, v)
	default:
		p.consoleFail(w, r, accountArea, &v, err)
	}
}

// secretFields are never shown again: passwords and codes.
var secretFields = []string{fieldPassword, fieldCurrentPassword, fieldConfirm, fieldCode, fieldCodes}

// typedValues is what the person typed in a form, without its secrets,
// to fill the form again.
func typedValues(form url.Values) url.Values {
	out := url.Values{}
	for k, vs := range form {
		out[k] = vs
	}
	for _, k := range secretFields {
		delete(out, k)
	}
	return out
}

// InputAs is Input for an input whose id differs from its name (two forms
// of a page that send a field of one name): its error is the one of id.
func (pg page) InputAs(id, name, label, typ, autocomplete string) inputView {
	in := pg.Input(name, label, typ, autocomplete).WithID(id)
	in.Error = pg.ErrorFor(id)
	return in
}

// accountNotFound answers a path of the account area that names a thing
// the visitor does not have (a passkey, a session).
func (p *Pages) accountNotFound(w http.ResponseWriter, r *http.Request, v visitor) {
	sp := statusPage(http.StatusNotFound)
	pg := newPage(accountArea, &v, tmplNotice, sp.Title)
	pg.Data = noticeData{Paragraphs: sp.Paragraphs, Link: navLink{AccountPrefix, "Back to my account"}}
	p.renderConsole(w, r, http.StatusNotFound, pg)
}

// formRefusal is a refusal of a form as a whole (field "") or of one of
// its fields, in a sentence of the page's own, with its status, for
// refused; formError and fieldRefusal make one.
type formRefusal struct {
	status         int
	field, message string
}

func formError(status int, message string) error {
	return &formRefusal{status: status, message: message}
}

func fieldRefusal(status int, field, message string) error {
	return &formRefusal{status: status, field: field, message: message}
}

func (e *formRefusal) Error() string { return e.message }
