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
	"github.com/userd/userd/test/totpgen"
	"github.com/userd/userd/test/upstream"
)

// The parts of userd's pages the agent reads: a hidden input, and the
// second step's form.
var (
	hiddenInput = func(name string) *regexp.Regexp {
		return regexp.MustCompile(`<input type="hidden" name="` + name + `" value="([^"]*)">`)
	}
	secondStepForm = regexp.MustCompile(`<form method="post" action="/account/login/code"`)
)

// field is the value of the first hidden input name of a page, failing
// t without one.
func field(t testing.TB, body []byte, name string) string {
	t.Helper()
	m := hiddenInput(name).FindSubmatch(body)
	if m == nil {
		t.Fatalf("the page has no hidden %s:\n%.800s", name, body)
	}
	return html.UnescapeString(string(m[1]))
}

// TestMock_link_after_password_then_second_factor: a person whose email
// has a password account comes through the provider. The provider alone
// does not sign them in: the page asks for the password, prefilled with
// the email, and the sign-in there links the identity. Once the account
// has a second factor, the identity's next sign-in stops at the second
// step (no session yet), which the TOTP code finishes.
func TestMock_link_after_password_then_second_factor(t *testing.T) {
	t.Parallel()
	m := upstream.StartMock(t)
	u := startUserd(t)
	const slug, email = "mock-2fa", "annie@example.com"
	u.addProvider(t, slug, "Mock", m.Issuer, mockClientID, nil)
	owner := kit.Register(t, u.node.Base, "Annie Easley", email, userPassword)
	person := upstream.Claims{Subject: "annie-at-mock", Email: email, EmailVerified: true, Name: "Annie Easley"}

	a := newAgent(t)
	r := a.throughMock(u, m, slug, upstream.OK, person)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `id="link-pending"`) || a.cookie(u.node.Base, consoleCookie) != "" {
		t.Fatalf("the callback for an email with a password account: %d, session %v, want 200 asking for the password, no session:\n%.800s",
			r.Status, a.cookie(u.node.Base, consoleCookie) != "", r.Body)
	}
	if !regexp.MustCompile(`name="email"[^>]*value="` + regexp.QuoteMeta(email) + `"|value="` + regexp.QuoteMeta(email) + `"[^>]*name="email"`).Match(r.Body) {
		t.Errorf("the sign-in form does not have the email %s prefilled:\n%.800s", email, r.Body)
	}
	if ids := u.identities(t, owner.ID, u.admin); len(ids) != 0 {
		t.Fatalf("the identity is linked before the password: %+v", ids)
	}
	signIn := a.send(http.MethodPost, u.node.Base+"/account/login", url.Values{
		"email": {email}, "password": {userPassword}, "next": {field(t, r.Body, "next")}})
	if loc := signIn.Header.Get("Location"); signIn.Status != http.StatusSeeOther || !strings.HasPrefix(loc, "/account/identities") {
		t.Fatalf("the password's sign-in: %d to %q, want 303 to /account/identities:\n%.600s", signIn.Status, loc, signIn.Body)
	}
	if ids := u.identities(t, owner.ID, u.admin); len(ids) != 1 || ids[0].Provider != slug || ids[0].Subject != person.Subject {
		t.Fatalf("the identities after the password: %+v, want the mock's", ids)
	}
	if linked := u.events(t, "identity.linked", slug); len(linked) != 1 || linked[0].SubjectID != owner.ID {
		t.Errorf("identity.linked: %+v, want one of the account", linked)
	}

	// A second factor.
	tok := kit.Login(t, u.node.Base, email, userPassword)
	var enrol struct {
		Secret string `json:"secret"`
	}
	kit.Want(t, "enrol TOTP", u.api(t, http.MethodPost, "/api/users/me/mfa/totp", map[string]string{"currentPassword": userPassword}, tok.AccessToken),
		http.StatusCreated, &enrol)
	now := time.Now()
	kit.Want(t, "confirm TOTP", u.api(t, http.MethodPost, "/api/users/me/mfa/totp/confirm",
		map[string]string{"code": totpgen.MustCode(t, enrol.Secret, now)}, tok.AccessToken), http.StatusOK, nil)

	b := newAgent(t)
	r = b.throughMock(u, m, slug, upstream.OK, person)
	if r.Status != http.StatusOK || !secondStepForm.Match(r.Body) || b.cookie(u.node.Base, consoleCookie) != "" {
		t.Fatalf("the identity's sign-in of an account with a second factor: %d, session %v, want 200 with the second step, no session:\n%.800s",
			r.Status, b.cookie(u.node.Base, consoleCookie) != "", r.Body)
	}
	// The code of the next period: the one of now was spent on the
	// confirmation.
	done := b.send(http.MethodPost, u.node.Base+"/account/login/code", url.Values{
		"next": {field(t, r.Body, "next")}, "mfaToken": {field(t, r.Body, "mfaToken")}, "methods": {field(t, r.Body, "methods")},
		"code": {totpgen.MustCode(t, enrol.Secret, now.Add(30*time.Second))}})
	if done.Status != http.StatusSeeOther && done.Status != http.StatusOK {
		t.Fatalf("the second step: %d, want a session:\n%.600s", done.Status, done.Body)
	}
	if b.cookie(u.node.Base, consoleCookie) == "" {
		t.Fatalf("the second step set no %s: %d\n%.600s", consoleCookie, done.Status, done.Body)
	}
	if home := b.get(u.node.Base + "/account/"); home.Status != http.StatusOK || !strings.Contains(string(home.Body), email) {
		t.Errorf("/account/ after the second step: %d, want 200 showing %s", home.Status, email)
	}
}
