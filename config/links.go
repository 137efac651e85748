package config

import "strings"

// The paths of the pages that the links of userd's messages open, served
// by userd itself.
const (
	VerifyEmailPath   = "/account/verify-email"
	ResetPasswordPath = "/account/reset-password"
	MagicLinkPath     = "/account/magic"
)

// VerifyEmailLink is the URL, up to the query, of the links in
// verification messages: USERD_VERIFY_EMAIL_URL, or userd's own page
// under USERD_PUBLIC_URL.
func (c Config) VerifyEmailLink() string {
	if c.VerifyEmailURL != "" {
		return c.VerifyEmailURL
	}
	return strings.TrimSuffix(c.PublicURL, "/") + VerifyEmailPath
}

// ResetPasswordLink is the URL, up to the query, of the links in reset
// messages: USERD_RESET_PASSWORD_URL, or userd's own page under
// USERD_PUBLIC_URL.
func (c Config) ResetPasswordLink() string {
	if c.ResetPasswordURL != "" {
		return c.ResetPasswordURL
	}
	return strings.TrimSuffix(c.PublicURL, "/") + ResetPasswordPath
}

// MagicLinkLink is the URL, up to the query, of the links in sign-in
// messages: USERD_MAGIC_LINK_URL, or userd's own page under
// USERD_PUBLIC_URL.
func (c Config) MagicLinkLink() string {
	if c.MagicLinkURL != "" {
		return c.MagicLinkURL
	}
	return strings.TrimSuffix(c.PublicURL, "/") + MagicLinkPath
}

// ProviderIssuer is the OpenID provider's issuer (contract-identity.md,
// section 1): PublicURL without a trailing slash, the iss of its tokens
// and the base of its metadata's URLs.
func (c Config) ProviderIssuer() string { return strings.TrimRight(c.PublicURL, "/") }
