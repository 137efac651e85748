package application

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// FederationService signs people in through other identity providers
// (contract-identity.md, section 2): the browser flow's start and
// callback, the matching of an identity to an account, the links of
// identities to accounts and their removal.
type FederationService struct {
	core
	identityPorts
}

// SignInProvider is what the sign-in page and the account page show of an
// enabled provider: its button.
type SignInProvider struct {
	Slug        string
	DisplayName string
	Kind        domain.IdentityProviderKind
}

// SignInProviders are the enabled providers, by slug, for anyone: the
// sign-in page's buttons.
func (s *FederationService) SignInProviders(ctx context.Context) ([]SignInProvider, error) {
	all, err := s.providers.Providers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]SignInProvider, 0, len(all))
	for _, p := range all {
		if p.Enabled {
			out = append(out, SignInProvider{Slug: p.Slug, DisplayName: p.DisplayName, Kind: p.Kind})
		}
	}
	return out, nil
}

// FederationFlow is one browser's flow through a provider, from its start
// to its callback. The driving adapter keeps it with the browser (sealed
// in a short-lived cookie) and hands it back at the callback; nothing of
// it is stored, so that any node may finish a flow another began.
type FederationFlow struct {
	Provider string `json:"p"`
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	// Next is where the browser goes once signed in: a path of userd.
	Next string `json:"x,omitempty"`
	// LinkFor is the account a signed-in person began the flow from to
	// link the identity to it (the account page's "Link"); empty for a
	// sign-in.
	LinkFor domain.UserID `json:"l,omitempty"`
	// Expires ends the flow (domain.FederationFlowTTL after its start).
	Expires time.Time `json:"e"`
}

// PendingLink is an identity that waits for the owner of the account with
// its email to sign in with the method the account has, and is then
// linked to it (LinkPending). The driving adapter keeps it with the
// browser, sealed, as it keeps a flow.
type PendingLink struct {
	Provider string        `json:"p"`
	Subject  string        `json:"s"`
	Email    domain.Email  `json:"m"`
	UserID   domain.UserID `json:"u"`
	Expires  time.Time     `json:"e"`
}
