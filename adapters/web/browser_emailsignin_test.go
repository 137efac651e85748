package web_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/chromium"
)

// emailCodeMail delivers what waits and returns the code and the link's
// path of the last sign-in message to email.
func (e *env) emailCodeMail(email string) (code, link string) {
	e.t.Helper()
	mails := e.deliver()
	for _, m := range mails {
		if m.Template == domain.MailEmailSignIn && string(m.To) == email {
			code = m.Data["code"]
		}
	}
	if code == "" {
		e.t.Fatalf("no sign-in message to %s", email)
	}
	return code, e.link(mails, email, domain.MailEmailSignIn)
}

// TestEmailSignIn_in_chromium signs in by email as a person does: "Email
// me a code" on the sign-in form, a wrong code, the right one; then, signed
// out, the magic link's page and its button. Each page passes the kit's
// CheckPage, as TestPages_in_chromium's do.
func TestEmailSignIn_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)
	e := newEnv(t)
	srv := httptest.NewServer(httpapi.New(e.svc, httpapi.Options{Logger: e.log, Pages: e.pages}))
	defer srv.Close()
	e.register("ada@example.com")

	b.Open(t, srv.URL+"/account/login", http.StatusOK)
	b.WantHeading(t, "Sign in")
	b.Do(t, chromedp.SendKeys(chromedp.ID("email"), "ada@example.com"))
	b.Submit(t, chromedp.Click(chromedp.ID("email-code")), http.StatusOK)
	b.WantHeading(t, "Check your email")
	b.CheckPage(t, "account-email-code")
	b.WantFocusVisible(t, "#code")
	code, _ := e.emailCodeMail("ada@example.com")

	wrong := "000000"
	if code == wrong {
		wrong = "000001"
	}
	b.Submit(t, chromedp.SendKeys(chromedp.ID("code"), wrong+"\n"), http.StatusUnauthorized)
	b.WantHeading(t, "Check your email")
	if msg := b.Text(t, "#code-error"); !strings.Contains(msg, "The code is not right") {
		t.Errorf("the field's error reads %q", msg)
	}
	b.CheckPage(t, "account-email-code-error")
	b.Submit(t, chromedp.SendKeys(chromedp.ID("code"), code+"\n"), http.StatusOK)
	b.WantHeading(t, "My account")
	if !e.user("ada@example.com").EmailVerified {
		t.Error("the email is not verified after a sign-in by its code")
	}

	// Signed out, the link of a new message signs the browser in: its
	// GET shows a button, and only the button's POST uses the token.
	b.Submit(t, chromedp.Click(chromedp.CSS(`form.signout button`)), http.StatusOK)
	e.clock.Advance(2 * time.Minute) // the mail budget's minute
	if err := e.svc.EmailSignIn.RequestCode(context.Background(), "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	_, link := e.emailCodeMail("ada@example.com")
	b.Open(t, srv.URL+link, http.StatusOK)
	b.WantHeading(t, "Sign in")
	b.CheckPage(t, "account-magic-link")
	b.Open(t, srv.URL+link, http.StatusOK) // a second GET, as a mail scanner's: nothing used
	b.Submit(t, chromedp.Click(chromedp.CSS(`main form button[type="submit"]`)), http.StatusOK)
	b.WantHeading(t, "My account")

	// Used: the same link again is refused, on the sign-in page.
	b.Open(t, srv.URL+link, http.StatusOK)
	b.Submit(t, chromedp.Click(chromedp.CSS(`main form button[type="submit"]`)), http.StatusUnauthorized)
	b.WantHeading(t, "Sign in")
	b.CheckPage(t, "account-magic-link-invalid")
	b.CheckConsole(t)
}

// The magic link's GET uses nothing: the token still signs in after it.
func TestMagicLink_get_uses_nothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.register("ada@example.com")
	if err := e.svc.EmailSignIn.RequestCode(context.Background(), "ada@example.com"); err != nil {
		t.Fatal(err)
	}
	_, link := e.emailCodeMail("ada@example.com")
	for range 2 {
		rec := httptest.NewRecorder()
		e.pages.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, link, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `action="/account/magic"`) {
			t.Fatalf("GET %s: %d, want 200 and the button's form", link, rec.Code)
		}
	}
	token := strings.TrimPrefix(link, "/account/magic?token=")
	if _, err := e.svc.EmailSignIn.VerifyLink(context.Background(), token); err != nil {
		t.Errorf("the token after two GETs: %v, want it to sign in", err)
	}
	if _, err := e.svc.EmailSignIn.VerifyLink(context.Background(), token); !errors.Is(err, domain.ErrInvalidEmailCode) {
		t.Errorf("the token used twice: %v, want ErrInvalidEmailCode", err)
	}
}

// A sign-in by email that an app's flow began goes on in the flow: by the
// code typed on the page, and by the magic link opened in the same
// browser (MagicNextCookie).
func TestEmailSignIn_continues_an_app_flow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.withFakeProvider()
	e.addUser("ada@example.com", false)
	e.deliver()
	for _, by := range []string{"code", "link"} {
		f.step = application.AuthorizeStep{SignIn: true, ClientName: "Grafana <Ops>"}
		v := e.visitor()
		loc, err := url.Parse(v.get(continuePath).Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		form := v.get(loc.RequestURI())
		if !strings.Contains(form.Body, `id="email-code"`) {
			t.Fatalf("the sign-in page offers no code by email:\n%s", form.Body)
		}
		client := hiddenClient.FindStringSubmatch(form.Body)[1]
		asked := v.post("/account/login/email-code", url.Values{"email": {"ada@example.com"}, "next": {continuePath}, "client": {client}})
		wantPage(t, asked, http.StatusOK, "Check your email")
		if !strings.Contains(asked.Body, "continue to <strong>Grafana") {
			t.Errorf("%s: the code's page does not name the app:\n%s", by, asked.Body)
		}
		if !strings.Contains(asked.Body, `href="/account/login?client=`) {
			t.Errorf("%s: the code's Start again loses the app's flow:\n%s", by, asked.Body)
		}
		code, link := e.emailCodeMail("ada@example.com")
		f.step = application.AuthorizeStep{Location: appLocation, ClientName: "Grafana <Ops>"}
		var done answer
		if by == "code" {
			done = v.post("/account/login/email-code/verify", url.Values{"email": {"ada@example.com"}, "code": {code},
				"next": {continuePath}, "client": {client}})
		} else {
			wantPage(t, v.get(link), http.StatusOK, "Sign in")
			done = v.post(web.MagicLinkPath, url.Values{"token": {strings.TrimPrefix(link, web.MagicLinkPath+"?token=")}})
		}
		wantPage(t, done, http.StatusOK, "Continue to Grafana &lt;Ops&gt;")
		wantOnwardPage(t, done, appLocation)
		if b := f.lastContinue(t).browser; b == nil || b.SessionID == "" || v.cookie == nil {
			t.Errorf("%s: the flow went on without the new session: %+v", by, b)
		}
		if v.magic != nil {
			t.Errorf("%s: the magic link's cookie is left after the sign-in", by)
		}
		e.clock.Advance(2 * time.Minute) // the mail budget's minute
	}
}
