package idpflow

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/userd/userd/test/chromium"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/upstream"
)

// upstreamClientID is userd's client at oidc-provider.
const upstreamClientID = "userd-at-the-upstream"

// The pages the driver meets on its way through a flow.
const (
	pageUpstreamLogin = "upstream-login" // oidc-provider's development sign-in
	pageUserdLogin    = "userd-login"    // a userd's sign-in page, as the upstream
	pageConsent       = "consent"        // either provider's consent
	pageStep          = "step"           // a page that goes on by itself
	// Anything else ("stop") ends the driver's way; "loading" is waited.
)

// whichPage names the page the tab shows, the upstream being at origin
// up (oidc-provider's, or a userd's sign-in and consent pages): "loading"
// until the document is complete.
const whichPage = `((up) => {
  if (document.readyState !== "complete") return "loading";
  if (document.querySelector('meta[http-equiv="refresh"]')) return "step";
  if (document.querySelector("#consent-allow") || document.querySelector('input[name="prompt"][value="consent"]')) return "consent";
  if (location.origin !== up) return "stop";
  if (document.querySelector('input[name="login"]')) return "upstream-login";
  if (document.querySelector("form #password")) return "userd-login";
  return "stop";
})(%q)`

// driver goes through the upstream's pages as a person would.
type driver struct {
	b  *chromium.Browser
	up string // the upstream's origin
	// login and password answer the upstream's sign-in page.
	login, password string
	// cancel answers oidc-provider's sign-in page with its Cancel link.
	cancel bool
}

// act runs action (a click, or Enter in a form), waits for the document
// it leads to, and returns its status.
func (d driver) act(t testing.TB, action chromedp.Action[chromedp.Void]) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(d.b.Context(), chromium.StepTimeout)
	defer cancel()
	res, err := chromedp.RunResponse(ctx, action)
	if err != nil {
		t.Fatalf("act on %s: %v", d.b.Eval(t, "location.href"), err)
	}
	return int(res.Status)
}

// through follows the flow from the page shown after action (which
// leaves userd for the upstream) until it stops on a page that is
// neither the upstream's nor one that goes on by itself, and returns the
// pages met (those that went on by themselves are not all seen) and the
// status of the last document an action of the driver led to.
func (d driver) through(t testing.TB, action chromedp.Action[chromedp.Void]) ([]string, int) {
	t.Helper()
	status := d.act(t, action)
	var seen []string
	for range 12 {
		page := d.settled(t)
		seen = append(seen, page)
		switch page {
		case pageUpstreamLogin:
			if d.cancel {
				status = d.act(t, chromedp.Click(`a[href*="/abort"]`))
				continue
			}
			d.b.Do(t, chromedp.SendKeys(`input[name="login"]`, d.login), chromedp.SendKeys(`input[name="password"]`, "any password"))
			status = d.act(t, chromedp.Click(`button[type="submit"]`))
		case pageUserdLogin:
			d.b.Do(t, chromedp.SendKeys("#email", d.login), chromedp.SendKeys("#password", d.password))
			status = d.act(t, chromedp.KeyEvent(kb.Enter))
		case pageConsent:
			if d.b.Eval(t, `document.querySelector("#consent-allow") ? "yes" : ""`) != "" {
				status = d.act(t, chromedp.Click("#consent-allow"))
			} else {
				status = d.act(t, chromedp.Click(`button[type="submit"]`))
			}
		default:
			return seen, status
		}
	}
	t.Fatalf("the flow did not end after the pages %v", seen)
	return nil, 0
}

// settled waits until the tab shows a complete page that does not go on
// by itself (a page that does is followed: its refresh is immediate),
// and names it.
func (d driver) settled(t testing.TB) string {
	t.Helper()
	deadline := time.Now().Add(chromium.StepTimeout)
	for {
		page := chromium.Evaluate[string](t, d.b, fmt.Sprintf(whichPage, d.up))
		if page != "loading" && page != pageStep {
			return page
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page %s did not settle: %s", d.b.Eval(t, "location.href"), d.b.Eval(t, "document.body.innerText"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// path is the path and query of the tab's page.
func path(t testing.TB, b *chromium.Browser) string {
	t.Helper()
	return b.Eval(t, "location.pathname + location.search")
}

// forgetUserd deletes the browser's cookies of userd at base (its
// session, the provider's, the flow's): the browser is signed out of it,
// still signed in at the upstream.
func forgetUserd(t testing.TB, b *chromium.Browser, base string) {
	t.Helper()
	for _, name := range []string{consoleCookie, ssoCookie, idpCookie} {
		chromium.Call(t, b, network.DeleteCookies, network.DeleteCookiesParams{Name: name, URL: base + "/"})
	}
}

// cookiesOf are the names of the browser's cookies for base.
func cookiesOf(t testing.TB, b *chromium.Browser, base string) []string {
	t.Helper()
	r := chromium.Call(t, b, network.GetCookies, network.GetCookiesParams{URLs: []string{base + "/"}})
	var names []string
	for _, c := range r.Cookies {
		names = append(names, c.Name)
	}
	return names
}

// clickProvider opens the sign-in page of path at u, checks the button
// of the provider slug, and returns the action that clicks it.
func clickProvider(t testing.TB, b *chromium.Browser, u userd, loginPath, slug, displayName string) chromedp.Action[chromedp.Void] {
	t.Helper()
	b.Open(t, u.url+loginPath, http.StatusOK)
	sel := fmt.Sprintf(`a[data-idp=%q][href^="/auth/idp/%s/start"]`, slug, slug)
	if got := b.Eval(t, fmt.Sprintf(`document.querySelector(%q)?.textContent.trim() ?? ""`, sel)); got != "Sign in with "+displayName {
		t.Fatalf("the sign-in page %s has the button %q for %s, want %q", loginPath, got, slug, "Sign in with "+displayName)
	}
	return chromedp.Click(sel)
}

// TestChromium_sign_in_through_providers: a person in headless
// Chromium signs in to userd with oidc-provider (an OpenID-certified
// provider, on localhost: another site than userd's 127.0.0.1), through
// the button of userd's sign-in page, oidc-provider's own sign-in and
// consent pages, and userd's same-site step. The first sign-in makes the
// account, the second (still signed in upstream) finds it; a person
// whose email has a password account here signs in with the password to
// link the identity; identities are unlinked through the API (not the
// last way in) and linked again with the account page's "Link"; a flow cancelled at the provider ends on a page without
// a session; and an app that signs in through userd's own OpenID
// provider gets "Sign in with Upstream" there, and an ID token whose amr
// is ["fed"]. Then, in the same browser, a userd signs people in through
// another userd (userdFederatesToUserd).
func TestChromium_sign_in_through_providers(t *testing.T) {
	t.Parallel()
	upstream.NodeModules(t, "oidc-provider")
	b := chromium.Start(t)
	u := startUserd(t)
	up := upstream.StartOIDC(t, upstream.OIDCOptions{
		ClientID: upstreamClientID, ClientSecret: clientSecret, RedirectURIs: []string{u.callback("upstream")},
		Accounts: map[string]upstream.Claims{
			"grace": {Email: "grace@example.com", EmailVerified: true, Name: "Grace Hopper"},
			"ada":   {Email: "ada@example.com", EmailVerified: true, Name: "Ada Lovelace"},
		},
	})
	u.addProvider(t, "upstream", "Upstream", up.Issuer, upstreamClientID, nil)
	d := driver{b: b, up: up.Issuer, login: "grace"}
	var grace account

	t.Run("first_sign_in_makes_the_account", func(t *testing.T) {
		click := clickProvider(t, b, u, "/account/login", "upstream", "Upstream")
		b.CheckAccessibility(t, "sign-in-with-providers")
		pages, _ := d.through(t, click)
		if !slices.Contains(pages, pageUpstreamLogin) || !slices.Contains(pages, pageConsent) {
			t.Errorf("the browser met the pages %v, want the upstream's sign-in and consent", pages)
		}
		if p := path(t, b); p != "/account/" {
			t.Fatalf("the browser ended on %s, want /account/: %s", p, b.Eval(t, "document.body.innerText"))
		}
		if email := b.Text(t, "#profile-email"); !strings.Contains(email, "grace@example.com") {
			t.Errorf("the account page shows %q, want grace@example.com", email)
		}
		grace = u.userByEmail(t, "grace@example.com")
		if !grace.EmailVerified || grace.Name != "Grace Hopper" {
			t.Errorf("the account made: %+v, want the email verified and the upstream's name", grace)
		}
		if ids := u.identities(t, grace.ID, u.admin); len(ids) != 1 || ids[0].Provider != "upstream" || ids[0].Subject != "grace" {
			t.Errorf("the identities of the new account: %+v, want upstream's grace", ids)
		}
		if linked := u.events(t, "identity.linked", "upstream"); len(linked) != 1 || linked[0].SubjectID != grace.ID {
			t.Errorf("identity.linked: %+v, want one of the new account", linked)
		}
	})

	t.Run("second_sign_in_finds_it", func(t *testing.T) {
		if grace.ID == "" {
			t.Skip("no account from the first sign-in")
		}
		forgetUserd(t, b, u.url)
		pages, _ := d.through(t, clickProvider(t, b, u, "/account/login", "upstream", "Upstream"))
		if slices.Contains(pages, pageUpstreamLogin) || slices.Contains(pages, pageConsent) {
			t.Errorf("the browser met the pages %v, want none of the upstream's: still signed in there, consent given", pages)
		}
		if p := path(t, b); p != "/account/" {
			t.Fatalf("the browser ended on %s, want /account/", p)
		}
		if n := len(u.usersByEmail(t, "grace@example.com")); n != 1 {
			t.Errorf("%d accounts of grace@example.com, want 1", n)
		}
		if in := u.events(t, "idp.sign_in", "upstream"); len(in) != 2 {
			t.Errorf("idp.sign_in: %+v, want two", in)
		}
	})

	t.Run("existing_password_account_linked_after_its_sign_in", func(t *testing.T) {
		ada := kit.Register(t, u.node.Base, "Ada Lovelace", "ada@example.com", userPassword)
		chromium.Call(t, b, network.ClearBrowserCookies, struct{}{})
		asAda := driver{b: b, up: up.Issuer, login: "ada"}
		pages, status := asAda.through(t, clickProvider(t, b, u, "/account/login", "upstream", "Upstream"))
		if status != http.StatusOK || b.Eval(t, `document.querySelector("#link-pending") ? "yes" : ""`) == "" {
			t.Fatalf("after the upstream (pages %v): %d %s, want 200 saying the account exists:\n%s", pages, status, path(t, b), b.Eval(t, "document.body.innerText"))
		}
		if slices.Contains(cookiesOf(t, b, u.url), consoleCookie) {
			t.Fatalf("the provider alone signed in an account with a password: %s is set", consoleCookie)
		}
		if email := b.Eval(t, `document.querySelector("form #email")?.value ?? ""`); email != "ada@example.com" {
			t.Errorf("the sign-in form's email is %q, want ada@example.com prefilled", email)
		}
		b.CheckAccessibility(t, "sign-in-to-link")
		b.Do(t, chromedp.SendKeys("#password", userPassword))
		d.act(t, chromedp.KeyEvent(kb.Enter))
		if p := path(t, b); !strings.HasPrefix(p, "/account/identities") {
			t.Errorf("after the password, the browser is on %s, want /account/identities", p)
		} else if shown := b.Eval(t, `document.querySelector("#identity-upstream")?.textContent ?? ""`); shown != "Upstream" {
			t.Errorf("the linked identities show %q, want Upstream", shown)
		}
		tok := kit.Login(t, u.node.Base, "ada@example.com", userPassword).AccessToken
		ids := u.identities(t, "me", tok)
		if len(ids) != 1 || ids[0].Provider != "upstream" || ids[0].Subject != "ada" || ids[0].Email != "ada@example.com" {
			t.Fatalf("ada's identities: %+v, want upstream's ada", ids)
		}
		if linked := u.events(t, "identity.linked", "upstream"); len(linked) == 0 || linked[0].SubjectID != ada.ID {
			t.Errorf("identity.linked: %+v, want the newest of ada's account", linked)
		}

		// Unlinked by its owner: the password is left.
		if r := u.api(t, http.MethodDelete, "/api/users/me/identities/upstream", nil, tok); r.Status != http.StatusNoContent {
			t.Errorf("ada unlinks the identity: %s, want 204", r)
		}
		if ids := u.identities(t, "me", tok); len(ids) != 0 {
			t.Errorf("ada's identities after the unlink: %+v, want none", ids)
		}
		// Linked again from the account page's "Link": still signed in
		// here and at the upstream, the flow needs no page of either.
		b.Open(t, u.url+"/account/identities", http.StatusOK)
		if b.Eval(t, `document.querySelector("#no-identities") ? "none" : ""`) != "none" {
			t.Errorf("the account page lists identities after the unlink: %s", b.Eval(t, "document.body.innerText"))
		}
		pages, _ = asAda.through(t, chromedp.Click("#link-upstream"))
		if p := path(t, b); !strings.HasPrefix(p, "/account/identities") || slices.Contains(pages, pageUpstreamLogin) {
			t.Errorf("the account page's Link ended on %s after the pages %v, want /account/identities without the upstream's sign-in", p, pages)
		}
		if ids := u.identities(t, "me", tok); len(ids) != 1 || ids[0].Subject != "ada" {
			t.Errorf("ada's identities after the account page's Link: %+v, want upstream's ada", ids)
		}
		// Grace's only way in is the identity: it stays.
		if grace.ID != "" {
			r := u.api(t, http.MethodDelete, "/api/users/"+grace.ID+"/identities/upstream", nil, u.admin)
			kit.WantProblem(t, r, http.StatusConflict, "last_sign_in_method")
		}
	})

	t.Run("cancelled_at_the_provider_no_session", func(t *testing.T) {
		chromium.Call(t, b, network.ClearBrowserCookies, struct{}{})
		cancel := driver{b: b, up: up.Issuer, cancel: true}
		pages, status := cancel.through(t, clickProvider(t, b, u, "/account/login", "upstream", "Upstream"))
		if status != http.StatusBadRequest || !strings.HasPrefix(path(t, b), "/auth/idp/upstream/callback") {
			t.Fatalf("after Cancel (pages %v): %d on %s, want the callback's 400 page", pages, status, path(t, b))
		}
		b.CheckAccessibility(t, "sign-in-with-provider-refused")
		if got := cookiesOf(t, b, u.url); slices.Contains(got, consoleCookie) || slices.Contains(got, ssoCookie) {
			t.Errorf("the cookies of userd after a refused flow: %v, want no session", got)
		}
		b.Open(t, u.url+"/account/", http.StatusOK)
		if b.Eval(t, `document.querySelector("form #password") ? "sign-in" : location.pathname`) != "sign-in" {
			t.Errorf("/account/ after the refused flow is not the sign-in page: %s", path(t, b))
		}
		u.wantRefusal(t, "upstream", "provider_error")
	})

	t.Run("app_signs_in_through_userd_with_the_provider", func(t *testing.T) {
		chromium.Call(t, b, network.ClearBrowserCookies, struct{}{})
		appSignIn(t, b, u, d)
	})

	t.Run("userd_federates_to_userd", func(t *testing.T) { userdFederatesToUserd(t, b) })
}

// app is an OpenID client of userd as POST /api/oauth-clients answers
// it.
type app struct {
	ID     string `json:"id"`
	Secret string `json:"clientSecret"`
}

// appSignIn: an app sends the browser to userd's /oauth2/authorize;
// userd's sign-in page offers the provider, whose flow goes back into
// the app's; the app's code gives an ID token whose amr is ["fed"]
// (contract-identity.md: "apps get Sign in with X through userd's own
// OpenID provider").
func appSignIn(t *testing.T, b *chromium.Browser, u userd, d driver) {
	t.Helper()
	hits, redirect := listen(t)
	var c app
	kit.Want(t, "create the app", u.api(t, http.MethodPost, "/api/oauth-clients", map[string]any{
		"name": "Harvard Mark I", "type": "confidential", "redirectUris": []string{redirect},
		"grantTypes": []string{"authorization_code"}, "firstParty": true}, u.admin), http.StatusCreated, &c)
	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	nonce := "n-" + rand.Text()
	auth := u.url + "/oauth2/authorize?" + url.Values{
		"response_type": {"code"}, "client_id": {c.ID}, "redirect_uri": {redirect}, "scope": {"openid email"},
		"state": {"st-app"}, "nonce": {nonce}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])},
		"code_challenge_method": {"S256"}}.Encode()
	b.Navigate(t, auth)
	sel := `a[data-idp="upstream"]`
	href := b.Eval(t, fmt.Sprintf(`document.querySelector(%q)?.getAttribute("href") ?? ""`, sel))
	if !strings.HasPrefix(href, "/auth/idp/upstream/start?") || !strings.Contains(href, "oauth2") {
		t.Fatalf("the sign-in page of the app's flow (%s) offers %q, want the provider's start going back into the flow", path(t, b), href)
	}
	pages, _ := d.through(t, chromedp.Click(sel))
	var back string
	select {
	case back = <-hits:
	case <-time.After(chromium.StepTimeout):
		t.Fatalf("the app's redirect URI was not reached (pages %v; on %s): %s", pages, path(t, b), b.Eval(t, "document.body.innerText"))
	}
	q, err := url.Parse(back)
	if err != nil || q.Query().Get("code") == "" || q.Query().Get("state") != "st-app" {
		t.Fatalf("the app got %s, want a code and its state", back)
	}
	req, err := http.NewRequest(http.MethodPost, u.node.Base+"/oauth2/token", strings.NewReader(url.Values{
		"grant_type": {"authorization_code"}, "code": {q.Query().Get("code")}, "redirect_uri": {redirect}, "code_verifier": {verifier}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	var tok struct {
		IDToken string `json:"id_token"`
	}
	kit.Want(t, "the app's code", kit.Do(t, req), http.StatusOK, &tok)
	var claims struct {
		Email string   `json:"email"`
		AMR   []string `json:"amr"`
		Nonce string   `json:"nonce"`
	}
	kit.DecodePart(t, tok.IDToken, 1, &claims)
	if !slices.Equal(claims.AMR, []string{"fed"}) || claims.Email != "grace@example.com" || claims.Nonce != nonce {
		t.Errorf("the app's ID token: %+v, want amr [fed], grace's email and the nonce", claims)
	}
}

// listen serves an app's redirect URI on a loopback port until t ends,
// and returns the URLs the browser is sent to and the URI.
func listen(t *testing.T) (<-chan string, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	uri := "http://" + ln.Addr().String() + "/cb"
	hits := make(chan string, 4)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/cb" {
			hits <- "http://" + ln.Addr().String() + r.URL.RequestURI()
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><html lang="en"><title>Back at the app</title><h1>Back at the app</h1></html>`))
	})}
	go func() { _ = srv.Serve(ln) }() // ends with Close below
	t.Cleanup(func() { _ = srv.Close() })
	return hits, uri
}
