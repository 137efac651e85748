package idpflow

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/upstream"
)

// mockClientID is userd's client at the mock provider, which takes any.
const mockClientID = "userd-at-the-mock"

// TestMock_sign_in_and_refusals: userd against oauth2-mock-server, a
// provider that misbehaves when told to, through an agent of plain HTTP.
// Each case has a provider of its own at userd (all with the mock as
// issuer), so that its audit events are its own and the cases run at
// once. A good flow signs in (an account made for an unknown person with
// a verified email, found again by the second flow); every bad one ends
// in a page of 400 or 403, an audit event idp.sign_in_refused with its
// reason, no account and no session.
func TestMock_sign_in_and_refusals(t *testing.T) {
	t.Parallel()
	m := upstream.StartMock(t)
	u := startUserd(t)

	t.Run("first_and_second_sign_in", func(t *testing.T) {
		t.Parallel()
		const slug = "mock-ok"
		u.addProvider(t, slug, "Mock", m.Issuer, mockClientID, nil)
		person := upstream.Claims{Subject: "mock-ok-1", Email: "katherine@example.com", EmailVerified: true, Name: "Katherine Johnson"}
		a := newAgent(t)
		a.wantSignedIn(u, a.throughMock(u, m, slug, upstream.OK, person), "/account/", person.Email)
		if a.cookie(u.node.Base, idpCookie) != "" {
			t.Errorf("%s is still held after the callback", idpCookie)
		}
		created := u.userByEmail(t, person.Email)
		if !created.EmailVerified || created.Name != person.Name {
			t.Errorf("the account made by the first sign-in: %+v, want the email verified and the name %q", created, person.Name)
		}
		ids := u.identities(t, created.ID, u.admin)
		if len(ids) != 1 || ids[0].Provider != slug || ids[0].Subject != person.Subject || ids[0].Email != person.Email || ids[0].LinkedAt == "" {
			t.Fatalf("the identities of the new account: %+v, want the one of %s", ids, slug)
		}
		// The account has no password: the password sign-in refuses it.
		if r := u.api(t, http.MethodPost, "/auth/login", map[string]string{"email": person.Email, "password": userPassword}, ""); r.Status == http.StatusOK {
			t.Errorf("a password signs in the account the provider made: %s", r)
		}

		again := newAgent(t)
		again.wantSignedIn(u, again.throughMock(u, m, slug, upstream.OK, person), "/account/", person.Email)
		if n := len(u.usersByEmail(t, person.Email)); n != 1 {
			t.Errorf("%d accounts of %s after the second sign-in, want 1", n, person.Email)
		}
		if ids := u.identities(t, created.ID, u.admin); len(ids) != 1 || ids[0].LastUsedAt == "" {
			t.Errorf("the identities after the second sign-in: %+v, want one, used", ids)
		}
		if linked := u.events(t, "identity.linked", slug); len(linked) != 1 || linked[0].SubjectID != created.ID {
			t.Errorf("identity.linked of %s: %+v, want one, of the new account", slug, linked)
		}
		if in := u.events(t, "idp.sign_in", slug); len(in) != 2 || in[0].SubjectID != created.ID {
			t.Errorf("idp.sign_in of %s: %+v, want two, of the new account", slug, in)
		}
	})

	// The flows the provider spoils: each with the reason of its audit
	// event and the status of its page.
	for _, c := range []struct {
		name, reason string
		fault        upstream.Case
		verified     bool
		provider     map[string]any
		status       []int
	}{
		{"provider_error", "provider_error", upstream.ProviderError, true, nil, []int{http.StatusBadRequest}},
		{"wrong_nonce", "nonce_mismatch", upstream.WrongNonce, true, nil, []int{http.StatusBadRequest}},
		{"wrong_issuer", "issuer_mismatch", upstream.WrongIssuer, true, nil, []int{http.StatusBadRequest}},
		{"wrong_audience", "audience_mismatch", upstream.WrongAudience, true, nil, []int{http.StatusBadRequest}},
		{"expired", "token_expired", upstream.Expired, true, nil, []int{http.StatusBadRequest}},
		{"foreign_key", "invalid_signature", upstream.ForeignKey, true, nil, []int{http.StatusBadRequest}},
		// The contract's 400 for a failed check, or the 403 of a person
		// refused: either says no.
		{"email_unverified", "email_unverified", upstream.OK, false, nil, []int{http.StatusBadRequest, http.StatusForbidden}},
		{"domain_not_allowed", "domain_not_allowed", upstream.OK, true, map[string]any{"allowedDomains": []string{"example.org"}}, []int{http.StatusForbidden}},
		{"auto_create_off", "auto_create_off", upstream.OK, true, map[string]any{"autoCreate": false}, []int{http.StatusForbidden}},
		// A provider whose email_verified is not taken: every email is
		// unverified.
		{"email_verified_not_trusted", "email_unverified", upstream.OK, true, map[string]any{"trustEmailVerified": false},
			[]int{http.StatusBadRequest, http.StatusForbidden}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			slug := "mock-" + strings.ReplaceAll(c.name, "_", "-")
			u.addProvider(t, slug, "Mock", m.Issuer, mockClientID, c.provider)
			person := upstream.Claims{Subject: slug + "-1", Email: slug + "@example.com", EmailVerified: c.verified, Name: "Refused Person"}
			a := newAgent(t)
			r := a.throughMock(u, m, slug, c.fault, person)
			wantRefusedPage(t, r, c.status...)
			a.wantNoSession(u)
			u.wantRefusal(t, slug, c.reason)
			if n := len(u.usersByEmail(t, person.Email)); n != 0 {
				t.Errorf("%d accounts of %s after a refused flow, want none", n, person.Email)
			}
		})
	}

	// next is a path of userd's: anything else ends on the account page.
	t.Run("next_elsewhere_falls_back", func(t *testing.T) {
		t.Parallel()
		const slug = "mock-next"
		u.addProvider(t, slug, "Mock", m.Issuer, mockClientID, nil)
		for i, next := range []string{"https://elsewhere.example/", "//elsewhere.example/account/", "/account/sessions"} {
			person := upstream.Claims{Subject: slug + "-" + strconv.Itoa(i), Email: slug + strconv.Itoa(i) + "@example.com", EmailVerified: true}
			want := "/account/"
			if strings.HasPrefix(next, "/account/") {
				want = next
			}
			a := newAgent(t)
			a.wantSignedIn(u, a.throughMockTo(u, m, slug, next, upstream.OK, person), want, person.Email)
		}
	})

	// The browser's side of the flow does not match its callback.
	t.Run("state_mismatch", func(t *testing.T) {
		t.Parallel()
		const slug = "mock-state"
		u.addProvider(t, slug, "Mock", m.Issuer, mockClientID, nil)
		person := upstream.Claims{Subject: "mock-state-1", Email: "state@example.com", EmailVerified: true}
		for _, c := range []struct {
			name string
			back func(t *testing.T, a *agent) string // the callback's path and query
		}{
			{"no_cookie", func(t *testing.T, a *agent) string {
				auth := a.start(u, slug, "/account/")
				m.Expect(t, auth.Query().Get("state"), upstream.OK, person)
				back := a.authorize(auth)
				delete(a.jar[u.node.Addr], idpCookie)
				return back.RequestURI()
			}},
			{"foreign_state", func(t *testing.T, a *agent) string {
				auth := a.start(u, slug, "/account/")
				m.Expect(t, auth.Query().Get("state"), upstream.OK, person)
				back := a.authorize(auth)
				q := back.Query()
				q.Set("state", "st-of-another-flow")
				back.RawQuery = q.Encode()
				return back.RequestURI()
			}},
			{"cookie_of_another_flow", func(t *testing.T, a *agent) string {
				first := a.start(u, slug, "/account/")
				a.start(u, slug, "/account/") // its cookie replaces the first's
				m.Expect(t, first.Query().Get("state"), upstream.OK, person)
				return a.authorize(first).RequestURI()
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				a := newAgent(t)
				r := a.get(u.node.Base + c.back(t, a))
				wantRefusedPage(t, r, http.StatusBadRequest)
				a.wantNoSession(u)
				u.wantRefusal(t, slug, "state_mismatch")
			})
		}
		if n := len(u.usersByEmail(t, person.Email)); n != 0 {
			t.Errorf("%d accounts of %s after refused flows, want none", n, person.Email)
		}
	})

	t.Run("unknown_or_disabled_provider", func(t *testing.T) {
		t.Parallel()
		const slug = "mock-off"
		u.addProvider(t, slug, "Mock Off", m.Issuer, mockClientID, map[string]any{"enabled": false})
		u.addProvider(t, "mock-on", "Mock On", m.Issuer, mockClientID, nil)
		// Both sign-in pages have the button of an enabled provider, and
		// none of a disabled one.
		for _, page := range []string{"/account/login", "/admin/login"} {
			r := newAgent(t).get(u.node.Base + page)
			body := string(r.Body)
			if r.Status != http.StatusOK || !regexp.MustCompile(`<a [^>]*data-idp="mock-on" href="/auth/idp/mock-on/start[^"]*">Sign in with Mock On</a>`).MatchString(body) {
				t.Errorf("%s: %d without the button of mock-on:\n%.1200s", page, r.Status, body)
			}
			if strings.Contains(body, `data-idp="mock-off"`) || strings.Contains(body, "Mock Off") {
				t.Errorf("%s shows the disabled provider", page)
			}
		}
		for _, s := range []string{"mock-off", "no-such-provider"} {
			a := newAgent(t)
			r := a.get(u.node.Base + "/auth/idp/" + s + "/start?" + url.Values{"next": {"/account/"}}.Encode())
			if r.Status != http.StatusNotFound || a.cookie(u.node.Base, idpCookie) != "" {
				t.Errorf("the start of %s: %d, cookie %q, want a 404 page and no flow", s, r.Status, a.cookie(u.node.Base, idpCookie))
			}
		}
	})
}

// wantRefusedPage fails t unless r is an HTML page of one of the
// statuses that sets no session cookie.
func wantRefusedPage(t *testing.T, reply kit.Reply, status ...int) {
	t.Helper()
	ok := false
	for _, s := range status {
		ok = ok || reply.Status == s
	}
	if !ok || !strings.HasPrefix(reply.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("the callback: %d %s, want an HTML page of %v:\n%.600s", reply.Status, reply.Header.Get("Content-Type"), status, reply.Body)
	}
	for _, c := range (&http.Response{Header: reply.Header}).Cookies() {
		if (c.Name == consoleCookie || c.Name == ssoCookie) && c.MaxAge >= 0 && c.Value != "" {
			t.Errorf("a refused flow set %s", c.Name)
		}
	}
}
