package web

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/userd/userd/domain"
)

// fieldWhen is the rotate form's choice of when the new key signs.
const fieldWhen = "when"

// The choices of fieldWhen: domain.KeyRotation's, the default first (the
// `userd keys rotate` command's default, and --now).
var keyRotations = []struct {
	Value, Label, Hint string
	Rotation           domain.KeyRotation
}{
	{"published", "Once every verifier has it (recommended)",
		"The new key is published at once and signs only after the cached copies of the key set have expired, so that no verifier meets a key it does not know.",
		domain.RotateWhenPublished},
	{"now", "At once (after a suspected leak)",
		"The new key signs as soon as each node has loaded it. Verifiers with a cached key set refuse its tokens until they fetch the set again.",
		domain.RotateNow},
}

// adminKeysData is the signing keys' page.
type adminKeysData struct {
	Keys []keyRow
	// When is the choice of the rotate form.
	When []whenChoice
	// Configured is true when the signing key comes from the
	// configuration: there is nothing to rotate here.
	Configured bool
}

type keyRow struct {
	KID, Algorithm, Status, ActiveFrom, RetiresAt string
	// New marks the key that the last rotation added.
	New bool
}

type whenChoice struct {
	ID, Value, Label, Hint string
	Checked                bool
}

// adminKeys lists the access-token signing keys, oldest first, and offers
// a rotation.
func (p *Pages) adminKeys(w http.ResponseWriter, r *http.Request, v visitor) {
	pg, err := p.keysPage(r, v, "")
	if err != nil {
		p.adminFailed(w, r, &v, err)
		return
	}
	if r.URL.Query().Get("done") == "rotated" {
		// The notice names the new key only when it is one of the list's:
		// nothing of the query is shown as it came.
		pg.Notice = "A new signing key is added."
		kid := r.URL.Query().Get("kid")
		for i, k := range pg.Data.(adminKeysData).Keys {
			if k.KID == kid {
				pg.Notice = "A new signing key is added: " + kid + ", " + k.Status + "."
				pg.Data.(adminKeysData).Keys[i].New = true
			}
		}
	}
	p.renderConsole(w, r, http.StatusOK, pg)
}

// keysPage builds the keys' page, its rotate form set to when (the
// default when empty).
func (p *Pages) keysPage(r *http.Request, v visitor, when string) (page, error) {
	keys, err := p.svc.Keys.List(r.Context(), v.principal)
	if err != nil {
		return page{}, err
	}
	pg := newPage(adminArea, &v, tmplAdminKeys, "Signing keys")
	pg.Nav = adminKeysPath
	d := adminKeysData{}
	for _, k := range keys {
		d.Keys = append(d.Keys, keyRow{KID: k.KID, Algorithm: k.Algorithm, Status: keyStatus(k),
			ActiveFrom: consoleTime(k.ActiveFrom), RetiresAt: consoleTime(k.RetiresAt)})
		d.Configured = d.Configured || k.Configured
	}
	if when == "" {
		when = keyRotations[0].Value
	}
	for _, c := range keyRotations {
		d.When = append(d.When, whenChoice{ID: "when-" + c.Value, Value: c.Value, Label: c.Label, Hint: c.Hint,
			Checked: c.Value == when})
	}
	pg.Data = d
	return pg, nil
}

// keyStatus says what a key does now.
func keyStatus(k domain.KeyInfo) string {
	s := string(k.Status)
	switch {
	case k.Configured:
		return s + " (configured)"
	case k.Status == domain.KeyActive:
		return s + " (signs)"
	}
	return s
}

// adminRotate adds a signing key, as `userd keys rotate` does, and shows
// it in the list.
func (p *Pages) adminRotate(w http.ResponseWriter, r *http.Request, v visitor) {
	when := r.PostForm.Get(fieldWhen)
	rotation, ok := domain.RotateWhenPublished, false
	for _, c := range keyRotations {
		if c.Value == when {
			rotation, ok = c.Rotation, true
		}
	}
	if !ok {
		p.keysRefused(w, r, v, when, http.StatusBadRequest, fieldWhen, "Choose when the new key starts signing.")
		return
	}
	k, err := p.svc.Keys.Rotate(r.Context(), v.principal, rotation)
	if errors.Is(err, domain.ErrKeyConfigured) {
		p.keysRefused(w, r, v, when, http.StatusConflict, "",
			"The signing key comes from the configuration (USERD_JWT_HMAC_SECRET): change the configuration to replace it.")
		return
	}
	if err != nil {
		p.adminFailed(w, r, &v, err)
		return
	}
	seeOther(w, r, adminKeysPath+"?kid="+url.QueryEscape(k.KID), "rotated")
}

// keysRefused shows the keys' page with why a rotation was refused.
func (p *Pages) keysRefused(w http.ResponseWriter, r *http.Request, v visitor, when string, status int, field, msg string) {
	pg, err := p.keysPage(r, v, when)
	if err != nil {
		p.adminFailed(w, r, &v, err)
		return
	}
	p.renderConsole(w, r, status, pg.AddError(field, msg))
}
