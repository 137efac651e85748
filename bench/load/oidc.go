package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The OpenID provider's scenarios (docs/oidc.md) load its endpoints as
// its clients do, with clients the admin registers while seeding: a
// first-party public client for the code flow (no consent page, PKCE
// alone) and a confidential one for client_credentials.
//
//   - oidc-flow: one operation is a whole code flow of a signed-in
//     browser: GET /oauth2/authorize (PKCE S256), its 303 to
//     /oauth2/authorize/continue followed with the browser's cookie, whose
//     303 to the redirect URI carries the code, and the code exchanged at
//     POST /oauth2/token: three requests, counted as one.
//   - oidc-code-exchange: the exchange alone. The codes are made
//     beforehand (authorize and continue), outside the measured time, and
//     the point runs until they are spent (--oidc-code-steps), as mfa and
//     passkey do; a code lives 60 s, so the point also ends at
//     oidcCodeLimit after its first code was made.
//   - oidc-refresh: grant_type=refresh_token, each worker rotating its own
//     chain (begun with a flow).
//   - oidc-client-credentials: the confidential client's grant, its secret
//     sent as client_secret_basic.
//   - oidc-userinfo: GET /oauth2/userinfo with an access token of the
//     provider, one per worker.
//
// The browsers are signed in once, through the pages as a person is
// (POST /account/login), and then hold the __Host-userd_sso cookie. The
// cookie is Secure, and the loader talks plain http to 127.0.0.1: a
// cookie jar would keep it to itself (Go's cookiejar sends a Secure
// cookie over https only), so each browser keeps the cookie's value and
// sends it in a Cookie header of its own, taking the new value each
// answer sets (the idle time counts from the last use).

// The provider's scenarios, in the order they run.
const (
	scOIDCFlow              = "oidc-flow"
	scOIDCCodeExchange      = "oidc-code-exchange"
	scOIDCRefresh           = "oidc-refresh"
	scOIDCClientCredentials = "oidc-client-credentials" //nolint:gosec // G101: a scenario's name, not a credential

	scOIDCUserInfo = "oidc-userinfo"
)

// isOIDCScenario reports whether sc loads the OpenID provider.
func isOIDCScenario(sc string) bool { return strings.HasPrefix(sc, "oidc-") }

// oidcRedirectURI is the public client's redirect URI: loopback http,
// which no one follows (the loader reads the code off the Location).
const oidcRedirectURI = "http://127.0.0.1/cb" //nolint:gosec // G101: a redirect URI, not a credential

// oidcScope is what the flow asks: an ID token, the profile and email
// claims, and a refresh token.
const oidcScope = "openid profile email offline_access"

// oidcCCScope is what the confidential client asks for itself.
const oidcCCScope = "profile email"

// ssoCookie is the provider's browser session cookie (adapters/web).
const ssoCookie = "__Host-userd_sso"

// oidcCodeLimit bounds a point of oidc-code-exchange, warm-up included,
// from the making of its first code: a code lives 60 s.
const oidcCodeLimit = 50 * time.Second

// oidcTokens is the part of a token endpoint answer the loader uses.
type oidcTokens struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
}

// oidcState is what the provider's scenarios share: the clients, the
// signed-in browsers (browsers[w] is worker w's Cookie header, used by
// one goroutine at a time as the chains are), worker w's refresh chain
// and userinfo's access tokens, minted at tokensAt.
type oidcState struct {
	noFollow       *http.Client
	issuer         string // what the redirect's iss must say
	publicID       string
	basic          []string // Authorization of the confidential client
	authorizeURL   *url.URL
	tokenURL       *url.URL
	userinfoURL    *url.URL
	redirect       *url.URL
	browsers       []string
	chains         []string
	tokens         [][]string // bearer headers
	tokensAt       time.Time
	accessTTL      time.Duration
	ccBody, public []byte // the client_credentials body; "&client_id=…" of the public client
}

// ensureOIDC makes what the provider's scenarios need at concurrency
// conc: the clients (once; the public one's ID tokens signed with alg),
// a signed-in browser per worker, and what sc uses beyond them: a
// refresh chain per worker, or fresh access tokens.
func (t *target) ensureOIDC(ctx context.Context, sc string, conc, seedConc int, alg string) error {
	if t.oidc == nil {
		o, err := t.newOIDC(alg)
		if err != nil {
			return err
		}
		t.oidc = o
	}
	o := t.oidc
	if have := len(o.browsers); have < conc {
		o.browsers = append(o.browsers, make([]string, conc-have)...)
		o.chains = append(o.chains, make([]string, conc-have)...)
		err := parallel(ctx, conc-have, seedConc, func(i int) error {
			c, err := t.signInBrowser(t.users[(have+i)%len(t.users)].email)
			o.browsers[have+i] = c
			return err
		})
		if err != nil {
			return err
		}
	}
	switch sc {
	case scOIDCRefresh:
		return parallel(ctx, conc, seedConc, func(w int) error {
			if o.chains[w] != "" {
				return nil
			}
			tr, err := t.oidcFlow(w)
			o.chains[w] = tr.RefreshToken
			return err
		})
	case scOIDCUserInfo:
		if len(o.tokens) >= conc && (o.accessTTL <= 0 || time.Since(o.tokensAt) < o.accessTTL/2) {
			return nil
		}
		start := time.Now()
		tokens := make([][]string, conc)
		err := parallel(ctx, conc, seedConc, func(w int) error {
			tr, err := t.oidcFlow(w)
			tokens[w] = bearer(tr.AccessToken)
			if w == 0 {
				o.accessTTL = time.Duration(tr.ExpiresIn) * time.Second
			}
			return err
		})
		if err != nil {
			return err
		}
		o.tokens, o.tokensAt = tokens, start
	}
	return nil
}

// newOIDC checks that the provider answers and has the admin register
// its two clients, the public one with ID tokens signed with alg.
func (t *target) newOIDC(alg string) (*oidcState, error) {
	noFollow := &http.Client{Transport: t.hc.Transport, Timeout: t.hc.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var meta struct {
		Issuer string `json:"issuer"`
	}
	if err := do(t.hc, newGet(t.ref("/.well-known/openid-configuration"), nil), http.StatusOK, &meta); err != nil {
		return nil, fmt.Errorf("the OpenID provider's discovery (is USERD_OIDC_PROVIDER on?): %w", err)
	}
	if meta.Issuer == "" {
		return nil, errors.New("the OpenID provider's discovery names no issuer")
	}
	var public, confidential struct {
		ID     string `json:"id"`
		Secret string `json:"clientSecret"`
	}
	body := fmt.Appendf(nil, `{"name":"Load SPA %s","type":"public","redirectUris":[%q],"firstParty":true,"idTokenSigningAlg":%q}`,
		t.runTag, oidcRedirectURI, alg)
	if err := do(t.hc, newPost(t.ref("/api/oauth-clients"), t.adminAuth, body), http.StatusCreated, &public); err != nil {
		return nil, fmt.Errorf("register the public client: %w", err)
	}
	body = fmt.Appendf(nil, `{"name":"Load service %s","type":"confidential","grantTypes":["client_credentials"],"scopes":["profile","email"]}`, t.runTag)
	if err := do(t.hc, newPost(t.ref("/api/oauth-clients"), t.adminAuth, body), http.StatusCreated, &confidential); err != nil {
		return nil, fmt.Errorf("register the confidential client: %w", err)
	}
	if confidential.Secret == "" {
		return nil, errors.New("register the confidential client: no clientSecret in the answer")
	}
	redirect, err := url.Parse(oidcRedirectURI)
	if err != nil {
		return nil, err
	}
	// client_secret_basic: the id and secret form-encoded, then joined
	// (RFC 6749 §2.3.1); both are URL-safe already.
	basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(confidential.ID) + ":" + url.QueryEscape(confidential.Secret)))
	return &oidcState{
		noFollow:     noFollow,
		issuer:       meta.Issuer,
		publicID:     public.ID,
		basic:        []string{"Basic " + basic},
		authorizeURL: t.ref("/oauth2/authorize"),
		tokenURL:     t.ref("/oauth2/token"),
		userinfoURL:  t.ref("/oauth2/userinfo"),
		redirect:     redirect,
		ccBody:       []byte(url.Values{"grant_type": {"client_credentials"}, "scope": {oidcCCScope}}.Encode()),
		public:       []byte("&client_id=" + url.QueryEscape(public.ID)),
	}, nil
}

// signInBrowser signs email in on the pages' sign-in form and returns the
// browser's Cookie header: the provider's cookie it was given.
func (t *target) signInBrowser(email string) (string, error) {
	form := url.Values{"email": {email}, "password": {userPassword}, "next": {"/account/"}}
	res, err := t.oidc.noFollow.Do(newForm(t.ref("/account/login"), nil, []byte(form.Encode()))) //nolint:gosec // G704: the userd under test
	if err != nil {
		return "", fmt.Errorf("sign in on the pages: %w", err)
	}
	drain(res)
	if res.StatusCode != http.StatusSeeOther {
		return "", fmt.Errorf("sign in on the pages: status %d, want 303", res.StatusCode)
	}
	c, ok := ssoFrom(res)
	if !ok {
		return "", fmt.Errorf("sign in on the pages: no %s cookie in the answer", ssoCookie)
	}
	return c, nil
}

// ssoFrom returns "name=value" of the provider's cookie an answer sets,
// when it sets one that is not a removal.
func ssoFrom(res *http.Response) (string, bool) {
	for _, c := range res.Cookies() {
		if c.Name == ssoCookie && c.Value != "" && c.MaxAge >= 0 {
			return c.Name + "=" + c.Value, true
		}
	}
	return "", false
}

// newForm builds a POST of a form body.
func newForm(u *url.URL, auth []string, body []byte) *http.Request {
	h := http.Header{"Content-Type": formContentType}
	if auth != nil {
		h["Authorization"] = auth
	}
	return &http.Request{
		Method: http.MethodPost, URL: u, Host: u.Host, Header: h,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
}

var formContentType = []string{"application/x-www-form-urlencoded"}

// drain reads an answer's body to the end, so that its connection is
// used again, and closes it.
func drain(res *http.Response) {
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close() // read to the end; Close has nothing to add
}

// seeOther sends req, expects a 303 and returns its Location, resolved
// against the request's URL, and the answer.
func seeOther(hc *http.Client, req *http.Request) (*url.URL, *http.Response, error) {
	res, err := hc.Do(req) //nolint:gosec // G704: the userd under test, started by the loader or named by --target
	if err != nil {
		return nil, nil, err
	}
	defer drain(res)
	if res.StatusCode != http.StatusSeeOther {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 300))
		return nil, res, &statusError{status: res.StatusCode, body: string(bytes.TrimSpace(b))}
	}
	loc, err := res.Location()
	if err != nil {
		return nil, res, fmt.Errorf("303 without a usable Location: %w", err)
	}
	return loc, res, nil
}

// pkce returns a fresh code verifier and its S256 challenge (RFC 7636).
func pkce() (verifier, challenge string) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizeCode runs the browser part of a flow for worker w's browser:
// the authorization request, and its continuation with the cookie, up to
// the code on the redirect. It answers the body of the code's exchange.
func (t *target) authorizeCode(w int) ([]byte, error) {
	o := t.oidc
	verifier, challenge := pkce()
	state := randomHex(8)
	u := *o.authorizeURL
	u.RawQuery = url.Values{
		"response_type": {"code"}, "client_id": {o.publicID}, "redirect_uri": {oidcRedirectURI},
		"scope": {oidcScope}, "state": {state}, "nonce": {randomHex(8)},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"},
	}.Encode()
	next, _, err := seeOther(o.noFollow, newGet(&u, nil))
	if err != nil {
		return nil, fmt.Errorf("authorize: %w", err)
	}
	if next.Path != "/oauth2/authorize/continue" {
		return nil, fmt.Errorf("authorize: sent to %s, want /oauth2/authorize/continue", next.Path)
	}
	// To the target itself: an absolute Location would name the issuer's
	// host (USERD_PUBLIC_URL), which need not be where it listens.
	next = t.base.ResolveReference(&url.URL{Path: next.Path, RawQuery: next.RawQuery})
	req := newGet(next, nil)
	req.Header["Cookie"] = []string{o.browsers[w]}
	back, res, err := seeOther(o.noFollow, req)
	if err != nil {
		return nil, fmt.Errorf("authorize/continue: %w", err)
	}
	if c, ok := ssoFrom(res); ok {
		o.browsers[w] = c
	}
	if back.Scheme != o.redirect.Scheme || back.Hostname() != o.redirect.Hostname() || back.Path != o.redirect.Path {
		return nil, fmt.Errorf("authorize/continue: sent to %s://%s%s, not to the redirect URI (signed out?)", back.Scheme, back.Host, back.Path)
	}
	q := back.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("authorize/continue: error=%s: %s", e, q.Get("error_description"))
	}
	if q.Get("state") != state || q.Get("code") == "" || q.Get("iss") != o.issuer {
		return nil, fmt.Errorf("authorize/continue: redirect without a code, the state or the issuer's iss: %s", back.RawQuery)
	}
	body := url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")},
		"redirect_uri": {oidcRedirectURI}, "code_verifier": {verifier}}.Encode()
	return append([]byte(body), o.public...), nil
}

// exchange posts a body to the token endpoint and checks the answer's
// tokens: an access token always, an ID token and a refresh token for a
// user.
func (t *target) exchange(auth []string, body []byte, user bool) (oidcTokens, error) {
	var tr oidcTokens
	if err := do(t.hc, newForm(t.oidc.tokenURL, auth, body), http.StatusOK, &tr); err != nil {
		return tr, err
	}
	switch {
	case tr.AccessToken == "" || tr.TokenType != "Bearer":
		return tr, errors.New("token answer without a Bearer access_token")
	case user && (tr.IDToken == "" || tr.RefreshToken == ""):
		return tr, errors.New("token answer without id_token or refresh_token")
	}
	return tr, nil
}

// oidcFlow runs a whole code flow with worker w's browser.
func (t *target) oidcFlow(w int) (oidcTokens, error) {
	body, err := t.authorizeCode(w)
	if err != nil {
		return oidcTokens{}, err
	}
	tr, err := t.exchange(nil, body, true)
	if err != nil {
		return tr, fmt.Errorf("token (authorization_code): %w", err)
	}
	return tr, nil
}

// oidcFlowStep: a whole flow a step.
func (t *target) oidcFlowStep(w int) step {
	return func() error {
		_, err := t.oidcFlow(w)
		return err
	}
}

// oidcRefreshStep: worker w rotates its own chain. A broken chain is
// begun again with a flow, outside the count but inside the time.
func (t *target) oidcRefreshStep(w int) step {
	o := t.oidc
	return func() error {
		body := append([]byte("grant_type=refresh_token&refresh_token="+url.QueryEscape(o.chains[w])), o.public...)
		tr, err := t.exchange(nil, body, true)
		if err != nil {
			if again, ferr := t.oidcFlow(w); ferr == nil {
				o.chains[w] = again.RefreshToken
			}
			return fmt.Errorf("token (refresh_token): %w", err)
		}
		o.chains[w] = tr.RefreshToken
		return nil
	}
}

// oidcClientCredentialsStep: the confidential client asks a token for
// itself.
func (t *target) oidcClientCredentialsStep(int) step {
	o := t.oidc
	return func() error {
		tr, err := t.exchange(o.basic, o.ccBody, false)
		if err == nil && (tr.RefreshToken != "" || tr.IDToken != "") {
			err = errors.New("client_credentials answered a refresh or ID token")
		}
		return err
	}
}

// oidcUserInfoStep: worker w reads its user's claims with its access
// token.
func (t *target) oidcUserInfoStep(w int) step {
	o := t.oidc
	auth := o.tokens[w%len(o.tokens)]
	return func() error {
		var claims struct {
			Sub string `json:"sub"`
		}
		if err := do(t.hc, newGet(o.userinfoURL, auth), http.StatusOK, &claims); err != nil {
			return err
		}
		if claims.Sub == "" {
			return errors.New("userinfo without sub")
		}
		return nil
	}
}

// measureCodeExchange prepares the codes of one point of
// oidc-code-exchange (worker w's made by its own browser, the warm-up's
// first) and measures their exchange, within oidcCodeLimit of the first.
func (t *target) measureCodeExchange(ctx context.Context, cfg *config, backend string, conc int, mon *procMon, logf func(string, ...any)) (Point, error) {
	n := cfg.oidcCodeSteps
	warm := 0
	if cfg.warmup > 0 {
		warm = max(conc, n/10)
	}
	start := time.Now()
	warmQ, q := make([][][]byte, conc), make([][][]byte, conc)
	err := parallel(ctx, conc, cfg.seedConc, func(w int) error {
		nw, nq := share(warm, conc, w), share(n, conc, w)
		for k := range nw + nq {
			body, err := t.authorizeCode(w)
			if err != nil {
				return err
			}
			if k < nw {
				warmQ[w] = append(warmQ[w], body)
			} else {
				q[w] = append(q[w], body)
			}
		}
		return nil
	})
	if err != nil {
		return Point{}, fmt.Errorf("%s c=%d: prepare: %w", scOIDCCodeExchange, conc, err)
	}
	logf("%s: %-7s c=%-3d prepared %d codes (%d of them for the warm-up) in %.1f s",
		backend, scOIDCCodeExchange, conc, warm+n, warm, time.Since(start).Seconds())
	deadline := start.Add(oidcCodeLimit)
	return measureRun(ctx, cfg, scOIDCCodeExchange, backend, conc, mon,
		func() { runPoint(ctx, t.exchangeStep(warmQ), conc, time.Until(deadline), cfg.maxRequests) },
		func() pointResult {
			return runPoint(ctx, t.exchangeStep(q), conc, time.Until(deadline), cfg.maxRequests)
		},
	), nil
}

// exchangeStep: worker w exchanges the codes of queues[w] in turn, and is
// spent after the last.
func (t *target) exchangeStep(queues [][][]byte) func(w int) step {
	return func(w int) step {
		q := queues[w]
		return func() error {
			if len(q) == 0 {
				return errSpent
			}
			body := q[0]
			q = q[1:]
			_, err := t.exchange(nil, body, true)
			return err
		}
	}
}
