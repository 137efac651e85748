package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/userd/userd/adapters/web"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// fakeProvider plays the OpenID provider for the pages: each method
// answers what the test set, and the browsers it was given are kept.
type fakeProvider struct {
	mu       sync.Mutex
	step     application.AuthorizeStep
	stepErr  error
	consent  application.AuthorizeStep
	endRes   application.EndSessionResult
	endErr   error
	grants   []application.AppAccess
	grantErr error

	continued []continueCall
	consented []consentCall
	ended     []application.EndSessionInput
	revoked   []string
}

type continueCall struct {
	id      string
	browser *application.BrowserSession
}

type consentCall struct {
	id      string
	browser application.BrowserSession
	allow   bool
}

func (f *fakeProvider) Continue(_ context.Context, id string, b *application.BrowserSession) (application.AuthorizeStep, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.continued = append(f.continued, continueCall{id, b})
	return f.step, f.stepErr
}

func (f *fakeProvider) Consent(_ context.Context, id string, b application.BrowserSession, allow bool) (application.AuthorizeStep, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.consented = append(f.consented, consentCall{id, b, allow})
	return f.consent, f.stepErr
}

func (f *fakeProvider) EndSession(_ context.Context, in application.EndSessionInput) (application.EndSessionResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = append(f.ended, in)
	return f.endRes, f.endErr
}

func (f *fakeProvider) Grants(context.Context, *domain.Principal) ([]application.AppAccess, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.grants, f.grantErr
}

func (f *fakeProvider) RevokeGrant(_ context.Context, _ *domain.Principal, clientID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, g := range f.grants {
		if string(g.ClientID) == clientID {
			f.grants = append(f.grants[:i:i], f.grants[i+1:]...)
			f.revoked = append(f.revoked, clientID)
			return nil
		}
	}
	return domain.ErrGrantNotFound
}

// lastContinue is the browser the last Continue was given.
func (f *fakeProvider) lastContinue(t testing.TB) continueCall {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.continued) == 0 {
		t.Fatal("Continue was not called")
	}
	return f.continued[len(f.continued)-1]
}

// withFakeProvider gives the env's pages a fake provider.
func (e *env) withFakeProvider() *fakeProvider {
	f := &fakeProvider{}
	pages, ok := e.pages.(*web.Pages)
	if !ok {
		e.t.Fatal("the pages are not *web.Pages")
	}
	pages.SetProvider(f)
	return f
}

// requestID is a well-formed id of an authorization request (43
// base64url characters, as domain.NewAuthRequestID makes them).
const requestID = "Vq3sB0l9r3Yw1xq2H0n8d7K6m5J4h3G2f1E0d9C8b7A"

// continuePath is the flow's page of requestID.
var continuePath = web.AuthorizeContinuePath + "?request=" + requestID

// cookieOf is the cookie name of an answer, nil when it sets none.
func cookieOf(a answer, name string) *http.Cookie {
	var out *http.Cookie
	for _, c := range (&http.Response{Header: a.Header}).Cookies() {
		if c.Name == name {
			out = c
		}
	}
	return out
}

// wantCleared checks that a clears the cookie name.
func wantCleared(t testing.TB, a answer, name string) {
	t.Helper()
	c := cookieOf(a, name)
	if c == nil || c.MaxAge >= 0 || c.Value != "" {
		t.Errorf("%s is not cleared: %v", name, c)
	}
}

// recordAnswer serves one GET with h, outside the pages' router.
func recordAnswer(t testing.TB, h http.HandlerFunc) answer {
	t.Helper()
	rec := httptest.NewRecorder()
	h(rec, httptest.NewRequest(http.MethodGet, "/oauth2/authorize?client_id=x", nil))
	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{Status: res.StatusCode, Header: res.Header, Body: string(body)}
}
