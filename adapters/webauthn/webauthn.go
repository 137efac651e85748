// Package webauthn is the relying party of passkeys (ports.PasskeyRelyingParty),
// built on github.com/go-webauthn/webauthn: it makes the options a browser
// passes to navigator.credentials.create and get, and verifies what comes
// back. The verification rules of WebAuthn (client data, authenticator data
// flags, attestation formats, COSE keys, signatures) are the library's;
// this package decides what userd asks for (a discoverable credential,
// user verification preferred), keeps a ceremony's state and the
// credential record in formats of its own, and turns the library's errors
// into the domain's.
package webauthn

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/go-webauthn/webauthn/protocol"
	gowebauthn "github.com/go-webauthn/webauthn/webauthn"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

var _ ports.PasskeyRelyingParty = (*RelyingParty)(nil)

// Options configure the relying party.
type Options struct {
	// RPID is the relying party id (USERD_WEBAUTHN_RP_ID): a domain name
	// that is each origin's host or a parent of it, never an IP address.
	// A passkey is bound to it for good.
	RPID string
	// RPName is the name authenticators show (USERD_WEBAUTHN_RP_NAME).
	RPName string
	// Origins are the origins of the pages allowed to run a ceremony
	// (USERD_WEBAUTHN_ORIGINS), each scheme://host[:port].
	Origins []string
}

// RelyingParty implements ports.PasskeyRelyingParty. It is safe for
// concurrent use.
type RelyingParty struct {
	wa *gowebauthn.WebAuthn
}

// errRPIDIsIP is the message of an RP id that is an IP address: WebAuthn
// binds a passkey to a domain, and browsers refuse IP addresses.
var errRPIDIsIP = errors.New("must be a domain name (localhost for local use), not an IP address")

// New checks the options and returns the relying party.
func New(opts Options) (*RelyingParty, error) {
	if err := CheckRPID(opts.RPID); err != nil {
		return nil, fmt.Errorf("USERD_WEBAUTHN_RP_ID %w", err)
	}
	if strings.TrimSpace(opts.RPName) == "" {
		return nil, errors.New("USERD_WEBAUTHN_RP_NAME must not be empty")
	}
	if len(opts.Origins) == 0 {
		return nil, errors.New("USERD_WEBAUTHN_ORIGINS must list at least one origin")
	}
	for _, o := range opts.Origins {
		if err := CheckOrigin(o); err != nil {
			return nil, fmt.Errorf("USERD_WEBAUTHN_ORIGINS: %w", err)
		}
	}
	timeout := gowebauthn.TimeoutConfig{Enforce: true, Timeout: domain.CeremonyTTL, TimeoutUVD: domain.CeremonyTTL}
	wa, err := gowebauthn.New(&gowebauthn.Config{
		RPID:          opts.RPID,
		RPDisplayName: opts.RPName,
		RPOrigins:     append([]string(nil), opts.Origins...),
		// The defaults of every ceremony; BeginRegistration asks for more.
		AuthenticatorSelection: protocol.AuthenticatorSelection{UserVerification: protocol.VerificationPreferred},
		AttestationPreference:  protocol.PreferNoAttestation,
		Timeouts:               gowebauthn.TimeoutsConfig{Login: timeout, Registration: timeout},
	})
	if err != nil {
		return nil, fmt.Errorf("webauthn: %w", err)
	}
	return &RelyingParty{wa: wa}, nil
}

// CheckRPID accepts a relying party id: a domain name, localhost included,
// without scheme, port or path, and not an IP address.
func CheckRPID(id string) error {
	if strings.TrimSpace(id) == "" {
		return errors.New("must not be empty")
	}
	if _, err := netip.ParseAddr(strings.Trim(id, "[]")); err == nil {
		return errRPIDIsIP
	}
	if err := protocol.ValidateRPID(id); err != nil {
		return fmt.Errorf("%q is not a domain name: %w", id, err)
	}
	if strings.ContainsAny(id, ":/?#@ ") {
		return fmt.Errorf("%q is not a domain name: it must have no scheme, port or path", id)
	}
	return nil
}

// CheckOrigin accepts a web origin as a browser writes it in client data:
// http or https, a host, maybe a port, and nothing else (no path, query,
// fragment or credentials).
func CheckOrigin(origin string) error {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" ||
		strings.HasSuffix(origin, "/") {
		return fmt.Errorf("%q is not an origin like https://example.com or http://localhost:8080", origin)
	}
	return nil
}
