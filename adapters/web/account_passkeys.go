package web

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// routeAccountPasskeys routes the passkeys page: the list, adding one
// (the page's script runs the ceremony), renaming and removing one (each
// on a page of its own, whose form is the confirm step).
func (p *Pages) routeAccountPasskeys() {
	a := accountArea
	p.mux.HandleFunc("GET "+accountPasskeysPath, p.guard(a, p.passkeysPage))
	p.mux.HandleFunc("POST "+accountPasskeysPath+"/options", p.passkeyRegistrationOptions)
	p.mux.HandleFunc("POST "+accountPasskeysPath, p.guard(a, p.addPasskey))
	p.mux.HandleFunc("GET "+accountPasskeysPath+"/{id}/rename", p.guard(a, p.renamePasskeyForm))
	p.mux.HandleFunc("POST "+accountPasskeysPath+"/{id}/rename", p.guard(a, p.renamePasskey))
	p.mux.HandleFunc("GET "+accountPasskeysPath+"/{id}/remove", p.guard(a, p.removePasskeyForm))
	p.mux.HandleFunc("POST "+accountPasskeysPath+"/{id}/remove", p.guard(a, p.removePasskey))
}

// passkeyRow is one passkey as the pages show it.
type passkeyRow struct {
	ID, Name, Created, LastUsed string
}

func toPasskeyRow(k domain.Passkey) passkeyRow {
	row := passkeyRow{ID: string(k.ID), Name: k.Name, Created: consoleTime(k.CreatedAt), LastUsed: "Never"}
	if k.LastUsedAt != nil {
		row.LastUsed = consoleTime(*k.LastUsedAt)
	}
	return row
}

// passkeysData is what the passkeys page shows.
type passkeysData struct {
	Passkeys []passkeyRow
	// AskPassword is true when adding a passkey takes the current
	// password: for every account that has one.
	AskPassword bool
	// OfferSignOut is true right after a passkey was added: the page
	// offers to sign out the other sessions, which a new factor does not
	// end.
	OfferSignOut bool
}

// passkeysPage lists the visitor's passkeys, with the form that adds one.
func (p *Pages) passkeysPage(w http.ResponseWriter, r *http.Request, v visitor) {
	pg, err := p.passkeysForm(r, v)
	if err != nil {
		p.accountFail(w, r, v, err)
		return
	}
	p.renderConsole(w, r, http.StatusOK, pg)
}

func (p *Pages) passkeysForm(r *http.Request, v visitor) (page, error) {
	keys, err := p.svc.Passkeys.List(r.Context(), v.principal)
	if err != nil {
		return page{}, err
	}
	rows := make([]passkeyRow, len(keys))
	for i, k := range keys {
		rows[i] = toPasskeyRow(k)
	}
	pg := accountPage(r, &v, tmplAccountPasskeys, "Passkeys", accountPasskeysPath)
	pg.Data = passkeysData{Passkeys: rows, AskPassword: v.user.HasPassword(),
		OfferSignOut: r.URL.Query().Get("done") == "passkey-added"}
	pg.Scripts = []string{scriptPasskey}
	return pg, nil
}

// passkeyRegistrationOptions begins adding a passkey, for the page's
// script: it answers JSON, {ceremonyId, publicKey} or {error} with a
// message to show, never a redirect (the script could not follow one to
// a page). The name the script sends is judged here by the domain's rule
// already, before the authenticator makes a credential that the finish
// would then refuse; the finish judges it again.
func (p *Pages) passkeyRegistrationOptions(w http.ResponseWriter, r *http.Request) {
	form, ok := p.readForm(w, r)
	if !ok {
		return
	}
	v, _, err := p.session(w, r)
	if errors.Is(err, errNoSession) {
		writeJSON(w, http.StatusUnauthorized, jsonError{"Your session has ended. Sign in again to add a passkey."})
		return
	}
	if err != nil {
		p.passkeyJSONFailed(w, r, err)
		return
	}
	if _, msg := domain.ParsePasskeyName(form.Get(fieldName)); msg != "" {
		writeJSON(w, http.StatusBadRequest, jsonError{accountFieldMessage(fieldName, msg)})
		return
	}
	// The password proves the person before the authenticator is asked
	// for anything; the script sends it here, and never with the finish.
	current := form.Get(fieldCurrentPassword)
	o, err := p.svc.Passkeys.BeginRegistration(r.Context(), v.principal, &current)
	if err != nil {
		p.passkeyJSONFailed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, passkeyOptionsJSON{CeremonyID: o.CeremonyID, PublicKey: o.PublicKey})
}

// addPasskey finishes adding a passkey with the credential that the
// page's script put in the form.
func (p *Pages) addPasskey(w http.ResponseWriter, r *http.Request, v visitor) {
	form := r.PostForm
	ceremony, name := form.Get(fieldCeremonyID), form.Get(fieldName)
	_, err := p.svc.Passkeys.FinishRegistration(r.Context(), v.principal, application.PasskeyRegistrationInput{
		CeremonyID: &ceremony, Name: &name, Credential: json.RawMessage(form.Get(fieldCredential))})
	if err != nil {
		p.passkeyRefused(w, r, v, err, func() (page, error) { return p.passkeysForm(r, v) })
		return
	}
	seeOther(w, r, accountPasskeysPath, "passkey-added")
}

// passkeyRefused answers a refused passkey form: a credential that does
// not serve is a message about the form, a name one about the name.
func (p *Pages) passkeyRefused(w http.ResponseWriter, r *http.Request, v visitor, err error, build func() (page, error)) {
	switch {
	case errors.Is(err, domain.ErrInvalidPasskey), errors.Is(err, domain.ErrMalformedPasskeyCredential):
		err = formError(http.StatusBadRequest, "The passkey was not accepted, or the request took too long. Try again.")
	case errors.Is(err, domain.ErrPasskeyExists):
		err = formError(http.StatusConflict, "This passkey is added already.")
	}
	if verr, ok := errors.AsType[*domain.ValidationError](err); ok && !onlyAbout(verr, fieldName) {
		err = formError(http.StatusBadRequest, "The passkey was not added: the browser sent no answer of the authenticator. Try again.")
	}
	p.refused(w, r, v, err, map[string]string{fieldName: fieldName}, build)
}

// onlyAbout reports whether every message of verr is about field.
func onlyAbout(verr *domain.ValidationError, field string) bool {
	for _, f := range verr.Fields {
		if f.Field != field {
			return false
		}
	}
	return true
}

// passkeyPageData is the page of one passkey: renaming or removing it.
type passkeyPageData struct {
	Passkey passkeyRow
	Remove  bool
	// AskPassword is true when removing it takes the current password:
	// an account with one, unless its session signed in with a second
	// factor (domain.ProofToChangeFactors).
	AskPassword bool
}

// passkeyOf finds the visitor's passkey of the path's id, or
// domain.ErrPasskeyNotFound.
func (p *Pages) passkeyOf(r *http.Request, v visitor) (passkeyRow, error) {
	keys, err := p.svc.Passkeys.List(r.Context(), v.principal)
	if err != nil {
		return passkeyRow{}, err
	}
	id := r.PathValue("id")
	for _, k := range keys {
		if string(k.ID) == id {
			return toPasskeyRow(k), nil
		}
	}
	return passkeyRow{}, domain.ErrPasskeyNotFound
}

func passkeyPage(r *http.Request, v visitor, row passkeyRow, remove bool) page {
	title := "Rename a passkey"
	if remove {
		title = "Remove a passkey"
	}
	pg := accountPage(r, &v, tmplAccountPasskey, title, accountPasskeysPath)
	pg.Data = passkeyPageData{Passkey: row, Remove: remove,
		AskPassword: v.user.HasPassword() && v.principal.Session.AMR.ACR() != domain.ACRMultiFactor}
	return pg
}

// renamePasskeyForm shows the form that renames a passkey.
func (p *Pages) renamePasskeyForm(w http.ResponseWriter, r *http.Request, v visitor) {
	row, err := p.passkeyOf(r, v)
	if err != nil {
		p.accountFail(w, r, v, err)
		return
	}
	p.renderConsole(w, r, http.StatusOK, passkeyPage(r, v, row, false))
}

// renamePasskey renames a passkey of the visitor.
func (p *Pages) renamePasskey(w http.ResponseWriter, r *http.Request, v visitor) {
	_, err := p.svc.Passkeys.Rename(r.Context(), v.principal, r.PathValue("id"), r.PostForm.Get(fieldName))
	switch {
	case errors.Is(err, domain.ErrPasskeyNotFound):
		seeOther(w, r, accountPasskeysPath, "passkey-gone")
	case err != nil:
		p.refused(w, r, v, err, map[string]string{fieldName: fieldName}, func() (page, error) {
			row, err := p.passkeyOf(r, v)
			return passkeyPage(r, v, row, false), err
		})
	default:
		seeOther(w, r, accountPasskeysPath, "passkey-renamed")
	}
}

// removePasskeyForm asks whether to remove a passkey: its button is the
// confirm step.
func (p *Pages) removePasskeyForm(w http.ResponseWriter, r *http.Request, v visitor) {
	row, err := p.passkeyOf(r, v)
	if err != nil {
		p.accountFail(w, r, v, err)
		return
	}
	p.renderConsole(w, r, http.StatusOK, passkeyPage(r, v, row, true))
}

// removePasskey removes a passkey of the visitor, proven by its current
// password (or its session, when it signed in with a second factor).
func (p *Pages) removePasskey(w http.ResponseWriter, r *http.Request, v visitor) {
	current := r.PostForm.Get(fieldCurrentPassword)
	err := p.svc.Passkeys.Delete(r.Context(), v.principal, r.PathValue("id"), &current)
	switch {
	case errors.Is(err, domain.ErrPasskeyNotFound):
		seeOther(w, r, accountPasskeysPath, "passkey-gone")
	case err != nil:
		p.refused(w, r, v, err, map[string]string{fieldCurrentPassword: fieldCurrentPassword}, func() (page, error) {
			row, err := p.passkeyOf(r, v)
			return passkeyPage(r, v, row, true), err
		})
	default:
		seeOther(w, r, accountPasskeysPath, "passkey-removed")
	}
}
