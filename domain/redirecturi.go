package domain

import (
	"net/url"
	"strings"
)

// Bounds of a client's redirect URIs (and of its post-logout ones), so
// that a client's row stays small: a URI at most as long as browsers
// reliably carry, and enough URIs for an app's environments.
const (
	MaxRedirectURILen = 2000
	MaxRedirectURIs   = 20
)

// redirectKind is what kind of redirect URI a registered one is: each
// kind has its own rules (RFC 8252, OAuth 2.1 §2.3.1).
type redirectKind int

const (
	// redirectHTTPS: an https URI of any host.
	redirectHTTPS redirectKind = iota + 1
	// redirectLoopback: an http URI of a loopback host, for a native app
	// that listens on a port it picks at each sign-in (RFC 8252 §7.3).
	redirectLoopback
	// redirectPrivateUse: a private-use scheme named after a domain the
	// app's maker holds, com.example.app:/callback (RFC 8252 §7.1): for
	// public clients only, since any app may claim a scheme.
	redirectPrivateUse
)

// msgRedirectKinds says which redirect URIs there are, for the messages.
const msgRedirectKinds = "must be https, http on a loopback host (localhost, 127.0.0.1, [::1]), " +
	"or a private-use scheme with a dot (com.example.app:/callback)"

// parseRedirectURI checks one redirect URI as given and returns its kind,
// or a message for the client. URIs are matched as exact strings, so they
// are kept as given: nothing is normalised.
func parseRedirectURI(s string) (redirectKind, string) {
	switch {
	case s == "":
		return 0, "must not be empty"
	case len(s) > MaxRedirectURILen:
		return 0, "must be at most 2000 bytes"
	case !uriChars(s):
		return 0, "must hold only the characters of a URI (RFC 3986); percent-encode the rest"
	case strings.Contains(s, "#"):
		return 0, "must not have a fragment (#)"
	case strings.Contains(s, "*"):
		// Matched as exact strings, a wildcard would match only itself:
		// whoever writes one expects more, and gets nothing.
		return 0, "must not hold a wildcard (*): redirect URIs are matched as exact strings"
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return 0, "is not a URI"
	case u.Scheme == "":
		return 0, "must be an absolute URI, with a scheme"
	case u.User != nil:
		return 0, "must not hold a user name or password"
	}
	switch u.Scheme {
	case "https":
		if u.Hostname() == "" {
			return 0, "must name a host"
		}
		return redirectHTTPS, ""
	case "http":
		if !loopbackHost(u.Hostname()) {
			return 0, "may use http only on a loopback host (localhost, 127.0.0.1, [::1]); use https"
		}
		return redirectLoopback, ""
	}
	if !strings.Contains(u.Scheme, ".") {
		return 0, msgRedirectKinds
	}
	return redirectPrivateUse, ""
}

// uriChars reports whether s holds only characters that may appear in a
// URI (RFC 3986 §2): letters, digits, "-._~", the delimiters
// ":/?#[]@!$&'()*+,;=" and "%". Spaces, quotes, "<>\^`{|}" and
// anything beyond ASCII are not among them: they would have to be
// escaped wherever the URI is written (a page, a header).
func uriChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~:/?#[]@!$&'()*+,;=%", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// loopbackHost reports whether host (without brackets) is one of the
// loopback hosts a native app may listen on.
func loopbackHost(host string) bool {
	switch strings.ToLower(host) {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// loopbackKey is a loopback redirect URI without its port: two such URIs
// are the same redirect when their keys are equal, whatever their ports
// (RFC 8252 §7.3: the app listens on a port it picks at each sign-in).
// ok is false for any other URI. The rest of the string is kept as given,
// so that everything but the port still matches exactly.
func loopbackKey(s string) (key string, ok bool) {
	if kind, msg := parseRedirectURI(s); msg != "" || kind != redirectLoopback {
		return "", false
	}
	// "http://" in any letter case: parseRedirectURI found a host, so the
	// authority follows the scheme's "//".
	const prefix = len("http://")
	rest := s[prefix:]
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	host := rest[:end]
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		host = host[:i]
	}
	return s[:prefix] + host + rest[end:], true
}

// AllowsRedirectURI reports whether a request may redirect to uri for c:
// uri is one of c's RedirectURIs, as an exact string; or both are http
// URIs of a loopback host that differ only in their ports (RFC 8252 §7.3).
func (c OAuthClient) AllowsRedirectURI(uri string) bool {
	for _, r := range c.RedirectURIs {
		if r == uri {
			return true
		}
	}
	key, ok := loopbackKey(uri)
	if !ok {
		return false
	}
	for _, r := range c.RedirectURIs {
		if k, ok := loopbackKey(r); ok && k == key {
			return true
		}
	}
	return false
}

// AllowsPostLogoutRedirectURI reports whether a sign-out may return to uri
// for c: uri is one of c's PostLogoutRedirectURIs, as an exact string
// (RP-Initiated Logout 1.0 §3).
func (c OAuthClient) AllowsPostLogoutRedirectURI(uri string) bool {
	for _, r := range c.PostLogoutRedirectURIs {
		if r == uri {
			return true
		}
	}
	return false
}
