package mfaflow

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
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

  // Add a passkey to the signed-in account.
  const reg = await post("/api/users/me/passkeys/registration", undefined, token);
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
	bin := tool(t, "chromium", "chromium")

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

	ctx := startBrowser(t, bin)
	step := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 30*time.Second) }

	// The authenticator of the tab: a platform authenticator that keeps
	// discoverable credentials and verifies its user.
	sctx, cancel := step()
	defer cancel()
	if _, err := chromedp.Call(sctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn.enable: %v", err)
	}
	va, err := chromedp.Call(sctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
		Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol:                    webauthn.AuthenticatorProtocolCtap2,
			Ctap2version:                webauthn.Ctap2versionCtap21,
			Transport:                   webauthn.AuthenticatorTransportInternal,
			HasResidentKey:              true,
			HasUserVerification:         true,
			IsUserVerified:              true,
			AutomaticPresenceSimulation: true, // the field has no omitempty: false would leave every ceremony waiting for a touch
		}})
	if err != nil {
		t.Fatalf("WebAuthn.addVirtualAuthenticator: %v", err)
	}

	q := url.Values{"email": {email}, "password": {userPassword}}
	start := time.Now()
	if err := chromedp.Do(sctx, chromedp.Navigate(origin+"/test.html?"+q.Encode())); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	text, err := readResult(sctx)
	if err != nil {
		t.Fatalf("the page's result: %v; userd's log:\n%s", err, n.Log.String())
	}
	t.Logf("the page's ceremonies took %v", time.Since(start).Round(time.Millisecond))
	var res pageResult
	if err := json.Unmarshal([]byte(text), &res); err != nil {
		t.Fatalf("the page's result %s: %v", text, err)
	}
	if res.Error != "" {
		t.Fatalf("the page failed: %s (%s); userd's log:\n%s", res.Error, text, n.Log.String())
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
	var tok tokens
	if res.PasskeyLogin.Status != http.StatusOK || json.Unmarshal(res.PasskeyLogin.Body, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("passkey login: %d %s, want 200 and tokens", res.PasskeyLogin.Status, res.PasskeyLogin.Body)
	}
	wantSignIn(t, "passkey login", tok.AccessToken, []string{"hwk", "user"}, "aal2")

	// The authenticator holds the one passkey, resident, for localhost,
	// used once since its creation.
	id := va.AuthenticatorID
	creds, err := chromedp.Call(sctx, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: id})
	if err != nil {
		t.Fatalf("WebAuthn.getCredentials: %v", err)
	}
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
	want(t, "list passkeys", send(t, http.MethodGet, n.Base+"/api/users/me/passkeys", nil, tok.AccessToken), http.StatusOK, &list)
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

// startBrowser starts a headless Chromium with a fresh profile, with the
// options of adapters/web's browser test, and returns the context of its
// tab.
func startBrowser(t *testing.T, bin string) context.Context {
	t.Helper()
	profile, err := os.MkdirTemp("", "userd-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// Best effort: a browser helper may still be writing into it.
	t.Cleanup(func() { _ = os.RemoveAll(profile) })
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(profile),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true),
		// Only the test's servers resolve: nothing may come from the network.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	// The first call starts the browser, bound to the context it gets: ctx
	// itself, without a deadline, bounded here by a timer instead; the
	// cleanup above ends the browser if it hangs.
	start := time.Now()
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx, chromedp.Navigate("about:blank")) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start chromium: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("chromium did not start in 60 s")
	}
	t.Logf("chromium started in %v", time.Since(start).Round(time.Millisecond))
	return ctx
}

// readResult waits for the test page's #result element to hold text and
// returns it. The element is found in the DOM first, not by a script: a
// script evaluated while the new page replaces about:blank can find its
// execution context gone ("Cannot find context with specified id",
// seen in CI), and is then evaluated again.
func readResult(ctx context.Context) (string, error) {
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS("#result"))); err != nil {
		return "", err
	}
	var (
		text string
		err  error
	)
	for range 3 {
		text, err = chromedp.Run(ctx, chromedp.Poll[string](
			`document.getElementById("result").textContent || false`,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(25*time.Second)))
		if err == nil || !strings.Contains(err.Error(), "Cannot find context") {
			break
		}
	}
	return text, err
}
