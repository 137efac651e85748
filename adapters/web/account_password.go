package web

import (
	"net/http"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// passwordPage shows the form that changes the password.
func (p *Pages) passwordPage(w http.ResponseWriter, r *http.Request, v visitor) {
	p.renderConsole(w, r, http.StatusOK, passwordForm(r, v))
}

func passwordForm(r *http.Request, v visitor) page {
	return accountPage(r, &v, tmplAccountPassword, "Password", accountPasswordPath)
}

// changePassword changes the visitor's password, proven by the current
// one, which the page always asks for and the use case checks (under the
// login lock-out, audited). Two new passwords that differ are refused
// here, before anything is checked; the policy is the use case's. The
// use case ends every session of the account, this one too, and mails a
// notice: the visitor lands on the sign-in page, which says so.
func (p *Pages) changePassword(w http.ResponseWriter, r *http.Request, v visitor) {
	form := r.PostForm
	current, password := form.Get(fieldCurrentPassword), form.Get(fieldPassword)
	fields := map[string]string{fieldCurrentPassword: fieldCurrentPassword, fieldPassword: fieldNewPassword,
		fieldConfirm: fieldConfirm}
	build := func() (page, error) { return passwordForm(r, v), nil }
	if password != form.Get(fieldConfirm) {
		verr := &domain.ValidationError{}
		verr.Add(fieldConfirm, "must be the same as the new password")
		p.refused(w, r, v, verr, fields, build)
		return
	}
	if current == "" {
		p.refused(w, r, v, missing(fieldCurrentPassword), fields, build)
		return
	}
	_, err := p.svc.Users.Update(r.Context(), v.principal, string(v.user.ID),
		application.UpdateInput{Password: &password, CurrentPassword: &current})
	if err != nil {
		p.refused(w, r, v, err, fields, build)
		return
	}
	p.signedOutByChange(w, r, "password-changed")
}
