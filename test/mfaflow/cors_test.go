package mfaflow

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/userd/userd/test/chromium"
)

// corsPage is a web app on another origin than userd's. With ?mode=app it
// signs in with fetch(..., {credentials: 'include'}), refreshes through
// the cookie alone (no body), reads /api/users/me with the new access
// token and signs out; with ?mode=blocked it only tries to sign in, which
// the browser must block. It writes what it saw into #result.
const corsPage = `<!doctype html>
<meta charset="utf-8">
<title>userd from another origin</title>
<pre id="result"></pre>
<script>
const q = new URLSearchParams(location.search);
const base = q.get("userd");

async function call(method, path, body, token) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (token) headers.Authorization = "Bearer " + token;
  const res = await fetch(base + path, {
    method, headers, credentials: "include",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, requestId: res.headers.get("X-Request-Id") };
}

async function app() {
  const out = {};
  const login = await call("POST", "/auth/login", { email: q.get("email"), password: q.get("password") });
  out.login = { status: login.status, refreshTokenInBody: "refreshToken" in (login.body || {}), requestId: login.requestId };
  const refresh = await call("POST", "/auth/refresh-token");
  out.refresh = { status: refresh.status, refreshTokenInBody: "refreshToken" in (refresh.body || {}),
    newAccessToken: !!refresh.body && refresh.body.accessToken !== login.body.accessToken };
  const me = await call("GET", "/api/users/me", undefined, refresh.body.accessToken);
  out.me = { status: me.status, email: me.body && me.body.email };
  out.cookieVisible = document.cookie.includes("userd_refresh");
  out.logout = (await call("POST", "/auth/logout")).status;
  out.refreshAfterLogout = (await call("POST", "/auth/refresh-token")).status;
  return out;
}

async function blocked() {
  try {
    const r = await call("POST", "/auth/login", { email: q.get("email"), password: q.get("password") });
    return { notBlocked: r.status };
  } catch (e) {
    return { error: e.name };
  }
}

(q.get("mode") === "app" ? app() : blocked())
  .catch((e) => ({ failed: e.name + ": " + e.message }))
  .then((out) => { document.getElementById("result").textContent = JSON.stringify(out); });
</script>
`

// TestCORS_and_refresh_cookie_in_chromium runs the real binary with
// USERD_CORS_ALLOWED_ORIGINS=http://localhost:P2 and
// USERD_REFRESH_COOKIE=true at http://localhost:P1, and loads corsPage in
// a headless Chromium from http://localhost:P2 (listed: it signs in,
// refreshes through the HttpOnly __Host- cookie, reads its account and
// signs out) and from http://127.0.0.1:P3 (not listed: the browser
// blocks the request, and the page sees a TypeError). Chromium accepts a
// Secure cookie from http://localhost, a potentially trustworthy origin,
// which is what makes the __Host- prefix usable in development.
func TestCORS_and_refresh_cookie_in_chromium(t *testing.T) {
	t.Parallel()
	b := chromium.Start(t)

	listed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unlisted, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	appOrigin := "http://localhost:" + portOf(t, listed.Addr().String())
	n := startUserd(t, map[string]string{
		"USERD_CORS_ALLOWED_ORIGINS": appOrigin,
		"USERD_REFRESH_COOKIE":       "true",
	})
	const email = "browser@example.com"
	register(t, n.Base, email)
	userdURL := "http://localhost:" + portOf(t, n.Addr)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /app.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(corsPage)) // the browser reports a short page
	})
	for _, ln := range []net.Listener{listed, unlisted} {
		srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
		srv.Start()
		t.Cleanup(srv.Close)
	}

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("userd's log:\n%s", n.Log.String())
		}
	})
	open := func(origin, mode string) string {
		t.Helper()
		q := url.Values{"userd": {userdURL}, "mode": {mode}, "email": {email}, "password": {userPassword}}
		b.Open(t, origin+"/app.html?"+q.Encode(), http.StatusOK)
		return b.WaitText(t, "#result")
	}

	text := open(appOrigin, "app")
	var app struct {
		Failed string `json:"failed"`
		Login  struct {
			Status             int    `json:"status"`
			RefreshTokenInBody bool   `json:"refreshTokenInBody"`
			RequestID          string `json:"requestId"`
		} `json:"login"`
		Refresh struct {
			Status             int  `json:"status"`
			RefreshTokenInBody bool `json:"refreshTokenInBody"`
			NewAccessToken     bool `json:"newAccessToken"`
		} `json:"refresh"`
		Me struct {
			Status int    `json:"status"`
			Email  string `json:"email"`
		} `json:"me"`
		CookieVisible      bool `json:"cookieVisible"`
		Logout             int  `json:"logout"`
		RefreshAfterLogout int  `json:"refreshAfterLogout"`
	}
	if err := json.Unmarshal([]byte(text), &app); err != nil {
		t.Fatalf("the page's result %s: %v", text, err)
	}
	if app.Failed != "" {
		t.Fatalf("the listed origin's page failed: %s", app.Failed)
	}
	if app.Login.Status != http.StatusOK || app.Login.RefreshTokenInBody || app.Login.RequestID == "" {
		t.Errorf("login: %+v, want 200 without refreshToken, X-Request-Id readable", app.Login)
	}
	if app.Refresh.Status != http.StatusOK || app.Refresh.RefreshTokenInBody || !app.Refresh.NewAccessToken {
		t.Errorf("refresh by cookie: %+v, want 200 with a new access token and no refreshToken", app.Refresh)
	}
	if app.Me.Status != http.StatusOK || app.Me.Email != email {
		t.Errorf("me: %+v", app.Me)
	}
	if app.CookieVisible {
		t.Error("the page's script sees the refresh cookie")
	}
	if app.Logout != http.StatusNoContent || app.RefreshAfterLogout == http.StatusOK {
		t.Errorf("logout %d, then refresh %d: want 204, then a refusal", app.Logout, app.RefreshAfterLogout)
	}

	text = open("http://"+unlisted.Addr().String(), "blocked")
	var blocked struct {
		Error      string `json:"error"`
		NotBlocked int    `json:"notBlocked"`
		Failed     string `json:"failed"`
	}
	if err := json.Unmarshal([]byte(text), &blocked); err != nil {
		t.Fatalf("the page's result %s: %v", text, err)
	}
	if blocked.Error != "TypeError" {
		t.Errorf("the unlisted origin's fetch: %s, want a TypeError", text)
	}
}
