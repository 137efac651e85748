package main

import (
	"go.uber.org/fx"

	"github.com/userd/userd/adapters/totp"
	"github.com/userd/userd/adapters/webauthn"
	"github.com/userd/userd/config"
	"github.com/userd/userd/ports"
)

// factorsModule provides what checks second factors: TOTP codes
// (USERD_TOTP_ISSUER) and the passkey relying party (USERD_WEBAUTHN_*).
var factorsModule = fx.Module("factors",
	fx.Provide(
		fx.Annotate(newOneTimePasswords, fx.As(new(ports.OneTimePasswords))),
		fx.Annotate(newRelyingParty, fx.As(new(ports.PasskeyRelyingParty))),
	),
)

func newOneTimePasswords(cfg config.Config) (*totp.OneTimePasswords, error) {
	return totp.New(cfg.TOTPIssuerName(), nil)
}

func newRelyingParty(cfg config.Config) (*webauthn.RelyingParty, error) {
	return webauthn.New(webauthn.Options{
		RPID:    cfg.WebAuthnRelyingPartyID(),
		RPName:  cfg.WebAuthnRPName,
		Origins: cfg.WebAuthnAllowedOrigins(),
	})
}
