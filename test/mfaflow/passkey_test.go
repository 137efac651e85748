package mfaflow

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"

	"github.com/userd/userd/test/chromium"
	"github.com/userd/userd/test/kit"
)

// passkeyPage is the web app of the test: it signs in with the password
// of the query's email, adds a passkey to the account, then signs in
// with it alone (a discoverable login), as docs/passkeys.md shows, and
// writes what userd answered into #result.
const passkeyPage = `<!doctype html>
<meta charset="utf-8">
<title>userd passkeys</title>
<pre id="result"></pre>
<script>
async function post(path, body, token) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (token) headers.Authorization = "Bearer " + token;
  const res = await fetch(path, { method: "POST", headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function run() {
  const q = new URLSearchParams(location.search);
  const out = {};
  const login = await post("/auth/login", { email: q.get("email"), password: q.get("password") });
  out.login = login.status;
  const token = login.body.accessToken;

  // Add a passkey to the signed-in account: the password proves the
  // person, not the token alone.
  const reg = await post("/api/users/me/passkeys/registration", { currentPassword: q.get("password") }, token);
  out.registrationBegin = reg.status;
  const created = await navigator.credentials.create({
    publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(reg.body.publicKey),
  });
  out.credProps = created.getClientExtensionResults().credProps || null;
  out.registration = await post("/api/users/me/passkeys/registration/finish",
    { ceremonyId: reg.body.ceremonyId, name: "Chromium", credential: created.toJSON() }, token);

  // Sign in with it: no email, no password.
  const auth = await post("/auth/passkey");
  out.loginBegin = auth.status;
  out.allowCredentials = auth.body.publicKey.allowCredentials || [];
  const got = await navigator.credentials.get({
    publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(auth.body.publicKey),
  });
  out.passkeyLogin = await post("/auth/passkey/finish", { ceremonyId: auth.body.ceremonyId, credential: got.toJSON() });
  return out;
}

run().catch((e) => ({ error: e.name + ": " + e.message }))
  .then((out) => { document.getElementById("result").textContent = JSON.stringify(out); });
</script>
`

// pageResult is what the page writes into #result.
type pageResult struct {
	Error             string          `json:"error"`
	Login             int             `json:"login"`
	RegistrationBegin int             `json:"registrationBegin"`
	CredProps         json.RawMessage `json:"credProps"`
	Registration      struct {
		Status int `json:"status"`
		Body   struct {
			ID         string  `json:"id"`
			Name       string  `json:"name"`
			CreatedAt  string  `json:"createdAt"`
			LastUsedAt *string `json:"lastUsedAt"`
		} `json:"body"`
	} `json:"registration"`
	LoginBegin       int   `json:"loginBegin"`
	AllowCredentials []any `json:"allowCredentials"`
	PasskeyLogin     struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	} `json:"passkeyLogin"`
}

// TestPasskeys_in_chromium registers a passkey and signs in with it from
// a page in a real headless Chromium, whose DevTools virtual authenticator
// (CTAP2, internal, resident keys, user verification) stands in for the
// phone or laptop. The page is served by a proxy on http://localhost:P2,
// the origin userd is configured with (USERD_PUBLIC_URL and
// USERD_WEBAUTHN_ORIGINS, rp id localhost), which passes /api and /auth
// on to the binary: the page and userd are one origin, as in a
// deployment behind a reverse proxy, so no CORS is needed.
func TestPasskeys_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)

	// The proxy's address first: userd must know its origin.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://localhost:" + portOf(t, ln.Addr().String())
	n := startUserd(t, map[string]string{
		"USERD_PUBLIC_URL":       origin,
		"USERD_WEBAUTHN_RP_ID":   "localhost",
		"USERD_WEBAUTHN_ORIGINS": origin,
	})
	const email = "passkey@example.com"
	register(t, n.Base, email)

	target, err := url.Parse(n.Base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	mux := http.NewServeMux()
	mux.Handle("/api/", proxy)
	mux.Handle("/auth/", proxy)
	mux.HandleFunc("GET /test.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(passkeyPage)) // the browser reports a short page
	})
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	srv.Start()
	t.Cleanup(srv.Close)

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("userd's log:\n%s", n.Log.String())
		}
	})

	// The authenticator of the tab: a platform authenticator that keeps
	// discoverable credentials and verifies its user.
	id := b.AddVirtualAuthenticator(t)

	q := url.Values{"email": {email}, "password": {userPassword}}
	start := time.Now()
	b.Open(t, origin+"/test.html?"+q.Encode(), http.StatusOK)
	text := b.WaitText(t, "#result")
	t.Logf("the page's ceremonies took %v", time.Since(start).Round(time.Millisecond))
	var res pageResult
	if err := json.Unmarshal([]byte(text), &res); err != nil {
		t.Fatalf("the page's result %s: %v", text, err)
	}
	if res.Error != "" {
		t.Fatalf("the page failed: %s (%s)", res.Error, text)
	}
	if res.Login != http.StatusOK || res.RegistrationBegin != http.StatusOK || res.LoginBegin != http.StatusOK {
		t.Errorf("login %d, registration options %d, login options %d: want 200 each", res.Login, res.RegistrationBegin, res.LoginBegin)
	}
	reg := res.Registration
	if reg.Status != http.StatusCreated || reg.Body.Name != "Chromium" || reg.Body.ID == "" || reg.Body.CreatedAt == "" || reg.Body.LastUsedAt != nil {
		t.Errorf("registration: %d %+v, want 201 with the passkey", reg.Status, reg.Body)
	}
	if string(res.CredProps) != `{"rk":true}` {
		t.Errorf("credProps %s, want a discoverable credential", res.CredProps)
	}
	if len(res.AllowCredentials) != 0 {
		t.Errorf("a discoverable login's options name credentials: %v", res.AllowCredentials)
	}
	var tok kit.Tokens
	if res.PasskeyLogin.Status != http.StatusOK || json.Unmarshal(res.PasskeyLogin.Body, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("passkey login: %d %s, want 200 and tokens", res.PasskeyLogin.Status, res.PasskeyLogin.Body)
	}
	wantSignIn(t, "passkey login", tok.AccessToken, []string{"hwk", "user"}, "aal2")

	// The authenticator holds the one passkey, resident, for localhost,
	// used once since its creation.
	creds := chromium.Call(t, b, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: id})
	if len(creds.Credentials) != 1 {
		t.Fatalf("the authenticator holds %d credentials, want 1", len(creds.Credentials))
	}
	if c := creds.Credentials[0]; !c.IsResidentCredential || c.RpID != "localhost" || c.SignCount < 1 {
		t.Errorf("the credential: resident %v, rp id %q, sign count %v", c.IsResidentCredential, c.RpID, c.SignCount)
	}
	// userd lists it, used.
	var list []struct {
		ID         string  `json:"id"`
		LastUsedAt *string `json:"lastUsedAt"`
	}
	kit.Want(t, "list passkeys", kit.Send(t, http.MethodGet, n.Base+"/api/users/me/passkeys", nil, tok.AccessToken), http.StatusOK, &list)
	if len(list) != 1 || list[0].ID != reg.Body.ID || list[0].LastUsedAt == nil {
		t.Errorf("the account's passkeys: %+v, want the one registered, used", list)
	}
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}
