package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// formContentType is what a browser sends for a form without files.
const formContentType = "application/x-www-form-urlencoded"

// deliverLink runs the sender until the outbox has nothing due and
// returns the path and query of the link of the last message it sent to
// email with template.
func (s *testServer) deliverLink(email string, template domain.MailTemplate) string {
	s.t.Helper()
	s.deliver()
	sent := s.mailsTo(email, template)
	if len(sent) == 0 {
		s.t.Fatalf("no %s message to %s", template, email)
	}
	u, err := url.Parse(sent[len(sent)-1].Data["link"])
	if err != nil {
		s.t.Fatal(err)
	}
	return u.RequestURI()
}

// page GETs a page as a browser does.
func (s *testServer) page(target string, opts ...reqOption) response {
	s.t.Helper()
	return s.do("GET", target, nil, append([]reqOption{withHeader("Accept", "text/html")}, opts...)...)
}

// submit POSTs a page's form as a browser on the same origin does.
func (s *testServer) submit(path string, form url.Values, opts ...reqOption) response {
	s.t.Helper()
	return s.do("POST", path, form.Encode(), append([]reqOption{
		withHeader("Accept", "text/html"), withHeader("Content-Type", formContentType),
		withHeader("Sec-Fetch-Site", "same-origin"),
	}, opts...)...)
}

func wantHTML(t *testing.T, res response, status int, heading string) {
	t.Helper()
	if res.Status != status || mediaType(res.Header) != "text/html" {
		t.Fatalf("status %d %s, want %d text/html\n%s", res.Status, res.Header.Get("Content-Type"), status, res.Body)
	}
	if !strings.Contains(string(res.Body), "<h1>"+heading+"</h1>") {
		t.Errorf("no heading %q:\n%s", heading, res.Body)
	}
}

func TestPages_serve_the_links_of_the_messages(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	// Through the use case: the API's user representation is not this
	// test's business.
	if _, err := s.svc.Users.Register(context.Background(), nil, application.RegisterInput{
		Name: "Ada", Email: "ada@example.com", Password: custPassword}); err != nil {
		t.Fatal(err)
	}
	link := s.deliverLink("ada@example.com", domain.MailVerifyEmail)
	token, _ := url.ParseQuery(strings.SplitN(link, "?", 2)[1])

	wantHTML(t, s.page(link), http.StatusOK, "Verify your email address")
	wantHTML(t, s.submit("/account/verify-email", url.Values{"token": token["token"]}),
		http.StatusOK, "Your email address is verified")
	wantHTML(t, s.submit("/account/verify-email", url.Values{"token": token["token"]}),
		http.StatusBadRequest, "This link is invalid or has expired")

	if err := s.svc.Mail.RequestPasswordReset(context.Background(), "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	link = s.deliverLink("ada@example.com", domain.MailResetPassword)
	token, _ = url.ParseQuery(strings.SplitN(link, "?", 2)[1])
	wantHTML(t, s.page(link), http.StatusOK, "Choose a new password")
	const pw = "a brand new passphrase"
	wantHTML(t, s.submit("/account/reset-password", url.Values{"token": token["token"], "password": {"password"}, "confirm": {"password"}}),
		http.StatusBadRequest, "Choose a new password")
	wantHTML(t, s.submit("/account/reset-password", url.Values{"token": token["token"], "password": {pw}, "confirm": {pw}}),
		http.StatusOK, "Your password is changed")
	if _, err := s.auth.Login(context.Background(), application.LoginInput{Email: "ada@example.com", Password: pw}); err != nil {
		t.Fatalf("login with the new password: %v", err)
	}

	wantHTML(t, s.submit("/account/reset-password", url.Values{"token": token["token"], "password": {pw}, "confirm": {pw}},
		withHeader("Sec-Fetch-Site", "cross-site")), http.StatusForbidden, "This form came from another site")

	css := s.do("GET", "/account/assets/style.css", nil, withHeader("Accept", "text/css,*/*;q=0.1"))
	if css.Status != http.StatusOK || mediaType(css.Header) != "text/css" {
		t.Fatalf("the stylesheet: %d %s", css.Status, css.Header.Get("Content-Type"))
	}
	if res := s.do("GET", "/account/assets/style.css", nil, withHeader("If-None-Match", css.Header.Get("ETag"))); res.Status != http.StatusNotModified {
		t.Errorf("the stylesheet with its ETag: %d", res.Status)
	}

	// The access log has the paths, never the tokens of the links.
	logs := s.logs.String()
	if !strings.Contains(logs, `"path":"/account/verify-email"`) || !strings.Contains(logs, `"path":"/account/reset-password"`) {
		t.Errorf("the pages are not in the access log:\n%s", logs)
	}
	if strings.Contains(logs, token["token"][0]) {
		t.Error("a link's token reached the log")
	}
}

func TestPages_other_methods_and_paths_are_the_apis_405_and_404(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, path := range []string{"/account/verify-email", "/account/reset-password"} {
		for _, m := range []string{http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
			res := s.do(m, path, nil)
			if m != http.MethodHead {
				wantProblem(t, res, http.StatusMethodNotAllowed, "method_not_allowed")
			} else if res.Status != http.StatusMethodNotAllowed {
				t.Errorf("HEAD %s: %d", path, res.Status)
			}
			if allow := res.Header.Get("Allow"); allow != "GET, POST" {
				t.Errorf("%s %s: Allow = %q", m, path, allow)
			}
		}
	}
	// GET and POST are the pages' handler's: its own 404 and 405 pages.
	res := s.submit("/account/assets/style.css", url.Values{})
	wantHTML(t, res, http.StatusMethodNotAllowed, "This address does not take that request")
	if allow := res.Header.Get("Allow"); allow != "GET" {
		t.Errorf("POST of the stylesheet: Allow = %q", allow)
	}
	for _, path := range []string{"/account/verify-email/", "/account/assets/other.css", "/account/Verify-Email"} {
		wantHTML(t, s.page(path), http.StatusNotFound, "Page not found")
	}
}

func TestPages_reset_counts_against_the_per_ip_limit_of_auth(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAuthIPLimit(2))
	unknown, _ := domain.NewLinkToken()
	form := url.Values{"token": {unknown}, "password": {"a brand new passphrase"}, "confirm": {"a brand new passphrase"}}

	for range 2 {
		wantHTML(t, s.submit("/account/reset-password", form), http.StatusBadRequest, "This link is invalid or has expired")
	}
	res := s.submit("/account/reset-password", form)
	wantHTML(t, res, http.StatusTooManyRequests, "Too many attempts")
	if res.Header.Get("Retry-After") == "" {
		t.Error("a 429 without Retry-After")
	}
	// One allowance for every route that hashes a password.
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": "whatever it is"}),
		http.StatusTooManyRequests, "rate_limited")
	// The verification page hashes nothing, and the GETs use nothing.
	for range 3 {
		wantHTML(t, s.submit("/account/verify-email", url.Values{"token": {unknown}}), http.StatusBadRequest, "This link is invalid or has expired")
		wantHTML(t, s.page("/account/reset-password?token="+unknown), http.StatusOK, "Choose a new password")
	}
}

// TestPages_without_the_option_are_not_routed: a server without pages (a
// deployment whose links go to an app of its own) has nothing at their
// paths. Not through s.do: the document describes a server with them.
func TestPages_without_the_option_are_not_routed(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	h := httpapi.New(s.svc, httpapi.Options{})
	for _, path := range []string{"/account/verify-email", "/account/reset-password", "/account/assets/style.css"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"code":"not_found"`) {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
	}
}

func TestPages_console_sign_in_counts_against_the_per_ip_limit_of_auth(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, withAuthIPLimit(2))
	form := url.Values{"email": {"nobody@example.com"}, "password": {"not the password"}}
	for range 2 {
		wantHTML(t, s.submit("/admin/login", form), http.StatusUnauthorized, "Sign in")
	}
	res := s.submit("/account/login", form)
	wantHTML(t, res, http.StatusTooManyRequests, "Too many attempts")
	if res.Header.Get("Retry-After") == "" {
		t.Error("a 429 without Retry-After")
	}
	// The same allowance as the API's login.
	wantProblem(t, s.do("POST", "/auth/login", map[string]string{"email": "ada@example.com", "password": "whatever it is"}),
		http.StatusTooManyRequests, "rate_limited")
	// Reading the sign-in page checks nothing.
	wantHTML(t, s.page("/admin/login"), http.StatusOK, "Sign in")
}

// TestPages_provider_pages_are_routed_to_the_pages: the OpenID
// provider's pages are the pages handler's; with the provider off (the
// test's application has none) each is its 404 page.
func TestPages_provider_pages_are_routed_to_the_pages(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	for _, res := range []response{
		s.page("/oauth2/authorize/continue?request=abcdefghijklmnopqrstuvwxyz"),
		s.submit("/oauth2/consent", url.Values{"request": {"abcdefghijklmnopqrstuvwxyz"}, "decision": {"allow"}}),
		s.page("/oauth2/end_session"),
		s.submit("/oauth2/end_session", url.Values{}),
	} {
		wantHTML(t, res, http.StatusNotFound, "Page not found")
	}
}
