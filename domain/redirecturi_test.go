package domain_test

import (
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

func TestNewOAuthClient_redirect_uris(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		uri  string
		typ  string
		want string // a part of the message; empty when accepted
	}{
		{"https://app.example.com/callback", "confidential", ""},
		{"https://app.example.com:8443/cb?tenant=a,b", "confidential", ""},
		{"https://10.0.0.7/cb", "public", ""},
		{"HTTPS://app.example.com/cb", "confidential", ""},
		{"http://localhost/cb", "public", ""},
		{"http://localhost:3000/cb", "confidential", ""},
		{"http://127.0.0.1:8080/oauth2/callback", "public", ""},
		{"http://[::1]:9000/cb", "public", ""},
		{"com.example.app:/oauth2redirect", "public", ""},
		{"com.example.app://callback", "public", ""},
		{"com.example.app:/cb", "confidential", "private-use scheme, which only a public (native) client may use"},
		{"myapp://callback", "public", "must be https, http on a loopback host"},
		{"javascript:alert(1)", "public", "must be https, http on a loopback host"},
		{"data:text/html,hello", "public", "must be https, http on a loopback host"},
		{"http://app.example.com/cb", "confidential", "http only on a loopback host"},
		{"http://localhost.example.com/cb", "public", "http only on a loopback host"},
		{"http://127.0.0.2/cb", "public", "http only on a loopback host"},
		{"http:localhost/cb", "public", "http only on a loopback host"},
		{"https://app.example.com/cb#done", "confidential", "fragment"},
		{"https://app.example.com/cb#", "confidential", "fragment"},
		{"https://*.example.com/cb", "confidential", "wildcard"},
		{"https://app.example.com/*", "confidential", "wildcard"},
		{"https://user:pw@app.example.com/cb", "confidential", "user name or password"},
		{"https:///cb", "confidential", "must name a host"},
		{"https:app.example.com", "confidential", "must name a host"},
		{"/callback", "confidential", "absolute URI"},
		{"app.example.com/cb", "confidential", "absolute URI"},
		{"", "confidential", "must not be empty"},
		{"https://app.example.com/a b", "confidential", "characters of a URI"},
		{"https://app.example.com/\u00e9", "confidential", "characters of a URI"},
		{"https://app.example.com/\x00", "confidential", "characters of a URI"},
		{`https://app.example.com/cb?x="><script>`, "confidential", "characters of a URI"},
		{`https://app.example.com\@evil.example.com/`, "confidential", "characters of a URI"},
		{"https://app.example.com/{id}", "confidential", "characters of a URI"},
		{"https://app.example.com/cb?a=1&b=%2F;c=(x)!~'*", "confidential", "wildcard"},
		{"https://app.example.com/cb?a=1&b=%2F;c=(x)!~'$", "confidential", ""},
		{"https://app.example.com/%zz", "confidential", "not a URI"},
		{"https://app.example.com/" + strings.Repeat("a", domain.MaxRedirectURILen), "confidential", "at most 2000 bytes"},
	} {
		t.Run(tc.uri, func(t *testing.T) {
			t.Parallel()
			c, _, err := domain.NewOAuthClient(clientInput(tc.typ, tc.uri), clientNow)
			if tc.want == "" {
				if err != nil || !c.AllowsRedirectURI(tc.uri) {
					t.Fatalf("refused (%v), or does not match itself", err)
				}
				return
			}
			wantField(t, err, "redirectUris", tc.want)
			// The same rules for where a sign-out returns.
			in := clientInput(tc.typ)
			in.PostLogoutRedirectURIs = []string{tc.uri}
			_, _, err = domain.NewOAuthClient(in, clientNow)
			wantField(t, err, "postLogoutRedirectUris", tc.want)
		})
	}
}

func TestOAuthClient_AllowsRedirectURI(t *testing.T) {
	t.Parallel()
	c, _, err := domain.NewOAuthClient(clientInput("public",
		"https://app.example.com/callback", "http://127.0.0.1/cb", "http://localhost:3000/cb?x=1", "http://[::1]:8080/cb",
		"com.example.app:/cb"), clientNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		uri  string
		want bool
	}{
		{"https://app.example.com/callback", true},
		{"com.example.app:/cb", true},
		// Loopback: any port, the rest exact.
		{"http://127.0.0.1/cb", true},
		{"http://127.0.0.1:51234/cb", true},
		{"http://localhost:3000/cb?x=1", true},
		{"http://localhost/cb?x=1", true},
		{"http://localhost:9/cb?x=1", true},
		{"http://[::1]/cb", true},
		{"http://[::1]:1/cb", true},
		{"http://127.0.0.1:51234/cb/", false},
		{"http://127.0.0.1:51234/CB", false},
		{"http://127.0.0.1:51234/cb?x=1", false},
		{"http://localhost:3000/cb", false},
		{"http://localhost:3000/cb?x=2", false},
		{"http://localhost:51234/cb", false}, // registered for 127.0.0.1
		{"http://127.0.0.1:51234/cb#x", false},
		{"https://127.0.0.1:51234/cb", false},
		{"http://user@127.0.0.1:51234/cb", false},
		// Anything else: exact strings only.
		{"https://app.example.com:443/callback", false},
		{"https://app.example.com/callback/", false},
		{"https://app.example.com/callback?next=/admin", false},
		{"https://APP.example.com/callback", false},
		{"https://app.example.com/Callback", false},
		{"https://app.example.com/callback#", false},
		{"com.example.app:/cb/", false},
		{"", false},
	} {
		if got := c.AllowsRedirectURI(tc.uri); got != tc.want {
			t.Errorf("AllowsRedirectURI(%q) = %v, want %v", tc.uri, got, tc.want)
		}
	}
}

func TestOAuthClient_AllowsPostLogoutRedirectURI(t *testing.T) {
	t.Parallel()
	in := clientInput("public")
	in.PostLogoutRedirectURIs = []string{"https://app.example.com/bye", "http://127.0.0.1:8080/bye"}
	c, _, err := domain.NewOAuthClient(in, clientNow)
	if err != nil {
		t.Fatal(err)
	}
	for uri, want := range map[string]bool{
		"https://app.example.com/bye": true, "http://127.0.0.1:8080/bye": true,
		"http://127.0.0.1:9090/bye": false, "https://app.example.com/bye/": false,
		"https://app.example.com/callback": false,
	} {
		if got := c.AllowsPostLogoutRedirectURI(uri); got != want {
			t.Errorf("AllowsPostLogoutRedirectURI(%q) = %v, want %v", uri, got, want)
		}
	}
}

// FuzzOAuthClientRedirectURI: a redirect URI that a client accepts is
// printable ASCII without a fragment or wildcard, and matches itself; one
// it refuses is reported under redirectUris, and matches nothing.
func FuzzOAuthClientRedirectURI(f *testing.F) {
	for _, seed := range []string{
		"https://app.example.com/cb", "http://127.0.0.1:8080/cb", "http://[::1]/cb?x=1", "com.example.app:/cb",
		"http://localhost:/cb", "http://[::1]", "HTTP://LOCALHOST:1/", "https://a/b#c", "myapp://x", "http://[::1%25eth0]:80/",
		"https://example.com/%", "", "http://127.0.0.1:99999999999999999999/",
	} {
		f.Add(seed, "http://127.0.0.1:1234/cb")
	}
	f.Fuzz(func(t *testing.T, uri, request string) {
		c, _, err := domain.NewOAuthClient(clientInput("public", uri), clientNow)
		if err != nil {
			for _, fe := range validationFields(t, err) {
				if fe.Field != "redirectUris" {
					t.Fatalf("%q refused under %s: %s", uri, fe.Field, fe.Message)
				}
			}
			return
		}
		if strings.ContainsAny(uri, "#* \"<>\\^`{|}") || !c.AllowsRedirectURI(uri) {
			t.Fatalf("accepted %q, which holds a fragment, a wildcard or a character no URI has, or does not match itself", uri)
		}
		if c.AllowsRedirectURI(request) && request != uri {
			// Only a loopback redirect matches another string: the same
			// one on another port.
			if !strings.HasPrefix(strings.ToLower(uri), "http://") || !strings.HasPrefix(strings.ToLower(request), "http://") ||
				strings.Contains(request, "#") {
				t.Fatalf("%q allows %q", uri, request)
			}
		}
	})
}
