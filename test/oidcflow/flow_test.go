package oidcflow

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/userd/userd/test/kit"
)

// The plain-HTTP side of a client, for the tests that need no library:
// an authorization request, the token endpoint, userinfo.

// pkce is a code verifier and its S256 challenge (RFC 7636).
type pkce struct{ verifier, challenge string }

func newPKCE() pkce {
	v := rand.Text() + rand.Text() // 52 characters of base32
	sum := sha256.Sum256([]byte(v))
	return pkce{verifier: v, challenge: base64.RawURLEncoding.EncodeToString(sum[:])}
}

// authRequest is an authorization request of the code flow: set is
// applied over the defaults (response_type=code, the client, the
// redirect URI, scope openid email offline_access, a state, a nonce and
// the S256 challenge of pk); a value "" removes the parameter.
func (p provider) authRequest(c client, redirect string, pk pkce, set map[string]string) string {
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {c.ID},
		"redirect_uri":          {redirect},
		"scope":                 {"openid email offline_access"},
		"state":                 {"st-" + rand.Text()},
		"nonce":                 {"n-" + rand.Text()},
		"code_challenge":        {pk.challenge},
		"code_challenge_method": {"S256"},
	}
	for k, v := range set {
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	return p.node.Base + "/oauth2/authorize?" + q.Encode()
}

// tokens is a successful answer of the token endpoint.
type tokens struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	Scope        string `json:"scope"`
	IDToken      string `json:"id_token"`
	RefreshToken string `json:"refresh_token"`
}

// revoke revokes a token (RFC 7009) as the confidential client c.
func (p provider) revoke(t *testing.T, c client, token string) kit.Reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.node.Base+"/oauth2/revoke", strings.NewReader(url.Values{"token": {token}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	return kit.Do(t, req)
}

// token posts form to the token endpoint, as c: client_secret_basic for
// a confidential client, client_id in the form for a public one.
func (p provider) token(t *testing.T, c client, form url.Values) kit.Reply {
	t.Helper()
	if c.Secret == "" {
		form.Set("client_id", c.ID)
	}
	req, err := http.NewRequest(http.MethodPost, p.node.Base+"/oauth2/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if c.Secret != "" {
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	}
	return kit.Do(t, req)
}

// exchange trades a code for tokens, failing t on anything but 200.
func (p provider) exchange(t *testing.T, c client, code, redirect, verifier string) tokens {
	t.Helper()
	r := p.token(t, c, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}})
	var tok tokens
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &tok) != nil || tok.AccessToken == "" {
		t.Fatalf("exchange the code: %s", r)
	}
	return tok
}

// refresh trades a refresh token.
func (p provider) refresh(t *testing.T, c client, refreshToken string) kit.Reply {
	t.Helper()
	return p.token(t, c, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}})
}

// signedInTokens goes through the code flow of c for the agent's user
// with plain HTTP, and returns the tokens.
func (p provider) signedInTokens(t *testing.T, a *agent, c client, redirect string, set map[string]string) tokens {
	t.Helper()
	pk := newPKCE()
	return p.exchange(t, c, a.code(t, p.authRequest(c, redirect, pk, set)), redirect, pk.verifier)
}

// userinfo calls the userinfo endpoint with an access token.
func (p provider) userinfo(t *testing.T, accessToken string) kit.Reply {
	t.Helper()
	return kit.Send(t, http.MethodGet, p.node.Base+"/oauth2/userinfo", nil, accessToken)
}

// wantUserInfoRefused fails t unless userinfo refuses the access token
// with 401 and WWW-Authenticate: Bearer error="invalid_token".
func (p provider) wantUserInfoRefused(t *testing.T, what, accessToken string) {
	t.Helper()
	r := p.userinfo(t, accessToken)
	if r.Status != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("%s: userinfo answers %d (WWW-Authenticate %q), want 401 with error=\"invalid_token\"", what, r.Status, r.Header.Get("WWW-Authenticate"))
	}
}

// wantUserInfo fails t unless userinfo serves the access token.
func (p provider) wantUserInfo(t *testing.T, what, accessToken string) {
	t.Helper()
	if r := p.userinfo(t, accessToken); r.Status != http.StatusOK {
		t.Errorf("%s: userinfo answers %s, want 200", what, r)
	}
}

// raceExchange sends ten exchanges of one code at once, spread over the
// nodes, and returns the tokens of those that won; every other answer
// must be invalid_grant. At most one wins; none does when a second use
// came while the first was still being answered.
func raceExchange(t *testing.T, nodes []provider, c client, code, redirect, verifier string) []tokens {
	t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
	replies := kit.Race(10, func(i int) kit.Reply {
		req, err := http.NewRequest(http.MethodPost, nodes[i%len(nodes)].node.Base+"/oauth2/token", strings.NewReader(form.Encode()))
		if err != nil {
			return kit.Reply{}
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
		r, err := kit.DoWith(kit.Client, req)
		if err != nil {
			return kit.Reply{}
		}
		return r
	})
	var won []tokens
	for _, r := range replies {
		if r.Status != http.StatusOK {
			wantOAuthError(t, "a losing exchange", r, http.StatusBadRequest, "invalid_grant")
			continue
		}
		var tok tokens
		if err := json.Unmarshal(r.Body, &tok); err != nil {
			t.Fatal(err)
		}
		won = append(won, tok)
	}
	return won
}
