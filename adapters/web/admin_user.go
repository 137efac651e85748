package web

import (
	"net/http"
	"net/url"
	"slices"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// The edit form's fields besides name and email: the profiles
// (checkboxes), and the metadata and appMetadata (textareas), each of
// these with a hidden field holding the value the form was filled with
// (metadataShown, appMetadataShown).
const (
	fieldProfiles    = domain.FieldProfiles
	fieldMetadata    = domain.FieldMetadata
	fieldAppMetadata = domain.FieldAppMetadata
	shownSuffix      = "Shown"
)

// adminUserNotices are the notices of a user's page, one per action.
var adminUserNotices = map[string]string{
	"saved":             "The changes are saved.",
	"disabled":          "The account is disabled, and its sessions are ended.",
	"enabled":           "The account is enabled.",
	"verified":          "The email address is marked as verified.",
	"reset-sent":        "A password reset link is on its way to the account's email address.",
	"unlocked":          "Failed sign-in attempts are cleared: the account can sign in again.",
	"mfa-reset":         "Every second factor of the account is removed, and its sessions are ended.",
	"session-revoked":   "The session is ended.",
	"sessions-revoked":  "Every session of the account is ended.",
	"identity-unlinked": "The linked account is unlinked: it no longer signs the account in.",
	"identity-gone":     "That account was not linked any more.",
	"token-revoked":     "The access token is revoked: it no longer works.",
	"token-gone":        "That access token was revoked or had expired already.",
}

// adminUserData is a user's page.
type adminUserData struct {
	User domain.User
	// Path is the page's address, and the start of its actions'.
	Path    string
	Created string
	Updated string
	// Self is true on the admin's own page, whose edit form asks for the
	// current password (a change of their own email may need it).
	Self     bool
	Profiles []profileChoice
	Sessions []sessionRow
	// Identities are its accounts at other providers, each with its
	// unlink.
	Identities []identityRow
	// Tokens are its live personal access tokens, each with its revoke.
	Tokens []tokenRow
}

// profileChoice is a checkbox of the edit form.
type profileChoice struct {
	ID, Value, Label string
	Checked          bool
}

// profileLabels are the profiles the edit form offers, in its order.
var profileLabels = []struct {
	Profile domain.Profile
	Label   string
}{
	{domain.ProfileCustomer, "Customer (ROLE_CUSTOMER)"},
	{domain.ProfileAdmin, "Administrator (ROLE_ADMIN)"},
}

// adminUser shows a user: details, the edit form, the actions and the
// sessions.
func (p *Pages) adminUser(w http.ResponseWriter, r *http.Request, v visitor) {
	pg, err := p.userPage(r, v, nil)
	if err != nil {
		p.adminFailed(w, r, &v, err)
		return
	}
	pg.Notice = noticeOf(r, adminUserNotices)
	p.renderConsole(w, r, http.StatusOK, pg)
}

// userPage builds the page of the user of the request's path, its edit
// form filled with form (what was typed), or with the stored values when
// form is nil.
func (p *Pages) userPage(r *http.Request, v visitor, form url.Values) (page, error) {
	ctx := r.Context()
	rawID := r.PathValue("id")
	u, err := p.svc.Users.Get(ctx, v.principal, rawID)
	if err != nil {
		return page{}, err
	}
	sessions, err := p.svc.Sessions.List(ctx, v.principal, rawID)
	if err != nil {
		return page{}, err
	}
	identities, err := p.userIdentityRows(ctx, v, u)
	if err != nil {
		return page{}, err
	}
	tokens, err := p.userTokenRows(ctx, v, u)
	if err != nil {
		return page{}, err
	}
	pg := newPage(adminArea, &v, tmplAdminUser, string(u.Email))
	pg.Nav = adminUsersPath
	if form == nil {
		form = url.Values{fieldName: {u.Name}, fieldEmail: {string(u.Email)}, fieldProfiles: u.Profiles.Strings(),
			fieldMetadata: {prettyJSON(u.Metadata)}, fieldMetadata + shownSuffix: {u.Metadata.String()},
			fieldAppMetadata: {prettyJSON(u.AppMetadata)}, fieldAppMetadata + shownSuffix: {u.AppMetadata.String()}}
	}
	form.Del(fieldCurrentPassword)
	pg.Form = form
	d := adminUserData{User: u, Path: userPath(u.ID), Created: consoleTime(u.CreatedAt), Updated: consoleTime(u.UpdatedAt),
		Self: u.ID == v.user.ID, Identities: identities, Tokens: tokens}
	for _, c := range profileLabels {
		d.Profiles = append(d.Profiles, profileChoice{ID: "profile-" + string(c.Profile), Value: string(c.Profile),
			Label: c.Label, Checked: slices.Contains(form[fieldProfiles], string(c.Profile))})
	}
	for _, s := range sessions {
		d.Sessions = append(d.Sessions, newSessionRow(s))
	}
	pg.Data = d
	return pg, nil
}

// adminUpdateUser saves the edit form: name, email, profiles, metadata
// and appMetadata, through UserService.Update as PUT /api/users/{id}
// does. A refused change comes back with its messages beside its fields
// and what was typed.
func (p *Pages) adminUpdateUser(w http.ResponseWriter, r *http.Request, v visitor) {
	form := r.PostForm
	name, email := form.Get(fieldName), form.Get(fieldEmail)
	// No box ticked is no profile at all, which the use case refuses:
	// an absent field would keep the profiles unchanged instead.
	profiles := form[fieldProfiles]
	if profiles == nil {
		profiles = []string{}
	}
	in := application.UpdateInput{Name: &name, Email: &email, Profiles: profiles,
		Metadata: editedMetadata(form, fieldMetadata), AppMetadata: editedMetadata(form, fieldAppMetadata)}
	if pw := form.Get(fieldCurrentPassword); pw != "" {
		in.CurrentPassword = &pw
	}
	rawID := r.PathValue("id")
	_, err := p.svc.Users.Update(r.Context(), v.principal, rawID, in)
	if err == nil {
		p.afterUserAction(w, r, v, "saved")
		return
	}
	status, pg, ok := p.updateRefused(r, v, err, form)
	if !ok {
		p.adminFailed(w, r, &v, err)
		return
	}
	p.renderConsole(w, r, status, pg)
}

// editedMetadata is the form's metadata field to send to the use case,
// nil when the form does not hold it or holds the value it was filled
// with (the hidden field beside it), whatever its spacing: saving a name
// then leaves the object alone, even if another admin or the API changed
// it since the page was shown. Anything else is sent as typed, for the
// use case to judge.
func editedMetadata(form url.Values, field string) []byte {
	typed, ok := form[field]
	if !ok {
		return nil
	}
	raw := []byte(typed[0])
	if shown, ok := form[field+shownSuffix]; ok {
		// Only to compare: the use case applies the field's own limit.
		if m, msg := domain.ParseMetadata(raw, maxUserFormBytes); msg == "" && m.String() == shown[0] {
			return nil
		}
	}
	return raw
}

// updateRefused is the user's page again with the reason an update was
// refused beside its field, or on the form, and the edit form filled with
// form (nil: the stored values, after a button's action); ok is false for
// an error that is not about the change (the user is gone, the store is
// down).
func (p *Pages) updateRefused(r *http.Request, v visitor, err error, form url.Values) (int, page, bool) {
	status, messages := refusal(err)
	if status == 0 {
		return 0, page{}, false
	}
	pg, perr := p.userPage(r, v, form)
	if perr != nil {
		return 0, page{}, false
	}
	return status, withRefusal(pg, messages, nil), true
}

// adminSetDisabled disables or enables the account, as PUT with
// disabled does: disabling ends its sessions.
func (p *Pages) adminSetDisabled(disabled bool) pageHandler {
	done := "enabled"
	if disabled {
		done = "disabled"
	}
	return func(w http.ResponseWriter, r *http.Request, v visitor) {
		p.userAction(w, r, v, done, func() error {
			_, err := p.svc.Users.Update(r.Context(), v.principal, r.PathValue("id"), application.UpdateInput{Disabled: &disabled})
			return err
		})
	}
}

// adminVerifyEmail marks the account's email as verified.
func (p *Pages) adminVerifyEmail(w http.ResponseWriter, r *http.Request, v visitor) {
	verified := true
	p.userAction(w, r, v, "verified", func() error {
		_, err := p.svc.Users.Update(r.Context(), v.principal, r.PathValue("id"), application.UpdateInput{EmailVerified: &verified})
		return err
	})
}

// adminSendReset mails the user a password reset link.
func (p *Pages) adminSendReset(w http.ResponseWriter, r *http.Request, v visitor) {
	p.userAction(w, r, v, "reset-sent", func() error {
		return p.svc.Mail.SendPasswordReset(r.Context(), v.principal, r.PathValue("id"))
	})
}

// adminUnlock lifts the account's login lock-out, as POST
// /api/users/{id}/unlock does: its failed sign-in attempts are forgotten.
func (p *Pages) adminUnlock(w http.ResponseWriter, r *http.Request, v visitor) {
	p.userAction(w, r, v, "unlocked", func() error {
		return p.svc.Auth.Unlock(r.Context(), v.principal, r.PathValue("id"))
	})
}

// userAction runs a button's action on the user of the path and goes
// back to the user's page with its notice, or shows why it was refused.
func (p *Pages) userAction(w http.ResponseWriter, r *http.Request, v visitor, done string, act func() error) {
	if err := act(); err != nil {
		p.userActionRefused(w, r, v, err)
		return
	}
	p.afterUserAction(w, r, v, done)
}

// afterUserAction goes back to the user's page with the notice done; for
// an action on the admin's own account, only while their session lives.
func (p *Pages) afterUserAction(w http.ResponseWriter, r *http.Request, v visitor, done string) {
	id := domain.UserID(r.PathValue("id"))
	if id == v.user.ID {
		p.actedOnSelf(w, r, v, userPath(id), done)
		return
	}
	seeOther(w, r, userPath(id), done)
}

// userActionRefused shows the user's page with why the use case refused
// an action (the last admin, a disabled account), or the failure page for
// an error that is not a refusal.
func (p *Pages) userActionRefused(w http.ResponseWriter, r *http.Request, v visitor, err error) {
	status, pg, ok := p.updateRefused(r, v, err, nil)
	if !ok {
		p.adminFailed(w, r, &v, err)
		return
	}
	p.renderConsole(w, r, status, pg)
}
