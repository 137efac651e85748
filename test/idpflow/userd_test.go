package idpflow

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"

	"github.com/userd/userd/test/chromium"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// userdFederatesToUserd: one userd (A) signs people in
// through another (B), an OpenID provider on http://localhost:<port>:
// B's admin registers A as a client whose redirect URI is A's callback,
// A's admin registers B as a provider of kind oidc. A person of B (a
// password account, its email verified) signs in at A in Chromium
// through B's sign-in and consent pages, and gets an account at A.
func userdFederatesToUserd(t *testing.T, b *chromium.Browser) {
	a := startUserd(t)
	addrB := userdproc.FreeAddr(t)
	_, portB, err := net.SplitHostPort(addrB)
	if err != nil {
		t.Fatal(err)
	}
	up := startUserd(t, map[string]string{"USERD_HTTP_ADDR": addrB, "USERD_PUBLIC_URL": "http://localhost:" + portB})

	const email = "dorothy@example.com"
	person := kit.Register(t, up.node.Base, "Dorothy Vaughan", email, userPassword)
	kit.Want(t, "verify the email at B", up.api(t, http.MethodPut, "/api/users/"+person.ID,
		map[string]any{"emailVerified": true}, up.admin), http.StatusOK, nil)
	var c app
	kit.Want(t, "register A at B", up.api(t, http.MethodPost, "/api/oauth-clients", map[string]any{
		"name": "Userd A", "type": "confidential", "redirectUris": []string{a.callback("userd-b")},
		"grantTypes": []string{"authorization_code"}}, up.admin), http.StatusCreated, &c)
	a.addProvider(t, "userd-b", "Userd B", up.url, c.ID, map[string]any{"clientSecret": c.Secret})

	chromium.Call(t, b, network.ClearBrowserCookies, struct{}{})
	d := driver{b: b, up: up.url, login: email, password: userPassword}
	pages, _ := d.through(t, clickProvider(t, b, a, "/account/login", "userd-b", "Userd B"))
	if !slices.Contains(pages, pageUserdLogin) || !slices.Contains(pages, pageConsent) {
		t.Errorf("the browser met the pages %v, want B's sign-in and consent", pages)
	}
	if p := path(t, b); p != "/account/" {
		t.Fatalf("the browser ended on %s, want /account/ of A: %s", p, b.Eval(t, "document.body.innerText"))
	}
	if shown := b.Text(t, "#profile-email"); !strings.Contains(shown, email) {
		t.Errorf("A's account page shows %q, want %s", shown, email)
	}
	made := a.userByEmail(t, email)
	ids := a.identities(t, made.ID, a.admin)
	if !made.EmailVerified || len(ids) != 1 || ids[0].Provider != "userd-b" || ids[0].Subject == "" || ids[0].Email != email {
		t.Errorf("A's account %+v with the identities %+v, want the email verified and B's identity", made, ids)
	}
}
