package web

import (
	"bytes"
	"embed"
	"html/template"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/userd/userd/domain"
)

//go:embed templates/*.html templates/console/*.html
var templateFiles embed.FS

//go:embed assets/*.js
var scriptFS embed.FS

// scriptFiles returns the pages' scripts by file name.
func scriptFiles() map[string][]byte {
	entries, err := scriptFS.ReadDir("assets")
	if err != nil {
		panic(err)
	}
	out := map[string][]byte{}
	for _, e := range entries {
		body, err := scriptFS.ReadFile("assets/" + e.Name())
		if err != nil {
			panic(err)
		}
		out[e.Name()] = body
	}
	return out
}

//go:embed assets/style.css
var stylesheet []byte

// The templates, each with the layout: a form (verify, reset), or a
// title and a few paragraphs (message), which serves every result and
// every error.
const (
	tmplVerify  = "verify.html"
	tmplReset   = "reset.html"
	tmplMessage = "message.html"
)

var templates = parseTemplates()

func parseTemplates() map[string]*template.Template {
	layout := template.Must(template.ParseFS(templateFiles, "templates/layout.html"))
	out := map[string]*template.Template{}
	for _, name := range []string{tmplVerify, tmplReset, tmplMessage} {
		t := template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, "templates/"+name))
		out[name] = t
	}
	return out
}

// The fields of the reset form, in their order on the page.
const (
	fieldToken    = "token"
	fieldPassword = "password"
	fieldConfirm  = "confirm"
)

var formFields = []string{fieldPassword, fieldConfirm}

// view is what a template shows.
type view struct {
	template string
	// Title is the page's <h1> and <title>.
	Title string
	// Paragraphs are the text of a message page.
	Paragraphs []string
	// Token goes back in the form's hidden field.
	Token string
	// Email is the address the verification form verifies.
	Email string
	// Errors are the form's messages, by field name (and input id).
	Errors map[string]string
	// RequestID identifies an unexpected failure in the logs.
	RequestID string
	// Stylesheet is the stylesheet's URL, relative to the page: the pages
	// work behind a proxy that serves userd under a path prefix.
	Stylesheet string
}

// fieldError is one line of a form's error summary.
type fieldError struct{ Field, Message string }

// Summary lists the form's errors in the order of its fields.
func (v view) Summary() []fieldError {
	var out []fieldError
	for _, f := range formFields {
		if msg := v.Errors[f]; msg != "" {
			out = append(out, fieldError{Field: f, Message: msg})
		}
	}
	return out
}

// MinLength is the password policy's minimum, which the browser checks
// too before it sends the form.
func (view) MinLength() int { return domain.PasswordMinLen }

// render writes v with status. Pages are never cached: they hold a live
// token, or say what became of one.
func (p *Pages) render(w http.ResponseWriter, r *http.Request, status int, v view) {
	v.Stylesheet = "assets/style.css?v=" + p.style.version
	var buf bytes.Buffer
	if err := templates[v.template].ExecuteTemplate(&buf, "layout", v); err != nil {
		p.log.LogAttrs(r.Context(), slog.LevelError, "page not rendered",
			slog.String("template", v.template), slog.String("error", err.Error()))
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func message(title string, paragraphs ...string) view {
	return view{template: tmplMessage, Title: title, Paragraphs: paragraphs}
}

// invalidLink is the one answer to every token that cannot serve:
// unknown, used, expired, of the other purpose, or malformed.
func invalidLink() view {
	return message("This link is invalid or has expired",
		"Ask for a new one. A link works once, and only for a limited time.")
}

// statusPage is the page of an HTTP error that is not about the token.
func statusPage(status int) view {
	switch status {
	case http.StatusNotFound:
		return message("Page not found", "Check the address, or go back to the page you came from.")
	case http.StatusMethodNotAllowed:
		return message("This address does not take that request",
			"Nothing was changed. Go back to the page you came from and use its buttons.")
	case http.StatusForbidden:
		return message("This form came from another site",
			"It was refused to protect your account. Open the link from your message again.")
	case http.StatusRequestEntityTooLarge:
		return message("The form was too large", "Go back and try again.")
	case http.StatusUnsupportedMediaType, http.StatusBadRequest:
		return message("The form could not be read", "Go back and try again.")
	case http.StatusTooManyRequests:
		return message("Too many attempts", "Wait a minute, then try again.")
	case http.StatusServiceUnavailable:
		return message("The service is unavailable", "Try again in a few moments.")
	}
	return message("Something went wrong", "Try again later.")
}

// retryAfterSeconds renders a wait as whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(max(int64(math.Ceil(d.Seconds())), 1), 10)
}
