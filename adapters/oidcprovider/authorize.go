package oidcprovider

import (
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// authorize serves /oauth2/authorize (GET with the query, POST with a
// form: OpenID Connect Core §3.1.2.1) itself rather than through the
// library, whose flow would check the request by its own rules and
// answer 302 without RFC 9207's iss (docs/decisions.md). The application
// checks and stores the request; this reads it and sends the browser on:
// to the pages' next step, back to the client with an error, or, when
// the client or its redirect URI cannot be trusted, to an error page
// that never redirects (RFC 6749 §4.1.2.1).
func (s *server) authorize(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	params, err := authorizeParams(w, r)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, err.Error())
		return
	}
	in, err := authorizeInput(params)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, err.Error())
		return
	}
	id, err := s.p.Authorize(r.Context(), in)
	var refusal *application.AuthorizeError
	switch {
	case err == nil:
		seeOther(w, s.opts.ContinuePath+"?request="+url.QueryEscape(id))
	case errors.As(err, &refusal):
		seeOther(w, refusal.Location)
	case errors.Is(err, domain.ErrOAuthClientNotFound), errors.Is(err, domain.ErrInvalidOAuthClientID):
		s.errorPage(w, r, http.StatusBadRequest, msgUnknownClient)
	case errors.Is(err, domain.ErrRedirectURINotRegistered):
		s.errorPage(w, r, http.StatusBadRequest, msgUnregisteredRedirect)
	default:
		s.opts.Logger.LogAttrs(r.Context(), slog.LevelError, "oidc provider: authorize", slog.String("error", err.Error()))
		s.errorPage(w, r, http.StatusInternalServerError, msgInternal)
	}
}

// The messages of the error page, for the person who followed an app's
// link: what went wrong, in words that name no value of the request.
const (
	msgUnknownClient        = "This sign-in link is not valid: it names no application known here."
	msgUnregisteredRedirect = "This sign-in link is not valid: the application did not register the address it asks to return to."
	msgMissingClient        = "This sign-in link is not valid: it names no application (client_id)."
	msgMissingRedirect      = "This sign-in link is not valid: it has no address to return to (redirect_uri)."
	msgInternal             = "Something went wrong on our side. Please try again from the application."
)

// errPage is a refusal shown on the error page; its text is the message.
type errPage string

func (e errPage) Error() string { return string(e) }

// authorizeParams reads the request's parameters: the query of a GET,
// the form of a POST (at most MaxBodyBytes). A parameter sent twice is
// malformed (RFC 6749 §3.1): the client_id or redirect_uri makes the
// request unreadable (a page), any other is refused with a redirect by
// the application (authorizeInput names it).
func authorizeParams(w http.ResponseWriter, r *http.Request) (url.Values, error) {
	if r.Method == http.MethodPost {
		form, err := readBody(w, r, true)
		if err != nil {
			return nil, errPage("This sign-in request cannot be read: " + err.Error() + ".")
		}
		return form, nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, errPage("This sign-in link cannot be read: its query string is malformed.")
	}
	return q, nil
}

// authorizeInput turns the parameters into the application's input. What
// makes the client or its redirect URI unknowable (missing or malformed)
// is an error for the page; the rest is the application's to judge.
func authorizeInput(p url.Values) (application.AuthorizeInput, error) {
	in := application.AuthorizeInput{
		ClientID:            p.Get("client_id"),
		RedirectURI:         p.Get("redirect_uri"),
		ResponseType:        p.Get("response_type"),
		ResponseMode:        p.Get("response_mode"),
		Scopes:              strings.Fields(p.Get("scope")),
		State:               p.Get("state"),
		Nonce:               p.Get("nonce"),
		CodeChallenge:       p.Get("code_challenge"),
		CodeChallengeMethod: p.Get("code_challenge_method"),
		Prompt:              strings.Fields(p.Get("prompt")),
		ACRValues:           strings.Fields(p.Get("acr_values")),
		LoginHint:           p.Get("login_hint"),
		RequestObject:       p.Get("request") != "" || p.Get("request_uri") != "",
	}
	switch {
	case len(p["client_id"]) > 1 || len(p["redirect_uri"]) > 1:
		return in, errPage("This sign-in link is not valid: it names its application or its return address more than once.")
	case in.ClientID == "":
		return in, errPage(msgMissingClient)
	case in.RedirectURI == "":
		return in, errPage(msgMissingRedirect)
	}
	for name, values := range p {
		if len(values) > 1 && in.Malformed == "" {
			in.Malformed = safeAuthorizeName(name)
		}
	}
	if _, err := domain.ParseOAuthClientID(in.ClientID); err != nil {
		return in, errPage(msgUnknownClient)
	}
	if u, err := url.Parse(in.RedirectURI); err != nil || !u.IsAbs() {
		return in, errPage(msgUnregisteredRedirect)
	}
	if v, sent := p["max_age"]; sent && v[0] != "" {
		// A max_age that is not a count of seconds goes back to the
		// client as invalid_request, as the application refuses it.
		secs, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil || secs < 0 || secs > math.MaxInt64/int64(time.Second) {
			in.Malformed = "max_age"
		} else {
			d := time.Duration(secs) * time.Second
			in.MaxAge = &d
		}
	}
	return in, nil
}

// safeAuthorizeName names a parameter of the authorization request in a
// message, when it is one OpenID Connect defines.
func safeAuthorizeName(name string) string {
	known := []string{"client_id", "redirect_uri", "response_type", "response_mode", "scope", "state", "nonce",
		"code_challenge", "code_challenge_method", "prompt", "max_age", "acr_values", "login_hint",
		"request", "request_uri", "display", "ui_locales", "id_token_hint", "claims"}
	if contains(known, name) {
		return name
	}
	return "(an unknown parameter)"
}

// seeOther sends the browser to location with 303, so that a POSTed
// request is followed by a GET, and no body.
func seeOther(w http.ResponseWriter, location string) {
	w.Header().Set("Location", location)
	w.WriteHeader(http.StatusSeeOther)
}

func (s *server) errorPage(w http.ResponseWriter, r *http.Request, status int, message string) {
	s.opts.ErrorPage.ServeProviderError(w, r, status, message)
}
