package web

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// The two areas of pages behind a sign-in: the admin console, for admins
// only, and the account page, for anyone with an account. They share the
// cookie session (ConsoleCookie) and the sign-in flow; each has its own
// sign-in page, which comes back to the area.
const (
	AdminPrefix   = "/admin/"
	AccountPrefix = "/account/"
)

// area is one of the two.
type area struct {
	// Prefix is the area's root path, AdminPrefix or AccountPrefix.
	Prefix string
	// Name is its name in the header and the titles.
	Name string
	// AdminOnly refuses a signed-in person who is not an admin, with 403.
	AdminOnly bool
	// Nav is the header's menu.
	Nav []navLink
}

// navLink is one entry of an area's menu.
type navLink struct{ Path, Label string }

var (
	adminArea = &area{Prefix: AdminPrefix, Name: "userd admin console", AdminOnly: true, Nav: []navLink{
		{AdminPrefix + "users", "Users"}, {AdminPrefix + "audit", "Audit trail"}, {AdminPrefix + "keys", "Signing keys"},
		{AdminPrefix + "clients", "Clients"}, {AdminPrefix + "identity-providers", "Sign-in providers"},
		{AccountPrefix, "My account"},
	}}
	accountArea = &area{Prefix: AccountPrefix, Name: "userd account", Nav: []navLink{
		{AccountPrefix, "My account"}, {AccountPrefix + "password", "Password"},
		{AccountPrefix + "mfa", "Two-step verification"}, {AccountPrefix + "passkeys", "Passkeys"},
		{AccountPrefix + "sessions", "Sessions"}, {AccountPrefix + "apps", "Apps with access"},
		{AccountPrefix + "identities", "Linked accounts"}, {AccountPrefix + "tokens", "Access tokens"},
	}}
)

// LoginPath is the area's sign-in page, which its form posts to as well.
func (a *area) LoginPath() string { return a.Prefix + "login" }

// LogoutPath signs out (POST).
func (a *area) LogoutPath() string { return a.Prefix + "logout" }

// pageHandler serves a page to a signed-in visitor of its area.
type pageHandler func(w http.ResponseWriter, r *http.Request, v visitor)

// guard admits a request to a page of a: a POST only from a page of
// userd's own origin (else 403, before anything else is looked at) and
// with a form that parses; then only with a live console session (else a
// redirect to the area's sign-in page: nothing is done), and in the admin
// area only for an admin (else 403). A POST's form is in r.PostForm.
func (p *Pages) guard(a *area, h pageHandler) http.HandlerFunc {
	return p.guardUpTo(a, maxFormBytes, h)
}

// guardUpTo is guard for a page whose form's body may be up to maxBytes.
func (p *Pages) guardUpTo(a *area, maxBytes int64, h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if _, ok := p.readFormUpTo(w, r, maxBytes); !ok {
				return
			}
		}
		v, expired, err := p.session(w, r)
		if errors.Is(err, errNoSession) {
			p.toSignIn(w, r, a, expired)
			return
		}
		if err != nil {
			p.consoleFail(w, r, a, nil, err)
			return
		}
		if a.AdminOnly && !v.principal.IsAdmin() {
			p.renderConsole(w, r, http.StatusForbidden, notAdminPage(a, &v))
			return
		}
		h(w, r, v)
	}
}

// toSignIn sends a visitor without a session to the sign-in page, which
// brings them back to the page they asked for (a GET) or to the area (a
// POST, whose form is lost: it is not replayed after the sign-in).
func (p *Pages) toSignIn(w http.ResponseWriter, r *http.Request, a *area, expired bool) {
	q := url.Values{}
	if r.Method == http.MethodGet && r.URL.Path != a.Prefix {
		q.Set("next", r.URL.RequestURI())
	}
	if expired {
		q.Set("expired", "1")
	}
	target := a.LoginPath()
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// nextPath is where a sign-in goes on to: next when it is a path of the
// area (never another site, nor another area), else the area's root.
// The path is judged as decoded once (u.Path), as the browser and the
// mux read it: a dot segment, even percent-encoded (a browser resolves
// "%2e%2e" as ".."; http.Redirect cleans a plain ".."), or one made by
// an encoded slash, would lead out of the area, and none is ever in a
// path of the pages; nor is a backslash, which a browser reads as a
// slash. The account area's sign-in also goes on to one page outside
// it: the OpenID provider's flow, exactly continueURL of a well-formed
// request id (the app's sign-in that sent the browser there).
func nextPath(a *area, next string) string {
	if id, ok := continueRequest(next); ok && a == accountArea {
		return continueURL(id)
	}
	if next == "" || !strings.HasPrefix(next, a.Prefix) || strings.ContainsAny(next, "\\\r\n") {
		return a.Prefix
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return a.Prefix
	}
	if !strings.HasPrefix(u.Path, a.Prefix) || strings.HasPrefix(u.Path, a.LoginPath()) ||
		strings.ContainsAny(u.Path, "\\\r\n") || hasDotSegment(u.Path) {
		return a.Prefix
	}
	return next
}

// hasDotSegment reports whether path has a "." or ".." segment.
func hasDotSegment(path string) bool {
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// seeOther redirects after a successful POST to path, with done naming
// the notice that the page shows (Post/Redirect/Get: a reload does not
// post again).
func seeOther(w http.ResponseWriter, r *http.Request, path, done string) {
	if done != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "done=" + url.QueryEscape(done)
	}
	//nolint:gosec // G710: path is a page of userd's own, chosen by the handler; done is a key of its own notices
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// serveUnrouted answers a request that no page serves: 404, or 405 with
// Allow for a path that exists with another method (a GET of a form's
// action: no GET changes anything), as a page rather than the mux's plain
// text.
func (p *Pages) serveUnrouted(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := p.mux.Handler(probe); pattern != "" && pattern != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		p.render(w, r, http.StatusNotFound, statusPage(http.StatusNotFound))
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	p.render(w, r, http.StatusMethodNotAllowed, statusPage(http.StatusMethodNotAllowed))
}
