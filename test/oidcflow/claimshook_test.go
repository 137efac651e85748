package oidcflow

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/userd/userd/test/chromium"
)

// TestOpenIDClient_ID_token_carries_the_hook_claims_in_chromium:
// openid-client, which checks the ID token itself, reads the claim the
// claims hook added in the ID token of the code flow and of its refresh,
// against the real binary whose USERD_CLAIMS_HOOK_URL is a receiver
// here that checks the signature with the Standard Webhooks library.
func TestOpenIDClient_ID_token_carries_the_hook_claims_in_chromium(t *testing.T) {
	t.Parallel()
	nodeModules(t, "openid-client")
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("oidcflow-claims-hook-secret-0123"))
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("claims hook request: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"claims":{"tenant":"acme"}}`)
	}))
	t.Cleanup(hook.Close)

	b := chromium.Start(t)
	p := startProvider(t, map[string]string{"USERD_CLAIMS_HOOK_URL": hook.URL + "/claims", "USERD_CLAIMS_HOOK_SECRET": secret})
	const email = "ada@example.com"
	p.register(t, "Ada Lovelace", email)
	cb := newCallback(t)
	web := p.newClient(t, "Analytical Engine", nil)
	s := startScript(t, "rp.mjs", map[string]string{"issuer": p.issuer, "clientId": web.ID, "clientSecret": web.Secret,
		"clientAuth": "basic", "alg": "RS256", "redirectUri": cb.uri, "scope": "openid email offline_access"}, "openid-client")
	var start struct {
		URL string `json:"url"`
	}
	s.recv("authorize", &start)
	back, _ := browserFlow(t, b, cb, start.URL, email)
	s.send(map[string]string{"callback": back})
	var r rpResult
	s.recv("result", &r)
	if r.Claims["tenant"] != "acme" || r.Claims["email"] != email {
		t.Errorf("the ID token's claims %v, want tenant acme beside userd's", r.Claims)
	}
	if r.Refresh.Claims["tenant"] != "acme" {
		t.Errorf("the refreshed ID token's claims %v, want tenant acme", r.Refresh.Claims)
	}
	b.CheckConsole(t)
}
