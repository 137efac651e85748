package idpflow

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/upstream"
)

// The cookies of userd's pages the agent watches (contract-identity.md):
// the flow's, the pages' session and the OpenID provider's session.
const (
	idpCookie     = "__Host-userd_idp"
	consoleCookie = "__Host-userd_console"
	ssoCookie     = "__Host-userd_sso"
)

// agent is a browser without a browser: plain net/http requests that
// carry cookies by host, as a browser sends them (the name and the value
// alone), including the __Host- ones that Go's cookie jar would not send
// over http (they are Secure; a browser sends them to 127.0.0.1).
type agent struct {
	t    *testing.T
	jar  map[string]map[string]string // host → name → value
	sets map[string]*http.Cookie      // the last Set-Cookie of each name
}

func newAgent(t *testing.T) *agent {
	return &agent{t: t, jar: map[string]map[string]string{}, sets: map[string]*http.Cookie{}}
}

// send makes a request (a form body when form is not nil) with the
// agent's cookies of the target's host, and keeps those the answer sets
// or clears.
func (a *agent) send(method, target string, form url.Values) kit.Reply {
	a.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		a.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for name, value := range a.jar[req.URL.Host] {
		// As a browser sends it: the name and the value alone.
		req.Header.Add("Cookie", name+"="+value)
	}
	r := kit.Do(a.t, req)
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		a.sets[c.Name] = c
		if a.jar[req.URL.Host] == nil {
			a.jar[req.URL.Host] = map[string]string{}
		}
		if c.MaxAge < 0 || c.Value == "" || (!c.Expires.IsZero() && c.Expires.Before(time.Now())) {
			delete(a.jar[req.URL.Host], c.Name)
			continue
		}
		a.jar[req.URL.Host][c.Name] = c.Value
	}
	return r
}

func (a *agent) get(target string) kit.Reply {
	a.t.Helper()
	return a.send(http.MethodGet, target, nil)
}

// cookie is the agent's cookie name of the host of base, "" when none.
func (a *agent) cookie(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		a.t.Fatal(err)
	}
	return a.jar[u.Host][name]
}

// location resolves the Location of r, an answer to a request of from.
func location(t testing.TB, from string, r kit.Reply) *url.URL {
	t.Helper()
	base, err := url.Parse(from)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := base.Parse(r.Header.Get("Location"))
	if err != nil || r.Header.Get("Location") == "" {
		t.Fatalf("the answer of %s has no Location: %s", from, r)
	}
	return loc
}

// start begins the flow of the provider slug at u, to go on to next, and
// returns the authorization request it sends the browser to. It checks
// the flow's cookie: Secure, HttpOnly, SameSite=Lax, Path=/.
func (a *agent) start(u userd, slug, next string) *url.URL {
	a.t.Helper()
	target := u.node.Base + "/auth/idp/" + slug + "/start?" + url.Values{"next": {next}}.Encode()
	r := a.get(target)
	if r.Status != http.StatusSeeOther {
		a.t.Fatalf("start the flow of %s: %s, want 303", slug, r)
	}
	c := a.sets[idpCookie]
	if c == nil || a.cookie(u.node.Base, idpCookie) == "" {
		a.t.Fatalf("the start of %s set no %s", slug, idpCookie)
	}
	if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
		a.t.Errorf("%s is set without Secure; HttpOnly; SameSite=Lax; Path=/: %s", idpCookie, c.Raw)
	}
	return location(a.t, target, r)
}

// authorize sends the authorization request to the mock provider, which
// approves at once, and returns the callback it redirects to.
func (a *agent) authorize(authURL *url.URL) *url.URL {
	a.t.Helper()
	r := a.get(authURL.String())
	if r.Status != http.StatusFound && r.Status != http.StatusSeeOther {
		a.t.Fatalf("the provider's authorize: %s, want a redirect back", r)
	}
	return location(a.t, authURL.String(), r)
}

// throughMock goes through a flow of the provider slug at u, whose
// upstream is the mock told to answer it with c as person, and returns
// userd's answer to the callback.
func (a *agent) throughMock(u userd, m *upstream.Mock, slug string, c upstream.Case, person upstream.Claims) kit.Reply {
	a.t.Helper()
	return a.throughMockTo(u, m, slug, "/account/", c, person)
}

// throughMockTo is throughMock for a flow started with next.
func (a *agent) throughMockTo(u userd, m *upstream.Mock, slug, next string, c upstream.Case, person upstream.Claims) kit.Reply {
	a.t.Helper()
	auth := a.start(u, slug, next)
	if !strings.HasPrefix(auth.String(), m.Issuer+"/authorize?") {
		a.t.Fatalf("the flow of %s went to %s, want the mock's authorize endpoint", slug, auth)
	}
	q := auth.Query()
	if q.Get("state") == "" || q.Get("nonce") == "" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
		q.Get("redirect_uri") != u.callback(slug) || q.Get("response_type") != "code" {
		a.t.Errorf("the authorization request %s: want a state, a nonce, an S256 challenge, response_type=code and redirect_uri %s", auth, u.callback(slug))
	}
	m.Expect(a.t, q.Get("state"), c, person)
	back := a.authorize(auth)
	return a.get(u.node.Base + back.RequestURI())
}

// sameSiteStep is the path the page of a callback continues to by
// itself (its meta refresh), "" when it has none.
func sameSiteStep(r kit.Reply) string {
	m := metaRefresh.FindSubmatch(r.Body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(string(m[1]))
}

var metaRefresh = regexp.MustCompile(`(?i)<meta http-equiv="refresh" content="\d+;\s*url=([^"]+)"`)

// wantSignedIn fails t unless r, the answer to a callback, is the 200
// page that goes on to next with the session's cookies set, and the
// account page then shows the signed-in person's email.
func (a *agent) wantSignedIn(u userd, r kit.Reply, next, email string) {
	a.t.Helper()
	if r.Status != http.StatusOK || sameSiteStep(r) != next {
		a.t.Fatalf("the callback: %d going on to %q, want 200 going on to %s:\n%.600s", r.Status, sameSiteStep(r), next, r.Body)
	}
	if a.cookie(u.node.Base, consoleCookie) == "" {
		a.t.Fatalf("the callback set no %s", consoleCookie)
	}
	home := a.get(u.node.Base + next)
	if home.Status != http.StatusOK || !strings.Contains(string(home.Body), html.EscapeString(email)) {
		a.t.Fatalf("%s after the callback: %d, want 200 showing %s:\n%.600s", next, home.Status, email, home.Body)
	}
}

// wantNoSession fails t unless the agent holds no session of u: no
// cookie of the pages or of the provider, and the account page is not
// served.
func (a *agent) wantNoSession(u userd) {
	a.t.Helper()
	for _, name := range []string{consoleCookie, ssoCookie} {
		if a.cookie(u.node.Base, name) != "" {
			a.t.Errorf("the agent holds %s after a refused flow", name)
		}
	}
	r := a.get(u.node.Base + "/account/")
	if r.Status == http.StatusOK && !strings.Contains(string(r.Body), `name="password"`) {
		t := a.t
		t.Errorf("/account/ after a refused flow: %d, want the sign-in page or a redirect to it:\n%.400s", r.Status, r.Body)
	}
}
