package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

const newPassword = "a brand new passphrase"

func TestVerifyEmail_a_GET_uses_nothing_and_the_POST_works_once(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	link := e.register("ada@example.com")
	token := tokenOf(t, link)

	// A mail scanner, then the person: two GETs use nothing.
	for range 2 {
		res := e.get(link)
		wantPage(t, res, http.StatusOK, "Verify your email address")
		if !strings.Contains(res.Body, `<form method="post" action="verify-email">`) ||
			!strings.Contains(res.Body, `<input type="hidden" name="token" value="`+token+`">`) {
			t.Fatalf("no form posting the token back:\n%s", res.Body)
		}
	}
	if e.user("ada@example.com").EmailVerified {
		t.Fatal("a GET verified the email")
	}

	res := e.post(web.VerifyEmailPath, url.Values{"token": {token}})
	wantPage(t, res, http.StatusOK, "Your email address is verified")
	if !strings.Contains(res.Body, "ada@example.com is confirmed as yours") {
		t.Errorf("the page does not name the address:\n%s", res.Body)
	}
	if !e.user("ada@example.com").EmailVerified {
		t.Fatal("the POST did not verify the email")
	}

	// The link is used: its page now says so, and never how.
	wantInvalidLink(t, e.post(web.VerifyEmailPath, url.Values{"token": {token}}))
}

// The verification page named neither the address nor the account: who
// opened a link mailed to them by a stranger's registration or change of
// email could not tell what they were asked to confirm. It names the
// address the token verifies, and nothing of the account (its name is
// whatever the requester typed).
func TestVerifyEmail_the_page_names_the_address_and_nothing_else(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const hostile = "Call +1 555 0100 now"
	_, err := e.svc.Users.Register(context.Background(), nil, application.RegisterInput{
		Name: hostile, Email: "stranger@example.net", Password: custPassword})
	if err != nil {
		t.Fatal(err)
	}
	link := e.link(e.deliver(), "stranger@example.net", domain.MailVerifyEmail)
	res := e.get(link)
	wantPage(t, res, http.StatusOK, "Verify your email address")
	if !strings.Contains(res.Body, "<strong>stranger@example.net</strong>") {
		t.Errorf("the page does not name the address it verifies:\n%s", res.Body)
	}
	if strings.Contains(res.Body, "555") {
		t.Errorf("the page shows the account's name:\n%s", res.Body)
	}
	if e.user("stranger@example.net").EmailVerified {
		t.Fatal("the GET verified the email")
	}
	// Still usable: the GET only looked.
	wantPage(t, e.post(web.VerifyEmailPath, url.Values{"token": {tokenOf(t, link)}}), http.StatusOK, "Your email address is verified")
}

func TestResetPassword_a_weak_password_leaves_the_link_usable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("ada@example.com")
	link := e.requestReset("ada@example.com")
	token := tokenOf(t, link)

	for range 2 {
		res := e.get(link)
		wantPage(t, res, http.StatusOK, "Choose a new password")
		wantResetForm(t, res.Body, token)
		if strings.Contains(res.Body, `aria-invalid`) || strings.Contains(res.Body, "<title>Error") {
			t.Errorf("a fresh form shows an error:\n%s", res.Body)
		}
	}

	for _, weak := range []struct{ password, message string }{
		{"short", "The new password must be at least 8 characters."},
		{"password", "The new password is too common."},
		{"ada@example.com", "The new password must not be the email address."},
	} {
		res := e.post(web.ResetPasswordPath, url.Values{"token": {token}, "password": {weak.password}, "confirm": {weak.password}})
		wantPage(t, res, http.StatusBadRequest, "Choose a new password")
		wantResetForm(t, res.Body, token)
		wantFieldError(t, res.Body, "password", weak.message)
		if strings.Contains(res.Body, `value="`+weak.password+`"`) {
			t.Errorf("the form gives the refused password back:\n%s", res.Body)
		}
	}
	if !e.canLogin("ada@example.com", custPassword) {
		t.Fatal("a refused password changed the account")
	}

	res := e.post(web.ResetPasswordPath, url.Values{"token": {token}, "password": {newPassword}, "confirm": {newPassword}})
	wantPage(t, res, http.StatusOK, "Your password is changed")
	if !strings.Contains(res.Body, "Sign in with your new password.") {
		t.Errorf("the page does not say what to do next:\n%s", res.Body)
	}
	if !e.canLogin("ada@example.com", newPassword) || e.canLogin("ada@example.com", custPassword) {
		t.Fatal("the password did not change")
	}
	// The reset is mailed to the account, as the use case promises.
	if mails := e.deliver(); len(mails) != 1 || mails[0].Template != domain.MailPasswordChanged {
		t.Errorf("messages after the reset: %+v", mails)
	}

	wantInvalidLink(t, e.post(web.ResetPasswordPath, url.Values{"token": {token}, "password": {"another passphrase"}, "confirm": {"another passphrase"}}))
}

func TestResetPassword_passwords_that_differ_are_refused_before_the_token_is_looked_at(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("ada@example.com")
	token := tokenOf(t, e.requestReset("ada@example.com"))

	res := e.post(web.ResetPasswordPath, url.Values{"token": {token}, "password": {newPassword}, "confirm": {newPassword + "!"}})
	wantPage(t, res, http.StatusBadRequest, "Choose a new password")
	wantResetForm(t, res.Body, token)
	wantFieldError(t, res.Body, "confirm", "The two passwords differ. Type the same password in both fields.")
	if strings.Contains(res.Body, "password-error") {
		t.Errorf("the password field has an error too:\n%s", res.Body)
	}

	res = e.post(web.ResetPasswordPath, url.Values{"token": {token}, "password": {newPassword}, "confirm": {newPassword}})
	wantPage(t, res, http.StatusOK, "Your password is changed")
}

func TestPages_invalid_links(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("ada@example.com")
	resetToken := tokenOf(t, e.requestReset("ada@example.com"))
	unknown, _ := domain.NewLinkToken()

	for _, path := range []string{web.VerifyEmailPath, web.ResetPasswordPath} {
		t.Run(strings.TrimPrefix(path, "/account/"), func(t *testing.T) {
			wantInvalidLink(t, e.get(path))
			wantInvalidLink(t, e.get(path+"?token="))
			wantInvalidLink(t, e.get(path+"?token=short"))
			wantInvalidLink(t, e.get(path+"?token="+unknown+"x"))
			if path == web.ResetPasswordPath {
				// A well-formed token is judged when the form comes back.
				wantPage(t, e.get(path+"?token="+unknown), http.StatusOK, "")
			} else {
				// The verification page names the address of its token,
				// looked up (not used): an unknown one has none.
				wantInvalidLink(t, e.get(path+"?token="+unknown))
			}

			ok := url.Values{"password": {newPassword}, "confirm": {newPassword}}
			wantInvalidLink(t, e.post(path, ok))
			wantInvalidLink(t, e.post(path, withToken(ok, "")))
			wantInvalidLink(t, e.post(path, withToken(ok, "not a token")))
			wantInvalidLink(t, e.post(path, withToken(ok, unknown)))
			// The token is read from the form only, never from the query.
			wantInvalidLink(t, e.post(path+"?token="+resetToken, ok))
		})
	}
	// A token of the other purpose serves neither page.
	wantInvalidLink(t, e.post(web.VerifyEmailPath, url.Values{"token": {resetToken}}))
	if !e.canLogin("ada@example.com", custPassword) {
		t.Fatal("an invalid link changed the account")
	}
}

func withToken(v url.Values, token string) url.Values {
	out := url.Values{"token": {token}}
	for k, vs := range v {
		out[k] = vs
	}
	return out
}

func TestPages_refuse_a_form_from_another_origin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("ada@example.com")
	token := tokenOf(t, e.requestReset("ada@example.com"))
	form := url.Values{"token": {token}, "password": {newPassword}, "confirm": {newPassword}}

	for name, opt := range map[string]reqOption{
		"sec_fetch_site_cross_site": withHeader("Sec-Fetch-Site", "cross-site"),
		"sec_fetch_site_same_site":  withHeader("Sec-Fetch-Site", "same-site"),
		"origin_of_another_host": func(r *http.Request) {
			r.Header.Del("Sec-Fetch-Site")
			r.Header.Set("Origin", "https://evil.example")
		},
	} {
		t.Run(name, func(t *testing.T) {
			res := e.post(web.ResetPasswordPath, form, opt)
			wantPage(t, res, http.StatusForbidden, "This form came from another site")
			res = e.post(web.VerifyEmailPath, url.Values{"token": {token}}, opt)
			wantPage(t, res, http.StatusForbidden, "This form came from another site")
		})
	}
	if !e.canLogin("ada@example.com", custPassword) {
		t.Fatal("a refused form changed the password")
	}
	// The refusals used nothing: the same form, from the page, works.
	wantPage(t, e.post(web.ResetPasswordPath, form), http.StatusOK, "Your password is changed")
}

func TestPages_bodies_that_are_not_a_small_form(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	token, _ := domain.NewLinkToken()
	form := url.Values{"token": {token}}.Encode()

	res := e.postRaw(web.VerifyEmailPath, `{"token":"`+token+`"}`, withHeader("Content-Type", "application/json"))
	wantPage(t, res, http.StatusUnsupportedMediaType, "The form could not be read")
	res = e.postRaw(web.VerifyEmailPath, form, withHeader("Content-Type", "multipart/form-data; boundary=x"))
	wantPage(t, res, http.StatusUnsupportedMediaType, "The form could not be read")
	res = e.postRaw(web.ResetPasswordPath, form+"&password="+strings.Repeat("x", 9<<10))
	wantPage(t, res, http.StatusRequestEntityTooLarge, "The form was too large")
	res = e.postRaw(web.ResetPasswordPath, "token=%zz")
	wantPage(t, res, http.StatusBadRequest, "The form could not be read")
	// The limit leaves room for the longest passwords the policy accepts.
	longest := strings.Repeat("\U0001F600", domain.PasswordMaxLen)
	res = e.post(web.ResetPasswordPath, url.Values{"token": {token}, "password": {longest}, "confirm": {longest}})
	wantInvalidLink(t, res)
}

func TestPages_escape_what_they_show(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const email = `o'neil&co@example.com`
	link := e.register(email)

	res := e.post(web.VerifyEmailPath, url.Values{"token": {tokenOf(t, link)}})
	wantPage(t, res, http.StatusOK, "Your email address is verified")
	if !strings.Contains(res.Body, `o&#39;neil&amp;co@example.com is confirmed`) {
		t.Errorf("the address is not escaped:\n%s", res.Body)
	}

	script := url.QueryEscape(`"><script>alert(1)</script>`)
	for _, path := range []string{web.VerifyEmailPath, web.ResetPasswordPath} {
		res := e.get(path + "?token=" + script)
		wantInvalidLink(t, res)
		if strings.Contains(res.Body, "<script") || strings.Contains(res.Body, "alert(1)") {
			t.Errorf("GET %s reflects the token:\n%s", path, res.Body)
		}
	}
}

func TestPages_an_unavailable_store_is_a_503_and_an_unknown_error_a_500_without_its_text(t *testing.T) {
	t.Parallel()
	var fail error
	e := newEnv(t, withLinks(func(s ports.LinkTokenStore) ports.LinkTokenStore { return &failingLinks{s, &fail} }))
	link := e.register("ada@example.com")
	token := tokenOf(t, link)

	fail = fmt.Errorf("link tokens: %w", domain.ErrUnavailable)
	res := e.post(web.VerifyEmailPath, url.Values{"token": {token}})
	wantPage(t, res, http.StatusServiceUnavailable, "The service is unavailable")
	if res.Header.Get("Retry-After") == "" {
		t.Error("a 503 without Retry-After")
	}
	res = e.post(web.ResetPasswordPath, url.Values{"token": {token}, "password": {newPassword}, "confirm": {newPassword}})
	wantPage(t, res, http.StatusServiceUnavailable, "The service is unavailable")

	fail = errors.New("pq: relation link_tokens is on fire at 10.0.0.7")
	res = e.post(web.VerifyEmailPath, url.Values{"token": {token}}, func(r *http.Request) {
		*r = *r.WithContext(domain.WithRequestMeta(r.Context(), domain.RequestMeta{RequestID: "req-42"}))
	})
	wantPage(t, res, http.StatusInternalServerError, "Something went wrong")
	if strings.Contains(res.Body, "fire") || strings.Contains(res.Body, "10.0.0.7") {
		t.Errorf("the page shows the error's text:\n%s", res.Body)
	}
	if !strings.Contains(res.Body, "<code>req-42</code>") {
		t.Errorf("the page does not give the request id:\n%s", res.Body)
	}
	if !strings.Contains(e.logs.String(), "on fire") {
		t.Error("the error is not logged")
	}

	// The store is back: the link was never used.
	fail = nil
	wantPage(t, e.post(web.VerifyEmailPath, url.Values{"token": {token}}), http.StatusOK, "Your email address is verified")
	if strings.Contains(e.logs.String(), token) {
		t.Error("a token reached the log")
	}
}

// failingLinks fails Peek and Use with *fail while it is set.
type failingLinks struct {
	ports.LinkTokenStore
	fail *error
}

func (f *failingLinks) Peek(ctx context.Context, hash string, purpose domain.LinkPurpose, now time.Time) (domain.LinkToken, error) {
	if *f.fail != nil {
		return domain.LinkToken{}, *f.fail
	}
	return f.LinkTokenStore.Peek(ctx, hash, purpose, now)
}

func (f *failingLinks) Use(ctx context.Context, hash string, purpose domain.LinkPurpose, now time.Time) (domain.LinkToken, error) {
	if *f.fail != nil {
		return domain.LinkToken{}, *f.fail
	}
	return f.LinkTokenStore.Use(ctx, hash, purpose, now)
}

func TestPages_stylesheet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	page := e.get(e.register("ada@example.com"))
	m := regexp.MustCompile(`<link rel="stylesheet" href="(assets/style\.css\?v=[0-9a-f]{32})">`).FindStringSubmatch(page.Body)
	if m == nil {
		t.Fatalf("no stylesheet link:\n%s", page.Body)
	}
	// Relative to the page, so that the pages work under a path prefix.
	res := e.get("/account/" + m[1])
	if res.Status != http.StatusOK || res.Header.Get("Content-Type") != "text/css; charset=utf-8" || !strings.Contains(res.Body, "prefers-color-scheme: dark") {
		t.Fatalf("GET the stylesheet: %d %s\n%.200s", res.Status, res.Header.Get("Content-Type"), res.Body)
	}
	if cc := res.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age") {
		t.Errorf("Cache-Control = %q", cc)
	}
	etag := res.Header.Get("ETag")
	if again := e.get(web.StylesheetPath, withHeader("If-None-Match", etag)); again.Status != http.StatusNotModified || again.Body != "" {
		t.Errorf("If-None-Match %s: %d", etag, again.Status)
	}
	if again := e.get(web.StylesheetPath, withHeader("If-None-Match", `"old"`)); again.Status != http.StatusOK {
		t.Errorf("a stale ETag: %d", again.Status)
	}
}

func TestPages_other_methods_and_paths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tt := range []struct {
		method, path string
		status       int
	}{
		{http.MethodPut, web.VerifyEmailPath, http.StatusMethodNotAllowed},
		{http.MethodDelete, web.ResetPasswordPath, http.StatusMethodNotAllowed},
		{http.MethodPost, web.StylesheetPath, http.StatusMethodNotAllowed},
		{http.MethodGet, "/account/assets/other.css", http.StatusNotFound},
		{http.MethodGet, "/account/verify-email/", http.StatusNotFound},
	} {
		r, _ := http.NewRequest(tt.method, tt.path, nil)
		if res := e.send(r); res.Status != tt.status {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, res.Status, tt.status)
		}
	}
}

func TestPages_are_accessible_html(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("ada@example.com")
	token := tokenOf(t, e.requestReset("ada@example.com"))
	pages := map[string]answer{
		"form":  e.get(web.ResetPasswordPath + "?token=" + token),
		"error": e.post(web.ResetPasswordPath, url.Values{"token": {token}, "password": {"password"}, "confirm": {"other"}}),
		"weak":  e.post(web.ResetPasswordPath, url.Values{"token": {token}, "password": {"password"}, "confirm": {"password"}}),
		"done":  e.post(web.ResetPasswordPath, url.Values{"token": {token}, "password": {newPassword}, "confirm": {newPassword}}),
	}
	for name, res := range pages {
		body := res.Body
		if testing.Verbose() {
			t.Logf("%s:\n%s", name, body)
		}
		for _, want := range []string{`<!doctype html>`, `<html lang="en">`, `<meta charset="utf-8">`,
			`<meta name="viewport" content="width=device-width, initial-scale=1">`, `<main>`, `<h1>`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: no %s", name, want)
			}
		}
		for _, banned := range []string{"<script", " style=", "<style", "http://", "https://", "//"} {
			if strings.Contains(body, banned) {
				t.Errorf("%s: the page holds %q", name, banned)
			}
		}
		if handler := regexp.MustCompile(`\son[a-z]+=`).FindString(body); handler != "" {
			t.Errorf("%s: the page holds an event handler %q", name, handler)
		}
		// Headings in order: one h1, then h2s.
		levels := regexp.MustCompile(`<h([1-6])`).FindAllStringSubmatch(body, -1)
		for i, l := range levels {
			if (i == 0) != (l[1] == "1") || l[1] > "2" {
				t.Errorf("%s: headings out of order: %v", name, levels)
				break
			}
		}
		// Every input but the hidden token has its label.
		for _, in := range regexp.MustCompile(`<input [^>]*>`).FindAllString(body, -1) {
			if strings.Contains(in, `type="hidden"`) {
				continue
			}
			id := regexp.MustCompile(`id="([^"]+)"`).FindStringSubmatch(in)
			if id == nil || !strings.Contains(body, `<label for="`+id[1]+`">`) {
				t.Errorf("%s: %s has no label", name, in)
			}
			if !strings.Contains(in, `autocomplete="new-password"`) {
				t.Errorf("%s: %s is not autocomplete=new-password", name, in)
			}
		}
	}
	if !strings.Contains(pages["error"].Body, `<title>Error: Choose a new password</title>`) {
		t.Errorf("a form with errors does not say so in its title:\n%s", pages["error"].Body)
	}
	if !strings.Contains(pages["error"].Body, `<a href="#confirm">`) {
		t.Errorf("the error summary does not lead to the field:\n%s", pages["error"].Body)
	}
}

// wantPage checks an HTML page's status and, unless "", its heading.
func wantPage(t testing.TB, res answer, status int, heading string) {
	t.Helper()
	if res.Status != status {
		t.Fatalf("status = %d, want %d\n%s", res.Status, status, res.Body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	if heading != "" && !strings.Contains(res.Body, "<h1>"+heading+"</h1>") {
		t.Errorf("no heading %q:\n%s", heading, res.Body)
	}
}

func wantInvalidLink(t testing.TB, res answer) {
	t.Helper()
	wantPage(t, res, http.StatusBadRequest, "This link is invalid or has expired")
	if !strings.Contains(res.Body, "Ask for a new one.") {
		t.Errorf("the page does not say what to do:\n%s", res.Body)
	}
	if strings.Contains(res.Body, "<form") {
		t.Errorf("an invalid link shows a form:\n%s", res.Body)
	}
}

// wantResetForm checks the reset form: the token posted back, and the two
// labelled password inputs.
func wantResetForm(t *testing.T, body, token string) {
	t.Helper()
	for _, want := range []string{
		`<form method="post" action="reset-password">`,
		`<input type="hidden" name="token" value="` + token + `">`,
		`<label for="password">New password</label>`,
		`<label for="confirm">Repeat the new password</label>`,
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("no %s in the form:\n%s", want, body)
		}
	}
}

// wantFieldError checks that field shows message, tied to its input.
func wantFieldError(t *testing.T, body, field, message string) {
	t.Helper()
	errID := field + "-error"
	if !strings.Contains(body, `<p class="error" id="`+errID+`"><span class="visually-hidden">Error:</span> `+message+`</p>`) {
		t.Errorf("no message %q beside %s:\n%s", message, field, body)
	}
	input := regexp.MustCompile(`<input id="` + field + `"[^>]*>`).FindString(body)
	described := regexp.MustCompile(`aria-describedby="([^"]*)"`).FindStringSubmatch(input)
	if described == nil || !strings.Contains(" "+described[1]+" ", " "+errID+" ") || !strings.Contains(input, `aria-invalid="true"`) {
		t.Errorf("the input is not tied to its error: %s", input)
	}
}

// TestStylesheet_blocks_are_closed guards the one stylesheet against a
// rule left open (a merge once cut one in two): a browser then reads the
// rules after it as nested in it, and silently drops them. Blocks open at
// the top level, or inside an at-rule; every one closes.
func TestStylesheet_blocks_are_closed(t *testing.T) {
	t.Parallel()
	css, err := os.ReadFile("assets/style.css")
	if err != nil {
		t.Fatal(err)
	}
	var open []string // the selectors or at-rules of the open blocks
	for i, line := range strings.Split(string(css), "\n") {
		trimmed := strings.TrimSpace(line)
		for _, c := range trimmed {
			switch c {
			case '{':
				if len(open) == 1 && !strings.HasPrefix(open[0], "@") || len(open) > 1 {
					t.Fatalf("line %d: %q opens a block inside the rule %q", i+1, trimmed, open[len(open)-1])
				}
				open = append(open, trimmed)
			case '}':
				if len(open) == 0 {
					t.Fatalf("line %d: } closes no block", i+1)
				}
				open = open[:len(open)-1]
			}
		}
	}
	if len(open) > 0 {
		t.Fatalf("blocks left open at the end: %q", open)
	}
}
