package domain

import (
	"errors"
	"time"
)

// A sign-in through another identity provider (contract-identity.md,
// section 2): the browser goes to the provider with a state, a nonce and
// a PKCE challenge, comes back with a code, and userd redeems it for the
// identity the provider vouches for. What that identity may then do
// (sign its user in, create an account, be linked) is decided here and
// in the application, never by the provider alone.

// ExternalIdentity is what a provider vouched for at a sign-in.
type ExternalIdentity struct {
	// Subject is the provider's stable id of the person (an ID token's
	// sub, GitHub's numeric user id).
	Subject string
	// Email is the address the provider gave, empty when it gave none;
	// EmailVerified says whether it vouches for it.
	Email         Email
	EmailVerified bool
	// Name is the person's display name at the provider, possibly empty.
	Name string
}

// FederationFlowTTL is how long a flow may take from its start to its
// callback: the person signs in at the provider meanwhile.
const FederationFlowTTL = 10 * time.Minute

// PendingLinkTTL is how long an identity waits to be linked to the
// account with its email while its owner signs in with the method the
// account has.
const PendingLinkTTL = 10 * time.Minute

// Why a sign-in through a provider was refused, as the audit event
// idp.sign_in_refused names it in its reason.
const (
	// The provider answered the flow with an error (error=…).
	RefusedProviderError = "provider_error"
	// The callback's state or the browser's cookie did not match, or
	// the cookie was missing, foreign, or past its time.
	RefusedStateMismatch = "state_mismatch"
	// The code could not be redeemed at the provider.
	RefusedCodeExchange = "code_exchange_failed"
	// The provider could not be reached, or its discovery document or
	// keys could not be read.
	RefusedProviderUnreachable = "provider_unreachable"
	// The ID token failed a check: its signature, issuer, audience,
	// expiry, or nonce (each its own reason), or another of its rules.
	RefusedInvalidSignature = "invalid_signature"
	RefusedIssuerMismatch   = "issuer_mismatch"
	RefusedAudienceMismatch = "audience_mismatch"
	RefusedTokenExpired     = "token_expired"
	RefusedNonceMismatch    = "nonce_mismatch"
	RefusedInvalidIDToken   = "invalid_id_token"
	// The provider gave no subject, or a profile that could not be read.
	RefusedInvalidProfile = "invalid_profile"
	// The provider did not vouch for the email (or gave none), and
	// the person was not known by the identity.
	RefusedEmailUnverified = "email_unverified"
	// The email's domain is not among the provider's allowedDomains.
	RefusedDomainNotAllowed = "domain_not_allowed"
	// An unknown person, and the provider creates no accounts.
	RefusedAutoCreateOff = "auto_create_off"
	// The identity is linked to another account than the one that
	// asked to link it, or that account has an identity of the
	// provider already.
	RefusedIdentityTaken = "identity_taken"
)

// FederationRefusedError is a sign-in through a provider that was
// refused: Reason is one of the Refused… values, and Forbidden says the
// person was refused by the deployment's rules (allowedDomains,
// autoCreate: 403) rather than the flow failing a check (400).
type FederationRefusedError struct {
	Reason    string
	Forbidden bool
	// Err is what failed underneath, for the log; never shown.
	Err error
}

func (e *FederationRefusedError) Error() string {
	if e.Err != nil {
		return "sign-in through a provider refused: " + e.Reason + ": " + e.Err.Error()
	}
	return "sign-in through a provider refused: " + e.Reason
}

func (e *FederationRefusedError) Unwrap() error { return e.Err }

// FederationRefused is the refusal of a flow that failed the check
// reason, err underneath.
func FederationRefused(reason string, err error) error {
	return &FederationRefusedError{Reason: reason, Err: err}
}

// FederationForbidden is the refusal of a person by the deployment's
// rule reason.
func FederationForbidden(reason string) error {
	return &FederationRefusedError{Reason: reason, Forbidden: true}
}

// FederationReason is the reason of a refused sign-in through a
// provider, "" when err is none.
func FederationReason(err error) string {
	if r, ok := errors.AsType[*FederationRefusedError](err); ok {
		return r.Reason
	}
	return ""
}
