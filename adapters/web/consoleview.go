package web

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/userd/userd/domain"
)

// consoleTemplates are the pages behind a sign-in, each parsed with the
// console layout and the shared partials (templates/console/_*.html).
var consoleTemplates = parseConsoleTemplates()

func parseConsoleTemplates() map[string]*template.Template {
	base := template.Must(template.New("console").ParseFS(templateFiles, "templates/console/_*.html"))
	names, err := fs.Glob(templateFiles, "templates/console/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		name := path.Base(n)
		if strings.HasPrefix(name, "_") {
			continue
		}
		out[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFiles, n))
	}
	return out
}

// page is what a console template shows. Data is the page's own.
type page struct {
	template string
	// Title is the page's <h1>, and the start of its <title>.
	Title string
	// Area is the area the page belongs to: its header and menu.
	Area *area
	// Email is the signed-in person's address, shown in the header; empty
	// on the sign-in pages.
	Email   string
	IsAdmin bool
	// Nav is the path of the menu entry that is the current page.
	Nav string
	// Notice says what the last action did (after its redirect).
	Notice string
	// Errors are the form's messages, in the order of its fields;
	// FormError is a message about the form as a whole.
	Errors    []fieldError
	FormError string
	// Form holds what the person typed, to fill the form again after an
	// error. Passwords and codes are never put back.
	Form url.Values
	// Scripts are the paths of the page's scripts, under AssetsPrefix.
	Scripts []string
	// Nonce allows the page's scripts under the Content-Security-Policy;
	// set by renderConsole, fresh for every answer.
	Nonce string
	// Stylesheet is the stylesheet's URL; set by renderConsole.
	Stylesheet string
	// RequestID names an unexpected failure in the logs.
	RequestID string
	Data      any
}

// newPage starts the page of template for a signed-in visitor of a.
func newPage(a *area, v *visitor, template, title string) page {
	pg := page{template: template, Title: title, Area: a}
	if v != nil {
		pg.Email = string(v.user.Email)
		pg.IsAdmin = v.principal.IsAdmin()
	}
	return pg
}

// noticeOf is the notice that a page shows after the redirect of an action
// (seeOther's done): one of the page's own fixed messages, never text from
// the query.
func noticeOf(r *http.Request, messages map[string]string) string {
	return messages[r.URL.Query().Get("done")]
}

// AddError adds a message for a field (or for the form, when field is
// empty) and returns the page.
func (pg page) AddError(field, message string) page {
	if field == "" {
		pg.FormError = message
		return pg
	}
	pg.Errors = append(pg.Errors, fieldError{Field: field, Message: message})
	return pg
}

// ErrorFor is the message of a field, if any.
func (pg page) ErrorFor(field string) string {
	for _, e := range pg.Errors {
		if e.Field == field {
			return e.Message
		}
	}
	return ""
}

// Value is what was typed in a field, to show it again.
func (pg page) Value(field string) string { return pg.Form.Get(field) }

// Input describes a labelled input of the page's form, for the "input"
// partial: its value and error come from the page.
func (pg page) Input(name, label, typ, autocomplete string) inputView {
	in := inputView{ID: name, Name: name, Label: label, Type: typ, Autocomplete: autocomplete,
		Error: pg.ErrorFor(name)}
	if typ != "password" {
		in.Value = pg.Value(name)
	}
	return in
}

// inputView is one labelled input: its hint and error are tied to it with
// aria-describedby, an error also with aria-invalid.
type inputView struct {
	ID, Name, Label, Type, Autocomplete, Value, Error, Hint string
	Required                                                bool
	MinLength, MaxLength                                    int
	// Inputmode and Pattern help a phone's keyboard (codes).
	Inputmode, Pattern string
}

// WithHint adds a hint under the label.
func (in inputView) WithHint(hint string) inputView { in.Hint = hint; return in }

// WithID sets the input's id, when a page has two inputs of one name.
func (in inputView) WithID(id string) inputView { in.ID = id; return in }

// WithValue sets the value shown (a stored value, before any typing).
func (in inputView) WithValue(v string) inputView {
	if in.Value == "" {
		in.Value = v
	}
	return in
}

// Needed marks the input required.
func (in inputView) Needed() inputView { in.Required = true; return in }

// Between bounds the input's length.
func (in inputView) Between(minLen, maxLen int) inputView {
	in.MinLength, in.MaxLength = minLen, maxLen
	return in
}

// Numeric asks a phone for its number pad (a TOTP code).
func (in inputView) Numeric() inputView { in.Inputmode = "numeric"; return in }

// DescribedBy lists the ids that describe the input.
func (in inputView) DescribedBy() string {
	var ids []string
	if in.Hint != "" {
		ids = append(ids, in.ID+"-hint")
	}
	if in.Error != "" {
		ids = append(ids, in.ID+"-error")
	}
	return strings.Join(ids, " ")
}

// PasswordMinLength is the password policy's minimum, for the forms.
func (page) PasswordMinLength() int { return domain.PasswordMinLen }

// renderConsole writes pg with status, under a Content-Security-Policy
// that allows the page's own scripts by a nonce of this answer.
func (p *Pages) renderConsole(w http.ResponseWriter, r *http.Request, status int, pg page) {
	pg.Stylesheet = StylesheetPath + "?v=" + p.style.version
	pg.Nonce = newNonce()
	scripts := make([]string, 0, len(pg.Scripts))
	for _, s := range pg.Scripts {
		if a, ok := p.scripts[s]; ok {
			scripts = append(scripts, AssetsPrefix+s+"?v="+a.version)
		}
	}
	pg.Scripts = scripts
	var buf bytes.Buffer
	t, ok := consoleTemplates[pg.template]
	if !ok {
		p.log.LogAttrs(r.Context(), slog.LevelError, "page template missing", slog.String("template", pg.template))
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	if err := t.ExecuteTemplate(&buf, "layout", pg); err != nil {
		p.log.LogAttrs(r.Context(), slog.LevelError, "page not rendered",
			slog.String("template", pg.template), slog.String("error", err.Error()))
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", consolePolicy(pg.Nonce))
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// consolePolicy is the strict Content-Security-Policy of a console page:
// scripts only by this answer's nonce (never inline without it, never
// eval, never from elsewhere); its own stylesheet; images of its own and
// the data: PNG of a TOTP QR code; fetch only to its own origin (the
// passkey ceremonies); forms only to its own origin; no frame around it.
func consolePolicy(nonce string) string {
	return "default-src 'none'; script-src 'nonce-" + nonce + "'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}

// newNonce returns 128 random bits (CSP 3 asks for at least 128), in the
// URL-safe base64 alphabet that CSP's base64-value allows: without "+",
// "/" or "=", it reads the same in the header and in the attribute, where
// html/template would write "+" as an entity.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
