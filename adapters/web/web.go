// Package web is the driving adapter of userd's HTML pages: the pages that
// people reach from the links userd mails (GET and POST
// /account/verify-email and /account/reset-password), the account page of
// a signed-in person under /account/, and the admin console under /admin/.
// They are server-rendered forms that work without JavaScript (a script
// served beside them, allowed by a nonce, only drives WebAuthn for
// passkeys), under a strict Content-Security-Policy, with one stylesheet
// and nothing from elsewhere. They call the application's use cases, as
// the API does: no rule is written twice.
//
// A GET never changes anything: a link's GET shows a button or a form
// that POSTs its token back (mail scanners follow links), and every
// action of the console and the account page is a POST from userd's own
// origin (CrossOriginProtection), in a cookie session (session.go).
package web

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/ports"
)

// The paths the handler serves. A server that mounts it in a larger router
// routes these to it: GET and POST for the two pages, GET for the assets.
const (
	VerifyEmailPath   = "/account/verify-email"
	ResetPasswordPath = "/account/reset-password"
	// AssetsPrefix is where the stylesheet lives: StylesheetPath.
	AssetsPrefix   = "/account/assets/"
	StylesheetPath = AssetsPrefix + "style.css"
)

// maxFormBytes bounds a form's body: a token and two passwords of at most
// 128 characters (4 bytes each, percent-encoded three times over) fit well.
const maxFormBytes = 8 << 10

// maxUserFormBytes bounds the console's edit form of a user, which holds
// its metadata and appMetadata (4 and 16 KiB compact): indented for
// reading (2 spaces a level, up to 16 levels) and percent-encoded (3 bytes
// for each quote, brace, colon and line break), they grow several times
// over. Past this the form is a 413; within it, a value over its limit is
// refused beside its field by the use case.
const maxUserFormBytes = 256 << 10

// Options tune the handler.
type Options struct {
	// Logger receives the errors nobody expected (a store that fails, a
	// page that does not render); nil discards them. It never sees a
	// token or a password.
	Logger *slog.Logger
	// Box seals the console cookie (the server's secret box); required.
	Box ports.SecretBox
	// Clock counts the console session's timeouts; nil is the system's.
	Clock ports.Clock
	// AdminConsole serves the admin console under AdminPrefix; false
	// leaves every path of it 404.
	AdminConsole bool
}

// Pages serves the pages. Build it with New.
type Pages struct {
	svc   *application.Services
	mail  *application.MailService
	box   ports.SecretBox
	clock ports.Clock
	log   *slog.Logger
	mux   *http.ServeMux
	csrf  *http.CrossOriginProtection
	style asset
	// scripts are the pages' scripts, by file name under AssetsPrefix.
	scripts map[string]asset
	// adminConsole says the admin console is served (Options).
	adminConsole bool
	// provider is the OpenID provider's flows; nil when it is off, and
	// then its pages are 404 and no SSOCookie is set.
	provider providerFlows
}

// New returns the pages over the application's services.
func New(svc *application.Services, opts Options) *Pages {
	p := &Pages{svc: svc, mail: svc.Mail, box: opts.Box, clock: opts.Clock, log: opts.Logger, mux: http.NewServeMux(),
		csrf: http.NewCrossOriginProtection(), style: newAsset(stylesheet, "text/css; charset=utf-8"),
		scripts: map[string]asset{}, adminConsole: opts.AdminConsole}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if svc.Provider != nil {
		p.provider = svc.Provider
	}
	if p.clock == nil {
		p.clock = systemClock{}
	}
	for name, body := range scriptFiles() {
		p.scripts[name] = newAsset(body, "text/javascript; charset=utf-8")
	}
	p.mux.HandleFunc("GET "+VerifyEmailPath, p.verifyForm)
	p.mux.HandleFunc("POST "+VerifyEmailPath, p.verify)
	p.mux.HandleFunc("GET "+ResetPasswordPath, p.resetForm)
	p.mux.HandleFunc("POST "+ResetPasswordPath, p.reset)
	p.mux.HandleFunc("GET "+StylesheetPath, p.serveStyle)
	p.mux.HandleFunc("GET "+AssetsPrefix+"{script}", p.serveScript)
	p.routeSignIn(accountArea)
	p.routeAccount()
	p.routeProvider()
	p.routeFederation()
	if opts.AdminConsole {
		p.routeSignIn(adminArea)
		p.routeAdmin()
	}
	return p
}

// routeSignIn routes the sign-in flow of a, and its root to its sign-in
// page for a visitor who is not signed in.
func (p *Pages) routeSignIn(a *area) {
	p.mux.HandleFunc("GET "+a.LoginPath(), p.signInForm(a))
	p.mux.HandleFunc("POST "+a.LoginPath(), p.signIn(a))
	p.mux.HandleFunc("POST "+a.LoginPath()+"/code", p.signInCode(a))
	p.mux.HandleFunc("POST "+a.LoginPath()+"/passkey/options", p.passkeyOptions)
	p.mux.HandleFunc("POST "+a.LoginPath()+"/passkey", p.signInPasskey(a))
	p.mux.HandleFunc("POST "+a.LogoutPath(), p.signOutHandler(a))
	p.routeEmailSignIn(a)
}

// ServeHTTP sets the headers every answer carries and serves the request.
func (p *Pages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	// Nothing but the assets is kept by a cache: a page or a redirect may
	// carry a session's cookie or what only its person may see.
	w.Header().Set("Cache-Control", "no-store")
	if _, pattern := p.mux.Handler(r); pattern == "" {
		p.serveUnrouted(w, r)
		return
	}
	p.mux.ServeHTTP(w, r)
}

// LimitedByIP reports whether a request checks a password or a second
// factor, and so falls under the per-IP allowance of /auth: the router
// that mounts the pages asks before it serves one (httpapi does).
func (p *Pages) LimitedByIP(r *http.Request) bool {
	if strings.HasPrefix(r.URL.Path, IDPPrefix) {
		// A provider's flow: its start reaches out to the provider, its
		// callback signs in.
		return true
	}
	if r.Method != http.MethodPost {
		return false
	}
	switch path := r.URL.Path; {
	case path == ResetPasswordPath, path == MagicLinkPath:
		return true
	case strings.HasPrefix(path, AdminPrefix+"login"), strings.HasPrefix(path, AccountPrefix+"login"):
		return true
	case strings.HasPrefix(path, accountPasskeysPath+"/") && strings.HasSuffix(path, "/remove"):
		// Removing a passkey checks the current password.
		return true
	}
	return limitedAccountPosts[r.URL.Path]
}

// LimitedAsRegistration reports whether a request may tell whether an
// email is taken, as a registration does (the account page's change of
// email): the router that mounts the pages counts it against the hourly
// registration allowance too (httpapi does). Every such post counts, its
// answer unknown beforehand; a person changes an address rarely.
func (p *Pages) LimitedAsRegistration(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Path == accountEmailPath
}

// systemClock is the clock when Options has none.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// setSecurityHeaders sets the headers of every answer. A page also gets
// Cache-Control: no-store where it is rendered (render).
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	// The page's URL holds the token: no request it makes may carry it
	// in a Referer.
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	// For browsers older than frame-ancestors.
	h.Set("X-Frame-Options", "DENY")
}

// contentSecurityPolicy allows the page its own stylesheet and images, and
// its forms to post to its own origin; nothing else: no script at all, no
// inline style, no frame around it, no <base> that would move its relative
// URLs.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeTooManyRequests answers a request that a per-IP limit refused
// before it reached the page, with a page that says to wait. A router that
// mounts the pages and limits them calls it (httpapi does, see its
// Options.Pages).
func (p *Pages) ServeTooManyRequests(w http.ResponseWriter, r *http.Request, retryAfter time.Duration) {
	setSecurityHeaders(w.Header())
	w.Header().Set("Retry-After", retryAfterSeconds(retryAfter))
	p.render(w, r, http.StatusTooManyRequests, statusPage(http.StatusTooManyRequests))
}

// ServeUnavailable answers a request that a per-IP limit could not check
// before it reached the page (the limits' store failed, and they fail
// closed), with a page that says to try again shortly.
func (p *Pages) ServeUnavailable(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	w.Header().Set("Retry-After", "1")
	p.render(w, r, http.StatusServiceUnavailable, statusPage(http.StatusServiceUnavailable))
}

// asset is a file served with a strong validator, so that a browser
// revalidates it cheaply; version names its content in the pages' links,
// so that a new release's stylesheet is never taken from a cache of the
// old one.
type asset struct {
	body        []byte
	contentType string
	etag        string
	version     string
}

func newAsset(body []byte, contentType string) asset {
	sum := sha256.Sum256(body)
	v := hex.EncodeToString(sum[:16])
	return asset{body: body, contentType: contentType, etag: `"` + v + `"`, version: v}
}

// serveStyle serves the stylesheet.
func (p *Pages) serveStyle(w http.ResponseWriter, r *http.Request) { p.style.serve(w, r) }

// serveScript serves a page's script; an unknown name is 404.
func (p *Pages) serveScript(w http.ResponseWriter, r *http.Request) {
	a, ok := p.scripts[r.PathValue("script")]
	if !ok {
		p.render(w, r, http.StatusNotFound, statusPage(http.StatusNotFound))
		return
	}
	a.serve(w, r)
}

// serve writes the asset. The pages link it with ?v=<its version>, so a
// cached copy may be kept for a day: a new one has a new URL.
func (a asset) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "public, max-age=86400")
	h.Set("ETag", a.etag)
	if etagMatches(r.Header.Values("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", a.contentType)
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(a.body)
}

// etagMatches applies If-None-Match (RFC 9110, 13.1.2): "*" or a list of
// entity tags, compared weakly.
func etagMatches(values []string, etag string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == etag {
				return true
			}
		}
	}
	return false
}
