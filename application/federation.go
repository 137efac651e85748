package application

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
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
// sign-in page's buttons; none while the flows are off.
func (s *FederationService) SignInProviders(ctx context.Context) ([]SignInProvider, error) {
	if s.upstream == nil {
		return nil, nil
	}
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

// FederationStart is where a flow's browser goes: the provider's
// authorization URL, and the flow the driving adapter keeps with the
// browser until the callback.
type FederationStart struct {
	Location string
	Flow     FederationFlow
}

// Start begins a flow through the enabled provider slug, for a sign-in
// that then goes to next (a path of userd, which the driving adapter has
// judged), or, with linkFor, for the signed-in person to link their
// identity there to their account. A provider that is unknown or
// disabled is domain.ErrIdentityProviderNotFound; one that cannot be
// reached is a *domain.FederationRefusedError (provider_unreachable),
// recorded as idp.sign_in_refused.
func (s *FederationService) Start(ctx context.Context, slug, next string, linkFor *domain.Principal) (FederationStart, error) {
	if linkFor != nil {
		if _, err := signedIn(ctx, s.users, linkFor); err != nil {
			return FederationStart{}, err
		}
	}
	p, err := s.enabledProvider(ctx, slug)
	if err != nil {
		return FederationStart{}, err
	}
	flow := FederationFlow{Provider: p.Slug, State: randomToken(), Nonce: randomToken(), Verifier: randomToken(),
		Next: next, Expires: s.clock.Now().Add(domain.FederationFlowTTL)}
	if linkFor != nil {
		flow.LinkFor = linkFor.UserID
	}
	loc, err := s.upstream.AuthCodeURL(ctx, p, s.request(flow))
	if err != nil {
		return FederationStart{}, s.refused(ctx, p.Slug, actorID(linkFor), err)
	}
	return FederationStart{Location: loc, Flow: flow}, nil
}

// FederationCallback is what the provider's redirect to the callback
// carries.
type FederationCallback struct {
	State string
	Code  string
	// Error is the provider's error code (error=…), when it sent one.
	Error string
}

// FederationOutcome is how a callback ended, exactly one set: a sign-in
// (its session, or the second step it waits for), the identity linked to
// the account that asked for it, or an identity that waits for the owner
// of the account with its email to sign in (PendingLink).
type FederationOutcome struct {
	SignIn  *SignInResult
	Linked  *domain.UserIdentity
	Pending *PendingLink
	// ProviderName is the provider's display name, for the pages.
	ProviderName string
}

// Finish ends the flow at its callback: flow is what the browser kept
// (nil when it kept none that the adapter could open), slug the
// provider of the callback's URL. Every check of the contract is made
// here or by the IdentityProviderClient: the browser's flow and its
// state, the provider's answer, the ID token. Then the identity is
// matched (matchIdentity). Every refusal is a *domain.FederationRefusedError,
// recorded as idp.sign_in_refused with its reason; a refusal of the
// account itself (disabled, email not verified) is the sign-in's error.
func (s *FederationService) Finish(ctx context.Context, flow *FederationFlow, slug string, cb FederationCallback) (FederationOutcome, error) {
	now := s.clock.Now()
	if flow == nil || flow.Provider != slug || !now.Before(flow.Expires) ||
		subtle.ConstantTimeCompare([]byte(flow.State), []byte(cb.State)) != 1 || cb.State == "" {
		return FederationOutcome{}, s.refused(ctx, slug, "", domain.FederationRefused(domain.RefusedStateMismatch, nil))
	}
	if cb.Error != "" {
		return FederationOutcome{}, s.refused(ctx, slug, flow.LinkFor,
			domain.FederationRefused(domain.RefusedProviderError, errors.New("the provider answered "+providerErrorCode(cb.Error))))
	}
	p, err := s.enabledProvider(ctx, slug)
	if err != nil {
		return FederationOutcome{}, err
	}
	if cb.Code == "" {
		return FederationOutcome{}, s.refused(ctx, slug, flow.LinkFor, domain.FederationRefused(domain.RefusedCodeExchange, errors.New("no code")))
	}
	ext, err := s.upstream.Exchange(ctx, p, s.request(*flow), cb.Code)
	if err == nil && ext.Subject == "" {
		err = domain.FederationRefused(domain.RefusedInvalidProfile, errors.New("no subject"))
	}
	if err != nil {
		return FederationOutcome{}, s.refused(ctx, slug, flow.LinkFor, err)
	}
	if !p.TrustEmailVerified || ext.Email == "" {
		ext.EmailVerified = false
	}
	out, subject, err := s.matchIdentity(ctx, p, *flow, ext)
	if err != nil {
		if _, ok := errors.AsType[*domain.FederationRefusedError](err); ok {
			return FederationOutcome{}, s.refused(ctx, slug, subject, err)
		}
		return FederationOutcome{}, err
	}
	out.ProviderName = p.DisplayName
	return out, nil
}

// matchIdentity applies the contract's matching to the identity ext of
// the provider p: the identity (provider, subject) signs its user in; a
// signed-in person's flow links it to their account; otherwise an
// account with the same email waits for its owner's sign-in
// (PendingLink), and an unknown person with a verified email gets an
// account when the provider creates them. An email the provider does not
// vouch for never creates or links anything. It returns the account
// concerned, when one is, for the audit trail of a refusal.
func (s *FederationService) matchIdentity(ctx context.Context, p domain.IdentityProvider, flow FederationFlow,
	ext domain.ExternalIdentity) (FederationOutcome, domain.UserID, error) {
	known, err := s.identities.IdentityBySubject(ctx, p.Slug, ext.Subject)
	switch {
	case err == nil:
		if flow.LinkFor != "" {
			if known.UserID != flow.LinkFor {
				return FederationOutcome{}, flow.LinkFor, domain.FederationForbidden(domain.RefusedIdentityTaken)
			}
			return FederationOutcome{Linked: &known}, known.UserID, nil
		}
		if err := allowedEmail(p, ext); err != nil {
			return FederationOutcome{}, known.UserID, err
		}
		if !ext.EmailVerified {
			// An address the provider does not vouch for is not kept
			// as the identity's: the last one it vouched for stays.
			ext.Email = known.Email
		}
		return s.signInAs(ctx, p, known.UserID, ext)
	case !errors.Is(err, domain.ErrIdentityNotFound):
		return FederationOutcome{}, "", err
	}
	if !ext.EmailVerified {
		return FederationOutcome{}, flow.LinkFor, domain.FederationForbidden(domain.RefusedEmailUnverified)
	}
	if err := allowedEmail(p, ext); err != nil {
		return FederationOutcome{}, flow.LinkFor, err
	}
	if flow.LinkFor != "" {
		linked, err := s.link(ctx, flow.LinkFor, flow.LinkFor, p.Slug, ext)
		if err != nil {
			return FederationOutcome{}, flow.LinkFor, err
		}
		return FederationOutcome{Linked: &linked}, flow.LinkFor, nil
	}
	owner, err := s.users.ByEmail(ctx, ext.Email)
	switch {
	case err == nil:
		pending := PendingLink{Provider: p.Slug, Subject: ext.Subject, Email: ext.Email, UserID: owner.ID,
			Expires: s.clock.Now().Add(domain.PendingLinkTTL)}
		s.log.LogAttrs(ctx, slog.LevelInfo, "identity waits for its account's sign-in", slog.String("provider", p.Slug),
			slog.String("user_id", owner.ID.String()))
		return FederationOutcome{Pending: &pending}, owner.ID, nil
	case !errors.Is(err, domain.ErrUserNotFound):
		return FederationOutcome{}, "", err
	}
	if !p.AutoCreate {
		return FederationOutcome{}, "", domain.FederationForbidden(domain.RefusedAutoCreateOff)
	}
	created, err := s.createFor(ctx, p.Slug, ext)
	if errors.Is(err, domain.ErrEmailTaken) || errors.Is(err, domain.ErrIdentityTaken) {
		// Another sign-in of the same person, or a registration of the
		// address, came first: match again against what it made.
		return s.matchIdentityOnce(ctx, p, flow, ext)
	}
	if err != nil {
		return FederationOutcome{}, "", err
	}
	return s.signInAs(ctx, p, created, ext)
}

// matchIdentityOnce matches again after a race lost to a concurrent
// sign-in; a second loss is the store's error.
func (s *FederationService) matchIdentityOnce(ctx context.Context, p domain.IdentityProvider, flow FederationFlow,
	ext domain.ExternalIdentity) (FederationOutcome, domain.UserID, error) {
	if _, err := s.identities.IdentityBySubject(ctx, p.Slug, ext.Subject); err == nil {
		return s.matchIdentity(ctx, p, flow, ext)
	}
	if _, err := s.users.ByEmail(ctx, ext.Email); err == nil {
		return s.matchIdentity(ctx, p, flow, ext)
	}
	return FederationOutcome{}, "", fmt.Errorf("match identity: %w", domain.ErrUnavailable)
}

// allowedEmail applies the provider's allowedDomains: when it names
// some, only a verified email of one of them may sign in.
func allowedEmail(p domain.IdentityProvider, ext domain.ExternalIdentity) error {
	if len(p.AllowedDomains) == 0 {
		return nil
	}
	if !ext.EmailVerified || !p.AllowsEmailDomain(ext.Email) {
		return domain.FederationForbidden(domain.RefusedDomainNotAllowed)
	}
	return nil
}

// signInAs ends the sign-in of the account id that the provider's
// identity ext stands for (signInPath.complete, amr fed): a session, or
// the second step of an account with a second factor. The identity
// records the sign-in and ext's email.
func (s *FederationService) signInAs(ctx context.Context, p domain.IdentityProvider, id domain.UserID,
	ext domain.ExternalIdentity) (FederationOutcome, domain.UserID, error) {
	user, err := s.users.ByID(ctx, id)
	if err != nil {
		return FederationOutcome{}, id, err
	}
	now := s.clock.Now()
	res, err := s.signIn.complete(ctx, authenticated{user: user, amr: domain.AMRFederated, at: now})
	if err != nil {
		return FederationOutcome{}, id, err
	}
	if err := s.identities.TouchIdentity(ctx, p.Slug, ext.Subject, ext.Email, now); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "identity use not recorded", slog.String("provider", p.Slug),
			slog.String("error", err.Error()))
	}
	s.events.note(ctx, domain.IdentitySignInEvent(id, p.Slug))
	return FederationOutcome{SignIn: &res}, id, nil
}

// createFor creates the account of an unknown person whose verified
// email the provider slug vouched for, with the identity linked: no
// password, the email verified, a customer. user.created and
// identity.linked go with it.
func (s *FederationService) createFor(ctx context.Context, slug string, ext domain.ExternalIdentity) (domain.UserID, error) {
	nu, verr := domain.ValidateNewUser(nameFor(ext), string(ext.Email), domain.Profiles{domain.ProfileCustomer})
	if err := verr.Err(); err != nil {
		return "", domain.FederationRefused(domain.RefusedInvalidProfile, err)
	}
	now := s.clock.Now()
	u := nu.User("", now)
	u.EmailVerified = true
	identity := domain.UserIdentity{UserID: u.ID, Provider: slug, Subject: ext.Subject, Email: ext.Email, LinkedAt: now, LastUsedAt: now}
	err := s.tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.users.Create(ctx, u); err != nil {
			return err
		}
		if err := s.identities.LinkIdentity(ctx, identity); err != nil {
			return err
		}
		if err := s.webhooks.emit(ctx, domain.WebhookUserCreated, u.ID, map[string]any{"profiles": u.Profiles.Strings()}); err != nil {
			return err
		}
		return s.webhooks.emit(ctx, domain.WebhookIdentityLinked, u.ID, map[string]any{"provider": slug})
	})
	if err != nil {
		return "", err
	}
	s.events.note(ctx, domain.UserCreatedEvent("", u.ID, u.Profiles, domain.OriginIdentityProvider))
	s.events.note(ctx, domain.IdentityLinkedEvent("", u.ID, slug))
	s.log.LogAttrs(ctx, slog.LevelInfo, "user created", slog.String("user_id", u.ID.String()), slog.String("provider", slug))
	return u.ID, nil
}

// nameFor is the name of an account made for ext: the provider's name
// for the person, or else the email's local part, cut to the longest
// name.
func nameFor(ext domain.ExternalIdentity) string {
	name := strings.TrimSpace(ext.Name)
	if _, msg := domain.ParseName(name); msg != "" {
		name, _, _ = strings.Cut(string(ext.Email), "@")
	}
	if r := []rune(name); len(r) > domain.NameMaxLen {
		name = string(r[:domain.NameMaxLen])
	}
	return name
}

// LinkPending links the identity that waited for its account's owner,
// once actor has signed in (with the method the account already had): to
// actor's account only, and only while the account still has the email
// the provider vouched for. Anything else is domain.ErrIdentityNotFound:
// the identity is not linked, and the person signed in as they chose.
func (s *FederationService) LinkPending(ctx context.Context, actor *domain.Principal, pending PendingLink) (domain.UserIdentity, error) {
	u, err := signedIn(ctx, s.users, actor)
	if err != nil {
		return domain.UserIdentity{}, err
	}
	if !s.clock.Now().Before(pending.Expires) || pending.UserID != u.ID || pending.Email != u.Email {
		return domain.UserIdentity{}, domain.ErrIdentityNotFound
	}
	if _, err := s.enabledProvider(ctx, pending.Provider); err != nil {
		return domain.UserIdentity{}, err
	}
	return s.link(ctx, u.ID, u.ID, pending.Provider, domain.ExternalIdentity{Subject: pending.Subject, Email: pending.Email, EmailVerified: true})
}

// link links ext's identity at the provider slug to the account user,
// for actor: identity.linked goes to the audit trail and the webhook. An
// identity linked elsewhere, or an account with an identity of the
// provider already, is refused as identity_taken.
func (s *FederationService) link(ctx context.Context, actor, user domain.UserID, slug string, ext domain.ExternalIdentity) (domain.UserIdentity, error) {
	now := s.clock.Now()
	identity := domain.UserIdentity{UserID: user, Provider: slug, Subject: ext.Subject, Email: ext.Email, LinkedAt: now, LastUsedAt: now}
	err := s.webhooks.inTxFor(ctx, domain.WebhookIdentityLinked, func(ctx context.Context) error {
		if err := s.identities.LinkIdentity(ctx, identity); err != nil {
			return err
		}
		return s.webhooks.emit(ctx, domain.WebhookIdentityLinked, user, map[string]any{"provider": slug})
	})
	if errors.Is(err, domain.ErrIdentityTaken) {
		return domain.UserIdentity{}, domain.FederationForbidden(domain.RefusedIdentityTaken)
	}
	if err != nil {
		return domain.UserIdentity{}, err
	}
	s.events.note(ctx, domain.IdentityLinkedEvent(actor, user, slug))
	s.log.LogAttrs(ctx, slog.LevelInfo, "identity linked", slog.String("user_id", user.String()), slog.String("provider", slug))
	return identity, nil
}

// enabledProvider is the provider slug when it is enabled, else
// domain.ErrIdentityProviderNotFound; the flows are off without an
// IdentityProviderClient.
func (s *FederationService) enabledProvider(ctx context.Context, slug string) (domain.IdentityProvider, error) {
	if s.upstream == nil {
		return domain.IdentityProvider{}, domain.ErrIdentityProviderNotFound
	}
	if _, msg := domain.ParseIdentityProviderSlug(slug); msg != "" {
		return domain.IdentityProvider{}, domain.ErrIdentityProviderNotFound
	}
	p, err := s.providers.Provider(ctx, slug)
	if err != nil {
		return domain.IdentityProvider{}, err
	}
	if !p.Enabled {
		return domain.IdentityProvider{}, domain.ErrIdentityProviderNotFound
	}
	return p, nil
}

// CallbackURL is where the provider slug sends the browser back: the
// redirect URI of every flow through it, which its operator registers at
// the provider (the console shows it).
func (s *FederationService) CallbackURL(slug string) string {
	return s.callbackBase + "/auth/idp/" + slug + "/callback"
}

// request is the flow's half of the exchange with its provider.
func (s *FederationService) request(flow FederationFlow) ports.FederationRequest {
	return ports.FederationRequest{RedirectURI: s.CallbackURL(flow.Provider),
		State: flow.State, Nonce: flow.Nonce, CodeVerifier: flow.Verifier}
}

// refused records a refusal of a sign-in through the provider slug (err,
// a *domain.FederationRefusedError), subject the account concerned when
// one is known, and returns err.
func (s *FederationService) refused(ctx context.Context, slug string, subject domain.UserID, err error) error {
	reason := domain.FederationReason(err)
	s.events.note(ctx, domain.IdentitySignInRefusedEvent(subject, slug, reason))
	s.log.LogAttrs(ctx, slog.LevelInfo, "sign-in through a provider refused", slog.String("provider", slug),
		slog.String("reason", reason), slog.String("error", err.Error()))
	return err
}

// providerErrorCode is the provider's error code for the log: an RFC
// 6749 code is [a-z_]; anything else is not repeated.
func providerErrorCode(code string) string {
	if len(code) > 64 || strings.IndexFunc(code, func(r rune) bool { return r != '_' && (r < 'a' || r > 'z') }) >= 0 {
		return "an error"
	}
	return code
}

// randomToken is 32 random bytes in base64url: a flow's state, nonce or
// PKCE verifier (RFC 7636's 43 characters).
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
