package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

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
	{"published", "Once every verifier has them (recommended)",
		"The new keys are published at once and sign only after the cached copies of the key set have expired, so that no verifier meets a key it does not know.",
		domain.RotateWhenPublished},
	{"now", "At once (after a suspected leak)",
		"The new keys sign as soon as each node has loaded them. Verifiers with a cached key set refuse their tokens until they fetch the set again.",
		domain.RotateNow},
}

// adminKeysData is the signing keys' page.
type adminKeysData struct {
	// Keys are the access tokens' keys; ProviderKeys the OpenID
	// provider's, which rotate with them.
	Keys, ProviderKeys keyTable
	// When is the choice of the rotate form.
	When []whenChoice
	// Configured is true when the access-token key comes from the
	// configuration: a rotation adds the provider's key alone, or, without
	// the provider, there is nothing to rotate here.
	Configured bool
	// Provider is true when the OpenID provider's keys are in use.
	Provider bool
}

// keyTable is a table of keys of one purpose.
type keyTable struct {
	// ID is the table's id; Heading the id of the heading that names it.
	ID, Heading string
	Rows        []keyRow
}

type keyRow struct {
	KID, Algorithm, Status, ActiveFrom, RetiresAt string
	// New marks a key that the last rotation added.
	New bool
}

type whenChoice struct {
	ID, Value, Label, Hint string
	Checked                bool
}

// adminKeys lists the signing keys, the access tokens' then the OpenID
// provider's, oldest first, and offers a rotation.
func (p *Pages) adminKeys(w http.ResponseWriter, r *http.Request, v visitor) {
	pg, err := p.keysPage(r, v, "")
	if err != nil {
		p.adminFailed(w, r, &v, err)
		return
	}
	if r.URL.Query().Get("done") == "rotated" {
		// The notice names the new keys only when they are the list's:
		// nothing of the query is shown as it came.
		pg.Notice = "New signing keys are added."
		var added []string
		d := pg.Data.(adminKeysData)
		for _, kid := range r.URL.Query()["kid"] {
			for _, rows := range [][]keyRow{d.Keys.Rows, d.ProviderKeys.Rows} {
				for i, k := range rows {
					if k.KID == kid {
						added = append(added, kid+", "+k.Status)
						rows[i].New = true
					}
				}
			}
		}
		switch {
		case len(added) == 1:
			pg.Notice = "A new signing key is added: " + added[0] + "."
		case len(added) > 1:
			pg.Notice = "New signing keys are added: " + strings.Join(added, "; ") + "."
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
	d := adminKeysData{Keys: keyTable{ID: "keys", Heading: "keys-heading"},
		ProviderKeys: keyTable{ID: "oidc-keys", Heading: "oidc-keys-heading"}}
	for _, k := range keys {
		row := keyRow{KID: k.KID, Algorithm: k.Algorithm, Status: keyStatus(k),
			ActiveFrom: consoleTime(k.ActiveFrom), RetiresAt: consoleTime(k.RetiresAt)}
		if k.Purpose == domain.KeyPurposeOIDC {
			d.ProviderKeys.Rows = append(d.ProviderKeys.Rows, row)
			d.Provider = d.Provider || k.Status != domain.KeyIgnored
		} else {
			d.Keys.Rows = append(d.Keys.Rows, row)
		}
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

// adminRotate adds the signing keys, as `userd keys rotate` does, and
// shows them in the list.
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
	added, err := p.svc.Keys.Rotate(r.Context(), v.principal, rotation)
	if errors.Is(err, domain.ErrKeyConfigured) {
		p.keysRefused(w, r, v, when, http.StatusConflict, "",
			"The signing key comes from the configuration (USERD_JWT_HMAC_SECRET): change the configuration to replace it.")
		return
	}
	if err != nil {
		p.adminFailed(w, r, &v, err)
		return
	}
	q := url.Values{}
	for _, k := range added {
		q.Add("kid", k.KID)
	}
	seeOther(w, r, adminKeysPath+"?"+q.Encode(), "rotated")
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
