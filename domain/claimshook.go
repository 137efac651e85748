package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
)

// WebhookTokenClaims is the type of the claims hook's request
// (USERD_CLAIMS_HOOK_URL): userd asks for the extra claims of a token
// about to be signed.
const WebhookTokenClaims = "token.claims"

// The grants a claims request names: which token is about to be signed.
const (
	// ClaimsGrantSignIn is the first access token of a session of userd
	// (every kind of sign-in); ClaimsGrantRefresh one of its refreshes.
	ClaimsGrantSignIn  = "sign_in"
	ClaimsGrantRefresh = "refresh"
	// The OpenID provider's token endpoint: its grant_type.
	ClaimsGrantAuthorizationCode = string(GrantAuthorizationCode)
	ClaimsGrantRefreshToken      = string(GrantRefreshToken)
	ClaimsGrantClientCredentials = string(GrantClientCredentials)
)

// MaxHookClaimsSize bounds the claims a hook may add, as compact JSON:
// they travel in every request the token is sent with.
const MaxHookClaimsSize = 4 << 10

// MaxRefusalMessageLen bounds the message of a hook's refusal, in
// characters: it is shown to the person signing in.
const MaxRefusalMessageLen = 200

// ReservedClaims are the claims a hook may not set: those that say whose
// token it is, for whom, how long and how it was signed in (the
// contract's list), and those userd sets itself in its access token
// (profiles) or in an ID token (the standard claims of the user and the
// hashes of the tokens issued with it). Letting a hook set one would let
// it contradict what userd checked.
var ReservedClaims = []string{
	"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "sid", "auth_time", "amr", "acr", "typ",
	"client_id", "scope", "azp", "nonce",
	"profiles", "name", "email", "email_verified", "updated_at", "at_hash", "c_hash", "s_hash",
}

// ClaimsRequest is what a claims hook is asked: the token about to be
// signed for a user's session (UserID, User, SessionID, AMR) or for a
// client acting as itself (ClientID alone, client_credentials).
type ClaimsRequest struct {
	// UserID is empty for client_credentials.
	UserID UserID
	// User is the user's representation, as the API shows it; nil for
	// client_credentials.
	User map[string]any
	// SessionID is the session (refresh family) the token belongs to.
	SessionID string
	AMR       AMR
	// ClientID and Scopes are the OpenID client's and its grant's; empty
	// for userd's own tokens.
	ClientID OAuthClientID
	Scopes   []OAuthScope
	// Grant is one of the ClaimsGrant… values.
	Grant string
}

// Data is the request's data object: userId or clientId (or both), and
// what applies of the rest.
func (r ClaimsRequest) Data() map[string]any {
	d := map[string]any{"grant": r.Grant}
	if r.UserID != "" {
		d["userId"] = r.UserID.String()
		d["user"] = r.User
		d["sessionId"] = r.SessionID
		d["amr"] = []string(r.AMR)
		d["acr"] = r.AMR.ACR()
	}
	if r.ClientID != "" {
		d["clientId"] = r.ClientID.String()
		d["scopes"] = ScopeStrings(r.Scopes)
	}
	return d
}

// Event is the request as the hook receives it, with id (webhook-id) at
// now.
func (r ClaimsRequest) Event(id string, now time.Time) WebhookEvent {
	return WebhookEvent{ID: id, Type: WebhookTokenClaims, Timestamp: now.UTC().Truncate(time.Second), Data: r.Data()}
}

// HookClaims are the claims a hook added to a token: a compact JSON
// object of at most MaxHookClaimsSize bytes that sets no reserved claim.
// The zero value adds nothing.
type HookClaims struct{ object []byte }

// ErrHookFailed is the claims hook's 200 with something else than
// {"claims":{…}} of allowed claims within the limits; the sign-in is
// refused (502 hook_failed).
var ErrHookFailed = errors.New("the claims hook answered wrongly")

// ErrHookUnavailable is a claims hook that did not answer in time, or answered
// another status; it is an ErrUnavailable (503), unless the deployment
// fails open.
var ErrHookUnavailable = fmt.Errorf("claims hook: %w", ErrUnavailable)

// HookFailure is why a hook's answer was refused, for the log: it never
// holds the answer itself.
type HookFailure struct{ Reason string }

func (e *HookFailure) Error() string { return "claims hook: " + e.Reason }

// Unwrap makes the failure an ErrHookFailed.
func (e *HookFailure) Unwrap() error { return ErrHookFailed }

// ParseHookClaims checks the claims object of a hook's answer: a JSON
// object, no reserved claim, at most MaxHookClaimsSize bytes compact. An
// error is a *HookFailure.
func ParseHookClaims(raw json.RawMessage) (HookClaims, error) {
	var claims map[string]json.RawMessage
	if err := json.Unmarshal(raw, &claims); err != nil || claims == nil {
		return HookClaims{}, &HookFailure{Reason: "claims is not a JSON object"}
	}
	if len(claims) == 0 {
		return HookClaims{}, nil
	}
	var reserved []string
	for name := range claims {
		if slices.Contains(ReservedClaims, name) {
			reserved = append(reserved, name)
		}
	}
	if len(reserved) > 0 {
		slices.Sort(reserved)
		return HookClaims{}, &HookFailure{Reason: "reserved claims " + strings.Join(reserved, ",")}
	}
	// Marshalling the map sorts the names, drops a repeated one and
	// compacts every value.
	object, err := json.Marshal(claims)
	if err != nil {
		return HookClaims{}, &HookFailure{Reason: "claims cannot be encoded"}
	}
	if len(object) > MaxHookClaimsSize {
		return HookClaims{}, &HookFailure{Reason: fmt.Sprintf("claims of %d bytes, more than %d", len(object), MaxHookClaimsSize)}
	}
	return HookClaims{object: object}, nil
}

// Empty reports whether the claims add nothing.
func (c HookClaims) Empty() bool { return len(c.object) == 0 }

// JSON returns the claims as a compact JSON object, nil when Empty. The
// caller must not change it.
func (c HookClaims) JSON() []byte { return c.object }

// Map returns the claims decoded, nil when Empty (for tests and logs of
// names).
func (c HookClaims) Map() map[string]any {
	if c.Empty() {
		return nil
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(c.object))
	d.UseNumber()
	_ = d.Decode(&m)
	return m
}

// MergeClaims adds c to payload, the compact JSON object of a token's
// own claims: the two objects become one. Without claims, payload is
// returned as it is. ParseHookClaims refused every name a token of userd
// sets, so no name is repeated.
func MergeClaims(payload []byte, c HookClaims) []byte {
	if c.Empty() || len(payload) < 2 {
		return payload
	}
	out := make([]byte, 0, len(payload)+len(c.object))
	out = append(out, payload[:len(payload)-1]...)
	if len(payload) > 2 {
		out = append(out, ',')
	}
	return append(out, c.object[1:]...)
}

// SignInRefusedError is a sign-in the claims hook refused (403
// sign_in_refused): no session opens, and Message is shown to the person.
type SignInRefusedError struct{ Message string }

func (e *SignInRefusedError) Error() string { return "sign-in refused by the claims hook" }

// DefaultRefusalMessage is shown for a refusal that gave no message.
const DefaultRefusalMessage = "The sign-in was refused."

// NewSignInRefused returns the refusal with the hook's message made fit
// to show: valid UTF-8, each control or format character a space, spaces trimmed,
// at most MaxRefusalMessageLen characters; an empty one is
// DefaultRefusalMessage.
func NewSignInRefused(message string) *SignInRefusedError {
	var b strings.Builder
	n := 0
	for _, r := range strings.ToValidUTF8(message, "\uFFFD") {
		if n == MaxRefusalMessageLen {
			break
		}
		// Bidirectional overrides and other format characters would
		// let a message read otherwise than it is written.
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			r = ' '
		}
		b.WriteRune(r)
		n++
	}
	msg := strings.TrimSpace(b.String())
	if msg == "" {
		msg = DefaultRefusalMessage
	}
	return &SignInRefusedError{Message: msg}
}
