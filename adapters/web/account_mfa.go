package web

import (
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"strings"

	"github.com/userd/userd/domain"
)

// routeAccountMFA routes the two-step page: the authenticator app (TOTP)
// and the recovery codes.
func (p *Pages) routeAccountMFA() {
	a := accountArea
	p.mux.HandleFunc("GET "+accountMFAPath, p.guard(a, p.mfaPage))
	p.mux.HandleFunc("POST "+accountMFAPath+"/totp", p.guard(a, p.beginTOTP))
	p.mux.HandleFunc("POST "+accountMFAPath+"/totp/confirm", p.guard(a, p.confirmTOTP))
	p.mux.HandleFunc("POST "+accountMFAPath+"/totp/disable", p.guard(a, p.disableTOTP))
	p.mux.HandleFunc("POST "+accountMFAPath+"/recovery-codes", p.guard(a, p.renewCodes))
	p.mux.HandleFunc("POST "+accountCodesTextPath, p.guard(a, p.downloadCodes))
}

// mfaData is what the two-step page shows: the account's factors.
type mfaData struct {
	domain.MFASummary
}

// mfaPage shows the account's second factors and the forms that change
// them.
func (p *Pages) mfaPage(w http.ResponseWriter, r *http.Request, v visitor) {
	pg, err := p.mfaForm(r, v)
	if err != nil {
		p.accountFail(w, r, v, err)
		return
	}
	p.renderConsole(w, r, http.StatusOK, pg)
}

func (p *Pages) mfaForm(r *http.Request, v visitor) (page, error) {
	summary, err := p.svc.MFA.Summary(r.Context(), v.principal)
	if err != nil {
		return page{}, err
	}
	pg := accountPage(r, &v, tmplAccountMFA, "Two-step verification", accountMFAPath)
	pg.Data = mfaData{MFASummary: summary}
	return pg, nil
}

// totpData is the page of a TOTP set-up: the QR code and the secret of
// the pending factor, shown in the answer of the POST that made it and
// never again (no use case reads them back, and neither ever travels in a
// form or a URL); after a wrong first code, only the code form, and the
// way to start again.
type totpData struct {
	// QR is the otpauth URI as a data: URL of a PNG.
	QR template.URL
	// Secret is the base32 secret in groups of four, to type by hand.
	Secret string
	// Retry is the page after a wrong first code: no QR code.
	Retry bool
}

// beginTOTP makes a pending TOTP factor, proven by the current password,
// and shows its QR code with the form of the first code. A reload of this
// answer posts again, after the browser asks, and makes a new factor in
// place of this one (BeginTOTP replaces a pending factor).
func (p *Pages) beginTOTP(w http.ResponseWriter, r *http.Request, v visitor) {
	current := r.PostForm.Get(fieldCurrentPassword)
	fields := map[string]string{fieldCurrentPassword: fieldCurrentPassword}
	e, err := p.svc.MFA.BeginTOTP(r.Context(), v.principal, &current)
	if errors.Is(err, domain.ErrMFAAlreadyEnabled) {
		seeOther(w, r, accountMFAPath, "totp-on-already")
		return
	}
	if err != nil {
		p.refused(w, r, v, err, fields, func() (page, error) { return p.mfaForm(r, v) })
		return
	}
	png, err := TOTPQRCode(e.URI)
	if err != nil {
		p.consoleFail(w, r, accountArea, &v, err)
		return
	}
	pg := accountPage(r, &v, tmplAccountTOTP, "Set up your authenticator app", accountMFAPath)
	pg.Data = totpData{
		//nolint:gosec // G203: a data: URL of the PNG made here, from base64 text only.
		QR:     template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(png)),
		Secret: groupsOf(e.Secret, 4),
	}
	p.renderConsole(w, r, http.StatusOK, pg)
}

// groupsOf splits s into groups of n characters, for a person to read.
func groupsOf(s string, n int) string {
	var b strings.Builder
	for i := 0; i < len(s); i += n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s[i:min(i+n, len(s))])
	}
	return b.String()
}

// confirmTOTP turns the pending factor on with its first code, and shows
// the recovery codes that come with it.
func (p *Pages) confirmTOTP(w http.ResponseWriter, r *http.Request, v visitor) {
	code := r.PostForm.Get(fieldCode)
	codes, err := p.svc.MFA.ConfirmTOTP(r.Context(), v.principal, &code)
	switch {
	case errors.Is(err, domain.ErrMFAAlreadyEnabled):
		seeOther(w, r, accountMFAPath, "totp-on-already")
		return
	case errors.Is(err, domain.ErrMFANotEnabled):
		// No pending factor: never begun, or replaced by another set-up.
		seeOther(w, r, accountMFAPath, "totp-restart")
		return
	case errors.Is(err, domain.ErrInvalidMFACode):
		// There are no recovery codes yet: only the app's code serves.
		err = fieldRefusal(http.StatusBadRequest, fieldCode, "The code is not right. Type the 6 digits your app shows now.")
	}
	if err != nil {
		p.refused(w, r, v, err, map[string]string{fieldCode: fieldCode}, func() (page, error) {
			pg := accountPage(r, &v, tmplAccountTOTP, "Set up your authenticator app", accountMFAPath)
			pg.Data = totpData{Retry: true}
			return pg, nil
		})
		return
	}
	p.showCodes(w, r, v, codes, false)
}

// disableTOTP turns the authenticator app off, proven by one of its codes
// or a recovery code.
func (p *Pages) disableTOTP(w http.ResponseWriter, r *http.Request, v visitor) {
	code := r.PostForm.Get(fieldCode)
	err := p.svc.MFA.DisableTOTP(r.Context(), v.principal, &code)
	if errors.Is(err, domain.ErrMFANotEnabled) {
		seeOther(w, r, accountMFAPath, "totp-off-already")
		return
	}
	if err != nil {
		p.refused(w, r, v, err, map[string]string{fieldCode: fieldDisableCode}, func() (page, error) { return p.mfaForm(r, v) })
		return
	}
	seeOther(w, r, accountMFAPath, "totp-off")
}

// renewCodes replaces the recovery codes, proven by a code (an account
// whose only factors are passkeys may have none to give: its session
// must then have signed in with a passkey, or recently; the use case
// judges), and shows the new ones.
func (p *Pages) renewCodes(w http.ResponseWriter, r *http.Request, v visitor) {
	code := r.PostForm.Get(fieldCode)
	codes, err := p.svc.MFA.RenewRecoveryCodes(r.Context(), v.principal, &code)
	if errors.Is(err, domain.ErrMFANotEnabled) {
		seeOther(w, r, accountMFAPath, "no-codes")
		return
	}
	if err != nil {
		p.refused(w, r, v, err, map[string]string{fieldCode: fieldRenewCode}, func() (page, error) { return p.mfaForm(r, v) })
		return
	}
	p.showCodes(w, r, v, codes, true)
}

// codesData is the page of new recovery codes.
type codesData struct {
	Codes []string
	// Renewed is true when they replace older ones; false when they come
	// with a factor just turned on.
	Renewed bool
}

// showCodes shows new recovery codes, once: in the answer of the POST
// that made them (no-store, like every page), never stored for a later
// GET.
func (p *Pages) showCodes(w http.ResponseWriter, r *http.Request, v visitor, codes []string, renewed bool) {
	pg := accountPage(r, &v, tmplAccountCodes, "Save your recovery codes", accountMFAPath)
	pg.Data = codesData{Codes: codes, Renewed: renewed}
	p.renderConsole(w, r, http.StatusOK, pg)
}

// downloadCodes answers the recovery codes that the codes page posts
// back, as a text file to save. It stores nothing; it answers only a list
// of what can be recovery codes (domain.ParseRecoveryCode), so that it
// cannot serve as a reflector of any text under userd's name.
func (p *Pages) downloadCodes(w http.ResponseWriter, r *http.Request, v visitor) {
	posted := r.PostForm[fieldCodes]
	if len(posted) == 0 || len(posted) > domain.RecoveryCodeCount {
		p.notCodes(w, r, v)
		return
	}
	var b strings.Builder
	b.WriteString("Recovery codes of the userd account " + string(v.user.Email) + "\n\n")
	b.WriteString("Each code signs you in once, in place of your authenticator app or passkey.\n")
	b.WriteString("Keep them somewhere safe, away from your phone.\n\n")
	for _, c := range posted {
		code, ok := domain.ParseRecoveryCode(c)
		if !ok {
			p.notCodes(w, r, v)
			return
		}
		b.WriteString(code + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="userd-recovery-codes.txt"`)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(b.String()))
}

// notCodes refuses a download of what are not recovery codes.
func (p *Pages) notCodes(w http.ResponseWriter, r *http.Request, v visitor) {
	pg := newPage(accountArea, &v, tmplNotice, "These are not recovery codes")
	pg.Data = noticeData{Paragraphs: []string{"Only the recovery codes that the page showed can be downloaded."},
		Link: navLink{accountMFAPath, "Back to two-step verification"}}
	p.renderConsole(w, r, http.StatusBadRequest, pg)
}
