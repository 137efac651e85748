package chromium

import (
	"testing"

	"github.com/chromedp/cdproto/webauthn"
)

// AddVirtualAuthenticator gives b's tab a DevTools virtual authenticator
// that stands in for a phone or a laptop: a platform authenticator
// (CTAP 2.1, internal transport) that keeps discoverable credentials
// (resident keys) and verifies its user, without a touch. Pages then
// register and use passkeys with navigator.credentials as with a real
// device. It returns the authenticator's id, for the WebAuthn commands
// such as webauthn.GetCredentials (see [Call]).
func (b *Browser) AddVirtualAuthenticator(t testing.TB) webauthn.AuthenticatorID {
	t.Helper()
	Call(t, b, webauthn.Enable, webauthn.EnableParams{})
	va := Call(t, b, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
		Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol:                    webauthn.AuthenticatorProtocolCtap2,
			Ctap2version:                webauthn.Ctap2versionCtap21,
			Transport:                   webauthn.AuthenticatorTransportInternal,
			HasResidentKey:              true,
			HasUserVerification:         true,
			IsUserVerified:              true,
			AutomaticPresenceSimulation: true, // the field has no omitempty: false would leave every ceremony waiting for a touch
		}})
	return va.AuthenticatorID
}
