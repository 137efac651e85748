package config

import (
	"net/url"
	"strings"
)

// WebAuthnRelyingPartyID is the relying party id of passkeys:
// USERD_WEBAUTHN_RP_ID, or the host of USERD_PUBLIC_URL.
func (c Config) WebAuthnRelyingPartyID() string {
	if c.WebAuthnRPID != "" {
		return c.WebAuthnRPID
	}
	u, err := url.Parse(c.PublicURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// WebAuthnAllowedOrigins are the origins of the pages that may use
// passkeys: USERD_WEBAUTHN_ORIGINS, or the origin of USERD_PUBLIC_URL as a
// browser writes it (lower case, without a default port).
func (c Config) WebAuthnAllowedOrigins() []string {
	if len(c.WebAuthnOrigins) > 0 {
		return c.WebAuthnOrigins
	}
	u, err := url.Parse(c.PublicURL)
	if err != nil || u.Host == "" {
		return nil
	}
	return []string{browserOrigin(u)}
}

// CORSAllowedOrigins are USERD_CORS_ALLOWED_ORIGINS as a browser writes
// an Origin (lower case, without a default port), so that they compare
// with it as they are; "*" stays "*".
func (c Config) CORSAllowedOrigins() []string {
	out := make([]string, 0, len(c.CORSOrigins))
	for _, o := range c.CORSOrigins {
		u, err := url.Parse(o)
		if o == "*" || err != nil {
			out = append(out, o)
			continue
		}
		out = append(out, browserOrigin(u))
	}
	return out
}

// browserOrigin is the origin of u as a browser writes it.
func browserOrigin(u *url.URL) string {
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if port := u.Port(); (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		host = strings.TrimSuffix(host, ":"+port)
	}
	return scheme + "://" + host
}

// TOTPIssuerName names userd in authenticator apps: USERD_TOTP_ISSUER, or
// USERD_WEBAUTHN_RP_NAME.
func (c Config) TOTPIssuerName() string {
	if c.TOTPIssuer != "" {
		return c.TOTPIssuer
	}
	return c.WebAuthnRPName
}
