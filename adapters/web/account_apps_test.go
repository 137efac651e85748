package web_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

func TestAccountApps_lists_and_revokes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := e.withFakeProvider()
	e.addUser("ada@example.com", false)
	v := e.visitor()
	v.signIn("/account/", "ada@example.com", custPassword)

	res := v.get("/account/apps")
	wantPage(t, res, http.StatusOK, "Apps with access")
	if !strings.Contains(res.Body, `id="no-apps"`) || !strings.Contains(res.Body, `href="/account/apps" aria-current="page"`) {
		t.Errorf("the empty page:\n%s", res.Body)
	}

	granted := time.Date(2026, 11, 2, 9, 30, 0, 0, time.UTC)
	f.grants = []application.AppAccess{
		{ClientID: "0123456789abcdef01234567", ClientName: "Grafana <Ops>", GrantedAt: granted,
			Scopes: []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeEmail}},
		{ClientID: "89abcdef0123456789abcdef", ClientName: "Wiki", GrantedAt: granted,
			Scopes: []domain.OAuthScope{domain.ScopeOpenID, domain.ScopeOfflineAccess}},
	}
	res = v.get("/account/apps")
	for _, want := range []string{"Grafana &lt;Ops&gt;", "Wiki", "2026-11-02 09:30 UTC",
		"Your email address, and whether it is verified", "Keep access when you are not using the app",
		`action="/account/apps/0123456789abcdef01234567/revoke"`} {
		if !strings.Contains(res.Body, want) {
			t.Errorf("the list lacks %s", want)
		}
	}

	wantRedirect(t, v.post("/account/apps/0123456789abcdef01234567/revoke", url.Values{}), "/account/apps?done=app-revoked")
	if len(f.revoked) != 1 || f.revoked[0] != "0123456789abcdef01234567" {
		t.Errorf("revoked %v", f.revoked)
	}
	res = v.get("/account/apps?done=app-revoked")
	if strings.Contains(res.Body, "Grafana") || !strings.Contains(res.Body, "The app&#39;s access is removed") {
		t.Errorf("after the revoke:\n%s", res.Body)
	}
	wantRedirect(t, v.post("/account/apps/0123456789abcdef01234567/revoke", url.Values{}), "/account/apps?done=app-gone")

	// Signed out: the sign-in page; from another site: refused.
	wantRedirect(t, e.get("/account/apps"), "/account/login?next=%2Faccount%2Fapps")
	wantPage(t, v.post("/account/apps/89abcdef0123456789abcdef/revoke", url.Values{}, withHeader("Sec-Fetch-Site", "cross-site")),
		http.StatusForbidden, "")
	if len(f.revoked) != 1 {
		t.Error("a cross-site form revoked a grant")
	}

	f.grantErr = errors.New("the store broke")
	wantPage(t, v.get("/account/apps"), http.StatusInternalServerError, "Something went wrong")
}

func TestAccountApps_without_the_provider_is_empty(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)
	v := e.visitor()
	v.signIn("/account/", "ada@example.com", custPassword)
	if res := v.get("/account/apps"); res.Status != http.StatusOK || !strings.Contains(res.Body, `id="no-apps"`) {
		t.Errorf("%d\n%s", res.Status, res.Body)
	}
}
