package oidcflow

import (
	"context"
	"errors"
	"html"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
)

// callback is the client's end of the flow: a listener on a loopback
// port that records each URL the browser is sent to (/cb, the redirect
// URI, and /signed-out, the post-logout one), and answers a plain page.
type callback struct {
	// uri is the redirect URI to ask for: registeredRedirect on the
	// listener's port.
	uri  string
	hits chan string
}

// newCallback listens on a free 127.0.0.1 port until t ends.
func newCallback(t *testing.T) *callback {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &callback{uri: "http://" + ln.Addr().String() + "/cb", hits: make(chan string, 16)}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cb" && r.URL.Path != "/signed-out" {
			http.NotFound(w, r)
			return
		}
		c.hits <- "http://" + ln.Addr().String() + r.URL.RequestURI()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html lang="en"><title>Back at the app</title><h1>Back at the app</h1></html>`))
	})}
	go func() { _ = srv.Serve(ln) }() // ends with Close below
	t.Cleanup(func() { _ = srv.Close() })
	return c
}

// wait returns the next URL the listener got within d, or "" when none
// came.
func (c *callback) wait(d time.Duration) string {
	select {
	case u := <-c.hits:
		return u
	case <-time.After(d):
		return ""
	}
}

// agent is a browser without a browser: plain net/http requests that
// carry the provider's cookie, __Host-userd_sso, which Go's cookie jar
// would not send over http (it is Secure). It signs in on userd's
// sign-in page and goes through /oauth2/authorize as a browser would,
// up to the redirect to the client, which it returns without following.
type agent struct {
	p   provider
	sso string // the cookie's value, "" before a sign-in
	// deny answers the consent page with Deny instead of Allow.
	deny bool
	// email, when set, answers the sign-in page with the person's email
	// and password; signIns counts the pages so answered.
	email   string
	signIns int
	// code2, when set, answers the second step of the sign-in with a
	// TOTP code.
	code2 func() string
}

// ssoCookie is the provider's browser session (contract-identity.md).
const ssoCookie = "__Host-userd_sso"

// signIn signs email in on the account area's sign-in page and returns
// an agent with the provider's cookie the answer set.
func (p provider) signIn(t *testing.T, email string) *agent {
	t.Helper()
	a := &agent{p: p, email: email}
	form := url.Values{"email": {email}, "password": {userPassword}, "next": {"/account/"}}
	r := a.send(t, http.MethodPost, p.node.Base+"/account/login", form)
	if r.Status != http.StatusSeeOther || a.sso == "" {
		t.Fatalf("sign in %s on the page: %d, cookie %q, want 303 with %s:\n%.400s", email, r.Status, a.sso, ssoCookie, r.Body)
	}
	return a
}

// send makes a request with the agent's cookie (a form body when form is
// not nil) and keeps the cookie the answer sets or clears.
func (a *agent) send(t *testing.T, method, target string, form url.Values) kit.Reply {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if a.sso != "" {
		// As a browser sends it: the name and the value alone.
		req.Header.Add("Cookie", ssoCookie+"="+a.sso)
	}
	r := kit.Do(t, req)
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == ssoCookie {
			if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" {
				t.Errorf("%s is set without Secure; HttpOnly; SameSite=Lax; Path=/: %s", ssoCookie, c.Raw)
			}
			a.sso = c.Value
			if c.MaxAge < 0 {
				a.sso = ""
			}
		}
	}
	return r
}

// The parts of the provider's pages the agent reads: the request of the
// consent form, and the link of the page that goes on to the app.
var (
	consentRequest = regexp.MustCompile(`name="request" value="([^"]+)"`)
	continueLink   = regexp.MustCompile(`<a [^>]*id="continue" href="([^"]+)"`)
	signInNext     = regexp.MustCompile(`<form method="post" action="/account/login"[^>]*>\s*<input type="hidden" name="next" value="([^"]+)"`)
	secondStep     = regexp.MustCompile(`<form method="post" action="/account/login/code"[^>]*>\s*` +
		`<input type="hidden" name="next" value="([^"]+)">\s*<input type="hidden" name="mfaToken" value="([^"]+)">\s*<input type="hidden" name="methods" value="([^"]*)">`)
)

// The errors of authorize: an answer that neither goes on nor to the
// client, and the sign-in page again right after a sign-in of the flow.
var (
	errNoRedirect  = errors.New("no redirect to the client")
	errSignInAgain = errors.New("the sign-in page again after the flow's own sign-in")
)

// authorize starts the flow at authURL and follows it as a browser
// would: the provider's redirects, the sign-in page (when the agent
// knows whom to sign in) and its second step (when it has a code), its
// consent page (Allow, or Deny), its page
// that goes on to the app. It returns the URL the browser is
// sent to at the client, or errNoRedirect and the last answer.
func (a *agent) authorize(t *testing.T, authURL string) (string, kit.Reply, error) {
	t.Helper()
	target, method, form := authURL, http.MethodGet, url.Values(nil)
	signedIn := false
	for range 10 {
		r := a.send(t, method, target, form)
		method, form = http.MethodGet, nil
		switch {
		case r.Status == http.StatusSeeOther || r.Status == http.StatusFound:
			base, err := url.Parse(target)
			if err != nil {
				t.Fatal(err)
			}
			next, err := base.Parse(r.Header.Get("Location"))
			if err != nil {
				t.Fatalf("the Location of %s: %v", target, err)
			}
			if next.Host != strings.TrimPrefix(a.p.node.Base, "http://") {
				return next.String(), r, nil
			}
			target = next.String()
		case r.Status == http.StatusOK && consentRequest.Match(r.Body):
			decision := "allow"
			if a.deny {
				decision = "deny"
			}
			target, method = a.p.node.Base+"/oauth2/consent", http.MethodPost
			form = url.Values{"request": {html.UnescapeString(string(consentRequest.FindSubmatch(r.Body)[1]))}, "decision": {decision}}
		case r.Status == http.StatusOK && signInNext.Match(r.Body) && a.email != "":
			// The sign-in page, for a browser without a session or asked
			// to sign in again: the form goes back into the flow. Twice
			// in one flow is a loop: the sign-in did not satisfy it.
			if signedIn {
				return "", r, errSignInAgain
			}
			signedIn = true
			target, method = a.p.node.Base+"/account/login", http.MethodPost
			form = url.Values{"email": {a.email}, "password": {userPassword},
				"next": {html.UnescapeString(string(signInNext.FindSubmatch(r.Body)[1]))}}
			a.signIns++
		case r.Status == http.StatusOK && secondStep.Match(r.Body) && a.code2 != nil:
			m := secondStep.FindSubmatch(r.Body)
			target, method = a.p.node.Base+"/account/login/code", http.MethodPost
			form = url.Values{"next": {html.UnescapeString(string(m[1]))}, "mfaToken": {html.UnescapeString(string(m[2]))},
				"methods": {html.UnescapeString(string(m[3]))}, "code": {a.code2()}}
		case r.Status == http.StatusOK && continueLink.Match(r.Body):
			return html.UnescapeString(string(continueLink.FindSubmatch(r.Body)[1])), r, nil
		default:
			return "", r, errNoRedirect
		}
	}
	t.Fatalf("the flow from %s did not end in 10 steps", authURL)
	return "", kit.Reply{}, nil
}

// code goes through the flow of authURL and returns the code of the
// redirect to the client, failing t on anything else.
func (a *agent) code(t *testing.T, authURL string) string {
	t.Helper()
	loc, r, err := a.authorize(t, authURL)
	if err != nil {
		t.Fatalf("authorize %s: %v: %d %.300s", authURL, err, r.Status, r.Body)
	}
	q := query(t, loc)
	if q.Get("code") == "" {
		t.Fatalf("the redirect to the client has no code: %s", loc)
	}
	return q.Get("code")
}

// query is the query of u.
func query(t *testing.T, u string) url.Values {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return parsed.Query()
}

// stepContext is a context for one step of a test outside the browser.
func stepContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
