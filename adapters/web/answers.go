package web

// The pages' answers to what went wrong: the one table from a use case's
// refusal to the words of a form, the messages of the fields, and the
// answers to errors nobody expected (a page, or JSON for the passkey
// script).

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/userd/userd/domain"
)

// refusalMessage is one message of a refusal: a rule's words about a
// field ("must not be empty"), or a whole sentence; Field "" is about the
// form.
type refusalMessage struct {
	Field, Message string
	sentence       bool
}

// withRefusal puts the messages of a refusal on pg: each beside its input
// (fields maps the use case's field names to the ids of the page's
// inputs; nil when they are the same), or about the form when the page
// has no input for its field.
func withRefusal(pg page, messages []refusalMessage, fields map[string]string) page {
	for _, m := range messages {
		id, ok := m.Field, true
		if fields != nil {
			id, ok = fields[m.Field]
		}
		if !ok || m.Field == "" {
			id = ""
		}
		msg := m.Message
		if !m.sentence {
			if ok {
				msg = accountFieldMessage(id, m.Message)
			} else {
				msg = accountFieldMessage(m.Field, m.Message)
			}
		}
		pg = pg.AddError(id, msg)
	}
	return pg
}

// refusal is the status and the messages of a use case's refusal of a
// form, the account's and the console's alike: the one table of the pages
// from a refusal to its words; 0 for an error that is not about the form.
func refusal(err error) (int, []refusalMessage) {
	if verr, ok := errors.AsType[*domain.ValidationError](err); ok {
		out := make([]refusalMessage, 0, len(verr.Fields))
		for _, f := range verr.Fields {
			out = append(out, refusalMessage{Field: f.Field, Message: f.Message})
		}
		return http.StatusBadRequest, out
	}
	one := func(status int, field, msg string) (int, []refusalMessage) {
		return status, []refusalMessage{{Field: field, Message: msg, sentence: true}}
	}
	if f, ok := errors.AsType[*formRefusal](err); ok {
		return one(f.status, f.field, f.message)
	}
	switch {
	case errors.Is(err, domain.ErrInvalidCredentials):
		return one(http.StatusUnauthorized, fieldCurrentPassword, "The current password is not right.")
	case errors.Is(err, domain.ErrInvalidMFACode):
		return one(http.StatusBadRequest, fieldCode,
			"The code is not right. Type the 6 digits your app shows now, or one of your recovery codes.")
	case errors.Is(err, domain.ErrEmailTaken):
		return one(http.StatusConflict, fieldEmail, "Another account has this email address.")
	case errors.Is(err, domain.ErrRecentSignInRequired):
		return one(http.StatusForbidden, "",
			"For this, sign out and sign in again with your second factor (or within the last 10 minutes).")
	case errors.Is(err, domain.ErrLastAdmin):
		return one(http.StatusConflict, "",
			"This is the last enabled administrator: make another account an administrator first.")
	case errors.Is(err, domain.ErrInvalidProfile):
		return one(http.StatusBadRequest, domain.FieldProfiles, "Choose among the profiles shown.")
	case errors.Is(err, domain.ErrUserDisabled):
		return one(http.StatusConflict, "", "This account is disabled: enable it first.")
	}
	if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
		return one(http.StatusTooManyRequests, "", "Too many failed attempts. Try again in "+waitText(tooMany.RetryAfter)+".")
	}
	if budget, ok := errors.AsType[*domain.MailBudgetError](err); ok {
		return one(http.StatusTooManyRequests, fieldEmail,
			"Your account was sent as many messages as it may be for now. Try the change again in "+waitText(budget.RetryAfter)+".")
	}
	return 0, nil
}

// accountFieldNames name the inputs of the account pages whose id is not
// a field name of the sign-in's (fieldNames), in the sentences of their
// errors.
var accountFieldNames = map[string]string{
	fieldDisableCode: "The code", fieldRenewCode: "The code", fieldConfirm: "The repeated password",
	fieldUnderstood: "The box", fieldTokenExpires: "The lifetime",
}

// clientFieldNames name the inputs of the console's client forms.
var clientFieldNames = map[string]string{ //nolint:gosec // G101: words about fields ("The ID token algorithm"), no credential
	fieldClientType: "The type", fieldRedirectURIs: "The redirect URIs", fieldPostLogoutURIs: "The post-logout redirect URIs",
	fieldGrantTypes: "The grant types", fieldScopes: "The scopes", fieldFirstParty: "First party",
	fieldIDTokenAlg: "The ID token algorithm",
}

// accountFieldMessage makes a sentence of a rule's message about the
// input id.
func accountFieldMessage(id, msg string) string {
	if name, ok := accountFieldNames[id]; ok {
		return name + " " + msg + "."
	}
	if name, ok := clientFieldNames[id]; ok {
		return name + " " + msg + "."
	}
	return fieldMessage(id, msg)
}

// waitText says a wait in words: "3 minutes", "40 seconds".
func waitText(d time.Duration) string {
	if d >= time.Minute {
		m := int((d + time.Minute - 1) / time.Minute)
		if m == 1 {
			return "1 minute"
		}
		return strconv.Itoa(m) + " minutes"
	}
	return retryAfterSeconds(d) + " seconds"
}

// fieldMessage makes a sentence of a domain rule's message ("must not be
// empty") about a field.
func fieldMessage(field, msg string) string {
	name, ok := fieldNames[field]
	if !ok {
		name = "This field"
	}
	return name + " " + msg + "."
}

// fieldNames are the fields' names in the sentences of their errors.
var fieldNames = map[string]string{
	fieldEmail: "The email address", fieldPassword: "The password", fieldCode: "The code",
	"name": "The name", "currentPassword": "The current password", "newPassword": "The new password",
	"emailPrefix": "The search", "profiles": "The account", "type": "The event type",
	"metadata": "The metadata", "appMetadata": "The app metadata",
}

// notAdminPage refuses the admin console to a non-admin.
func notAdminPage(a *area, v *visitor) page {
	pg := newPage(a, v, tmplNotice, "Administrators only")
	pg.Data = noticeData{Paragraphs: []string{"The admin console is for administrators, and this account is not one.",
		"Your own account page is at " + AccountPrefix + "."}, Link: navLink{AccountPrefix, "Go to my account"}}
	return pg
}

// noticeData is a page of a few paragraphs and a link.
type noticeData struct {
	Paragraphs []string
	Link       navLink
}

// consoleFail answers an unexpected error of a console page: the
// service's status page, with the request id for the logs. Its text goes
// to the log only.
func (p *Pages) consoleFail(w http.ResponseWriter, r *http.Request, a *area, v *visitor, err error) {
	status := http.StatusInternalServerError
	level := slog.LevelError
	if transient(err) {
		status, level = http.StatusServiceUnavailable, slog.LevelWarn
		w.Header().Set("Retry-After", "5")
	}
	p.log.LogAttrs(r.Context(), level, "console request failed",
		slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	sp := statusPage(status)
	pg := newPage(a, v, tmplNotice, sp.Title)
	pg.Data = noticeData{Paragraphs: sp.Paragraphs, Link: navLink{a.Prefix, "Back to " + a.Name}}
	pg.RequestID = domain.RequestMetaFrom(r.Context()).RequestID
	p.renderConsole(w, r, status, pg)
}

// passkeyJSONFailed answers a failed passkey options request of a page's
// script: {error} with a message it shows.
func (p *Pages) passkeyJSONFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, domain.ErrInvalidMFAToken):
		writeJSON(w, http.StatusUnauthorized, jsonError{"The sign-in took too long. Sign in again."})
	case errors.Is(err, domain.ErrInvalidPasskey):
		writeJSON(w, http.StatusUnauthorized, jsonError{"This account has no passkey."})
	case errors.Is(err, domain.ErrRecentSignInRequired):
		writeJSON(w, http.StatusForbidden, jsonError{"Sign out and in again with your second factor to add a passkey."})
	case refusedForm(err):
		// A wrong or missing password, or too many of them: the words of
		// the forms, about the one input the script sends.
		status, messages := refusal(err)
		msg := messages[0].Message
		if !messages[0].sentence {
			msg = accountFieldMessage(messages[0].Field, msg)
		}
		writeJSON(w, status, jsonError{msg})
	default:
		status := http.StatusInternalServerError
		if transient(err) {
			status = http.StatusServiceUnavailable
		}
		p.log.LogAttrs(r.Context(), slog.LevelError, "passkey options failed", slog.String("error", err.Error()))
		writeJSON(w, status, jsonError{"Something went wrong. Try again later."})
	}
}

// refusedForm reports whether err is a refusal the forms have words for.
func refusedForm(err error) bool {
	status, messages := refusal(err)
	return status != 0 && len(messages) > 0
}

// jsonError is the answer of a page script's request that failed.
type jsonError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
