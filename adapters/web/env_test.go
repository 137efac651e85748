package web_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/logbuf"
)

// custPassword is the password of the accounts the tests register; none of
// the passwords here is on the common-password list unless a test says so.
const custPassword = "customer-Passphrase-7"

// env is the application over the in-memory adapters, a mailer that keeps
// what it is given, and the pages over both.
type env struct {
	t      testing.TB
	clock  *clock.Manual
	box    *secretbox.Box
	svc    *application.Services
	store  *memory.Store
	codec  ports.RefreshTokenCodec
	mailer *memory.Mailer
	logs   *logbuf.Buffer
	log    *slog.Logger
	pages  http.Handler
	// upstream stands for the identity providers.
	upstream *kit.Upstream
}

// envSettings are what envOptions change.
type envSettings struct {
	store     *memory.Store
	deps      *application.Deps
	cfg       *application.Config
	noConsole bool
}

type envOption func(*envSettings)

// withoutConsole leaves the admin console off (USERD_ADMIN_CONSOLE=false).
func withoutConsole(s *envSettings) { s.noConsole = true }

// withPurger gives housekeeping the store's purger.
func withPurger(s *envSettings) { s.deps.Stores.Purger = memory.NewPurger(s.store, nil) }

// withCurrentPasswordRequired turns USERD_REQUIRE_CURRENT_PASSWORD on.
func withCurrentPasswordRequired(s *envSettings) { s.cfg.RequireCurrentPassword = true }

// withLinks puts wrap in front of the link-token store.
func withLinks(wrap func(ports.LinkTokenStore) ports.LinkTokenStore) envOption {
	return func(s *envSettings) { s.deps.Stores.Links = wrap(s.deps.Stores.Links) }
}

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	return newEnvOver(t, kit.AppParts{}, opts...)
}

// newEnvOver is newEnv over the kit's application of parts (an audit log
// of its own added).
func newEnvOver(t testing.TB, parts kit.AppParts, opts ...envOption) *env {
	t.Helper()
	logs := &logbuf.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	parts.Audit = memory.NewAuditLog()
	app := kit.NewApp(t, parts)
	app.Deps.Log = log
	// A refresh token presented twice is a reuse at once.
	app.Config.RefreshReuseGrace = 0
	settings := envSettings{store: app.Store, deps: &app.Deps, cfg: &app.Config}
	for _, o := range opts {
		o(&settings)
	}
	svc := app.Services(t)
	return &env{t: t, clock: app.Clock, box: app.Box, svc: svc, store: app.Store, codec: app.Codec, mailer: app.Mailer,
		logs: logs, log: log, upstream: app.Upstream,
		pages: web.New(svc, web.Options{Logger: log, Box: app.Box, Clock: app.Clock, AdminConsole: !settings.noConsole})}
}

// deliver runs the sender until the outbox has nothing due, and returns
// the messages it sent meanwhile.
func (e *env) deliver() []domain.Mail {
	e.t.Helper()
	before := len(e.mailer.Sent())
	for range 20 {
		n, err := e.svc.Delivery.RunOnce(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		if n == 0 {
			return e.mailer.Sent()[before:]
		}
	}
	e.t.Fatal("the outbox never emptied")
	return nil
}

// link returns the path and query of the link of the one message sent to
// email with template.
func (e *env) link(mails []domain.Mail, email string, template domain.MailTemplate) string {
	e.t.Helper()
	for _, m := range mails {
		if string(m.To) == email && m.Template == template {
			u, err := url.Parse(m.Data["link"])
			if err != nil {
				e.t.Fatalf("link %q: %v", m.Data["link"], err)
			}
			return u.RequestURI()
		}
	}
	e.t.Fatalf("no %s message to %s among %d", template, email, len(mails))
	return ""
}

// register creates an account through the open registration and returns
// the path of its verification link.
func (e *env) register(email string) string {
	e.t.Helper()
	_, err := e.svc.Users.Register(context.Background(), nil, application.RegisterInput{
		Name: "Ada", Email: email, Password: custPassword})
	if err != nil {
		e.t.Fatalf("register %s: %v", email, err)
	}
	return e.link(e.deliver(), email, domain.MailVerifyEmail)
}

// requestReset asks for a reset link for email and returns its path.
func (e *env) requestReset(email string) string {
	e.t.Helper()
	if err := e.svc.Mail.RequestPasswordReset(context.Background(), email); err != nil {
		e.t.Fatal(err)
	}
	return e.link(e.deliver(), email, domain.MailResetPassword)
}

// user returns the account with email.
func (e *env) user(email string) domain.User {
	e.t.Helper()
	u, err := e.store.Users().ByEmail(context.Background(), domain.Email(email))
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

// canLogin reports whether email signs in with password.
func (e *env) canLogin(email, password string) bool {
	e.t.Helper()
	_, err := e.svc.Auth.Login(context.Background(), application.LoginInput{Email: email, Password: password})
	if err != nil && !errors.Is(err, domain.ErrInvalidCredentials) {
		e.t.Fatalf("login %s: %v", email, err)
	}
	return err == nil
}

// answer is a recorded response.
type answer struct {
	Status int
	Header http.Header
	Body   string
}

type reqOption func(*http.Request)

func withHeader(k, v string) reqOption { return func(r *http.Request) { r.Header.Set(k, v) } }

// get sends a GET to the pages.
func (e *env) get(target string, opts ...reqOption) answer {
	e.t.Helper()
	return e.send(httptest.NewRequest(http.MethodGet, target, nil), opts...)
}

// post sends form to path as a browser on the same origin does.
func (e *env) post(path string, form url.Values, opts ...reqOption) answer {
	e.t.Helper()
	return e.postRaw(path, form.Encode(), opts...)
}

func (e *env) postRaw(path, body string, opts ...reqOption) answer {
	e.t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set("Origin", "http://"+r.Host)
	return e.send(r, opts...)
}

// send serves r and checks the headers that every answer of the pages
// carries.
func (e *env) send(r *http.Request, opts ...reqOption) answer {
	e.t.Helper()
	for _, o := range opts {
		o(r)
	}
	rec := httptest.NewRecorder()
	e.pages.ServeHTTP(rec, r)
	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	a := answer{Status: res.StatusCode, Header: res.Header, Body: string(body)}
	checkPageHeaders(e.t, r.Method+" "+r.URL.Path, a)
	return a
}

// wantHeaders are the headers of every answer of the pages.
var wantHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
	"Referrer-Policy":         "no-referrer",
	"X-Content-Type-Options":  "nosniff",
	"X-Frame-Options":         "DENY",
}

// consolePolicy is the Content-Security-Policy of a page of the console
// or the account page: scripts by a nonce of the answer alone (128 bits,
// base64), nothing inline without it, no eval, nothing from elsewhere.
var consolePolicy = regexp.MustCompile(`^default-src 'none'; script-src 'nonce-[A-Za-z0-9_-]{22}'; ` +
	`style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'$`)

func checkPageHeaders(t testing.TB, what string, a answer) {
	t.Helper()
	for k, want := range wantHeaders {
		got := a.Header.Values(k)
		if k == "Content-Security-Policy" && len(got) == 1 && consolePolicy.MatchString(got[0]) {
			continue
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s → %d: %s = %q, want %q", what, a.Status, k, got, want)
		}
	}
	if strings.HasPrefix(a.Header.Get("Content-Type"), "text/html") {
		if cc := a.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s → %d: Cache-Control = %q, want no-store", what, a.Status, cc)
		}
	}
}

// tokenOf is the token of a link's path.
func tokenOf(t testing.TB, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("token")
}
