package application

import (
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Deps are the ports the application drives. Metrics, OutboxMetrics,
// PurgeMetrics and Log may be nil: events are then not counted, and
// nothing is logged.
type Deps struct {
	// Stores are the store ports, filled by one store adapter.
	Stores ports.Stores
	Hasher ports.PasswordHasher
	Issuer ports.TokenIssuer
	Codec  ports.RefreshTokenCodec
	Keys   ports.AccessTokenKeys
	Mailer ports.Mailer
	// OTP checks TOTP codes and RelyingParty runs WebAuthn ceremonies.
	OTP          ports.OneTimePasswords
	RelyingParty ports.PasskeyRelyingParty
	// Webhooks, when set, receives the events (USERD_WEBHOOK_URL); nil
	// queues none.
	Webhooks ports.WebhookSender
	// OAuthTokens, when set, signs and checks the OpenID provider's
	// tokens; nil turns the provider off (Services.Provider is nil).
	OAuthTokens ports.OAuthTokens
	// Upstream, when set, speaks to the identity providers people sign
	// in with; nil turns those sign-ins off (no provider's flow starts).
	Upstream ports.IdentityProviderClient
	// ClaimsHook, when set, is asked for the extra claims of every access
	// and ID token (USERD_CLAIMS_HOOK_URL); HookMetrics, when set, counts
	// its calls.
	ClaimsHook  ports.ClaimsHook
	HookMetrics ports.ClaimsHookMetrics
	// OutboxMetrics, when set, counts what the sender does.
	OutboxMetrics ports.OutboxMetrics
	// PurgeMetrics, when set, counts the rows housekeeping deleted.
	PurgeMetrics ports.PurgeMetrics
	// Traces, when set (traces on), carry the trace of the request that
	// queues an outbox message to its delivery; nil keeps none.
	Traces ports.TraceContexts
	// AccountCacheMetrics, when set, counts the account cache's hits,
	// misses and evictions.
	AccountCacheMetrics ports.AccountCacheMetrics
	Metrics             ports.SecurityMetrics
	Clock               ports.Clock
	Log                 *slog.Logger
}

// Config holds the switches and lifetimes that shape the use cases.
type Config struct {
	// OpenRegistration lets anonymous callers create ROLE_CUSTOMER accounts.
	OpenRegistration bool
	// RequireCurrentPassword makes currentPassword mandatory when a
	// non-admin changes its own password or email.
	RequireCurrentPassword bool
	// RefreshTTL is the lifetime of one refresh token.
	RefreshTTL time.Duration
	// RefreshFamilyTTL is the absolute lifetime of a login session.
	RefreshFamilyTTL time.Duration
	// OIDCDynamicRegistration opens the provider's dynamic registration
	// of public clients (RFC 7591) to anyone.
	OIDCDynamicRegistration bool
	// PublicURL is USERD_PUBLIC_URL: the identity providers' callbacks
	// are under it.
	PublicURL string
	// ProviderIssuer is the OpenID provider's issuer: USERD_PUBLIC_URL
	// without a trailing slash.
	ProviderIssuer string
	// RefreshReuseGrace is how long a used refresh token may be presented
	// again for the same successor; 0 turns the grace off.
	RefreshReuseGrace time.Duration
	// RequireEmailVerification refuses a login (with the right password)
	// to an account whose email is not verified.
	RequireEmailVerification bool
	// VerifyEmailURL and ResetPasswordURL are the links of the messages,
	// up to the query: "?token=T" is appended.
	VerifyEmailURL   string
	ResetPasswordURL string
	// VerifyEmailTTL and ResetPasswordTTL are the lifetimes of the link
	// tokens; zero means the domain's defaults.
	VerifyEmailTTL   time.Duration
	ResetPasswordTTL time.Duration
	// MailBudget bounds the messages the request routes send an account.
	MailBudget domain.MailBudget
	// EmailSignIn turns on the sign-in by email alone (USERD_EMAIL_SIGN_IN);
	// off, its use cases answer domain.ErrEmailSignInOff.
	EmailSignIn bool
	// EmailSignUp mails a code to an email no account has too, and makes
	// an account of it at its first right code or link
	// (USERD_EMAIL_SIGNUP).
	EmailSignUp bool
	// EmailCodeTTL is the lifetime of a sign-in code and its link; zero
	// means domain.DefaultEmailCodeTTL.
	EmailCodeTTL time.Duration
	// MagicLinkURL is the sign-in link of the message, up to the query:
	// "?token=T" is appended.
	MagicLinkURL string
	// WebhookEvents are the event types queued for the receiver; empty,
	// all of them.
	WebhookEvents []string
	// EndedSessionKeep is how long an ended session's access tokens are
	// refused by its id: the access-token lifetime plus the verifier's
	// leeway, after which they have expired anyway. 0 means
	// DefaultEndedSessionKeep.
	EndedSessionKeep time.Duration
	// AccountCacheSize is how many accounts this node keeps for its
	// signed-in requests (accountCache); 0 means DefaultAccountCacheSize,
	// and below 0 turns the cache off.
	AccountCacheSize int
	// PurgeInterval is how often Housekeeping.Run makes a pass; 0 turns it
	// off.
	PurgeInterval time.Duration
	// AuditRetention is how long audit events are kept; 0 keeps them for
	// ever.
	AuditRetention time.Duration
	// PurgeBatch is how many rows one delete of the housekeeping takes; 0
	// means DefaultPurgeBatch.
	PurgeBatch int
	// ClaimsHookFailOpen signs in without the hook's claims when the hook
	// does not answer (USERD_CLAIMS_HOOK_FAIL=open); off, such a sign-in
	// is refused as unavailable.
	ClaimsHookFailOpen bool
}

// DefaultEndedSessionKeep covers the default access-token lifetime (15
// min) and leeway (30 s).
const DefaultEndedSessionKeep = 15*time.Minute + 30*time.Second

// Services are the use cases, grouped by what they serve. Every driving
// adapter (HTTP, CLI, later the web pages) calls these, so that no rule is
// implemented twice.
type Services struct {
	Users  *UserService
	Auth   *AuthService
	Audit  *AuditService
	Import *ImportService
	Keys   *KeyService
	// Mail serves the links by mail: verification and password reset.
	Mail *MailService
	// EmailSignIn signs people in by a code or a link sent by mail.
	EmailSignIn *EmailSignInService
	// Delivery sends what the outbox holds; the server runs it.
	Delivery *DeliveryService
	// MFA serves TOTP factors, recovery codes and the admin's reset.
	MFA *MFAService
	// Passkeys serves passkey registration and passkey login.
	Passkeys *PasskeyService
	// Sessions lists and ends a user's sessions.
	Sessions *SessionService
	// OAuthClients manages the OpenID provider's clients, and finds and
	// authenticates one for the provider.
	OAuthClients *OAuthClientService
	// Provider is the OpenID provider: its flows, tokens and grants.
	Provider *ProviderService
	// IdentityProviders manages the identity providers people sign in
	// with.
	IdentityProviders *IdentityProviderService
	// Federation signs people in through the identity providers, and
	// keeps the identities linked to accounts.
	Federation *FederationService
	// Tokens makes, lists and revokes personal access tokens.
	Tokens *PersonalTokenService
	// Housekeeping deletes expired and used rows; the server runs it,
	// `userd purge` makes one pass.
	Housekeeping *HousekeepingService
}

// New builds the use cases over the ports. It does no I/O: the adapters
// behind the ports are opened and loaded by whoever runs the application,
// before it serves.
func New(deps Deps, cfg Config) (*Services, error) {
	if err := deps.check(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	deps.Stores = accountCaching(deps.Stores, cfg.AccountCacheSize, deps.AccountCacheMetrics)
	deps.Stores = outboxTracing(deps.Stores, deps.Traces)
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st := deps.Stores
	c := core{
		clock: deps.Clock, log: log,
		events:   newEvents(st.Audit, deps.Metrics, deps.Clock, log),
		throttle: passwordThrottle{attempts: st.Attempts, clock: deps.Clock, log: log},
	}
	sh := newShared(c, deps, cfg)
	svc := newServices(c, deps, cfg, sh)
	svc.Auth.personalTokens = svc.Tokens
	if deps.OAuthTokens != nil {
		svc.Provider = newProvider(c, deps, cfg, sh, svc.OAuthClients)
	}
	return svc, nil
}

// check reports every port New needs that deps lacks.
func (deps Deps) check() error {
	st := deps.Stores
	required := []struct {
		name string
		set  bool
	}{
		{"Stores.Users", st.Users != nil}, {"Stores.Tokens", st.Tokens != nil}, {"Stores.Attempts", st.Attempts != nil},
		{"Stores.Tx", st.Tx != nil}, {"Stores.Outbox", st.Outbox != nil}, {"Stores.Links", st.Links != nil},
		{"Stores.MFA", st.MFA != nil}, {"Stores.Challenges", st.Challenges != nil}, {"Stores.Passkeys", st.Passkeys != nil},
		{"Stores.OAuthClients", st.OAuthClients != nil}, {"Stores.IdentityProviders", st.IdentityProviders != nil},
		{"Stores.Identities", st.Identities != nil}, {"Stores.PersonalTokens", st.PersonalTokens != nil},
		{"Hasher", deps.Hasher != nil}, {"Issuer", deps.Issuer != nil}, {"Codec", deps.Codec != nil},
		{"Keys", deps.Keys != nil}, {"Clock", deps.Clock != nil}, {"Mailer", deps.Mailer != nil},
		{"OTP", deps.OTP != nil}, {"RelyingParty", deps.RelyingParty != nil},
	}
	var errs []error
	for _, r := range required {
		if !r.set {
			errs = append(errs, errors.New("application: Deps."+r.name+" is required"))
		}
	}
	return errors.Join(errs...)
}

// withDefaults fills the lifetimes and sizes left zero.
func (cfg Config) withDefaults() Config {
	if cfg.VerifyEmailTTL <= 0 {
		cfg.VerifyEmailTTL = domain.DefaultVerifyEmailTTL
	}
	if cfg.ResetPasswordTTL <= 0 {
		cfg.ResetPasswordTTL = domain.DefaultResetPasswordTTL
	}
	if cfg.EmailCodeTTL <= 0 {
		cfg.EmailCodeTTL = domain.DefaultEmailCodeTTL
	}
	if cfg.EndedSessionKeep <= 0 {
		cfg.EndedSessionKeep = DefaultEndedSessionKeep
	}
	if cfg.AccountCacheSize == 0 {
		cfg.AccountCacheSize = DefaultAccountCacheSize
	}
	if cfg.PurgeBatch <= 0 {
		cfg.PurgeBatch = DefaultPurgeBatch
	}
	return cfg
}

// shared are the parts several services use, each built once: the queues
// of webhooks and mail, the sender's wakeup, the set of ended sessions,
// the check of a current password, the second factors and the sign-in
// path.
type shared struct {
	webhooks    *webhookQueue
	mail        *mailQueue
	delivery    wakeup
	sessionEnds *sessionEnds
	password    currentPassword
	factors     *secondFactors
	signIn      *signInPath
	refresh     *refreshRotation
	hook        *claimsHook
}

func newShared(c core, deps Deps, cfg Config) shared {
	st := deps.Stores
	webhooks := &webhookQueue{outbox: st.Outbox, tx: st.Tx, clock: deps.Clock,
		receiver: deps.Webhooks != nil, types: cfg.WebhookEvents}
	mail := &mailQueue{outbox: st.Outbox, links: st.Links, clock: deps.Clock,
		verifyEmailTTL: cfg.VerifyEmailTTL, verifyEmailURL: cfg.VerifyEmailURL,
		resetPasswordTTL: cfg.ResetPasswordTTL, resetPasswordURL: cfg.ResetPasswordURL, budget: cfg.MailBudget,
		emailCodeTTL: cfg.EmailCodeTTL, magicLinkURL: cfg.MagicLinkURL}
	password := currentPassword{core: c, hasher: deps.Hasher}
	sessionEnds := newSessionEnds(cfg.EndedSessionKeep, st.SessionEndings, deps.Clock, c.log)
	var hook *claimsHook
	if deps.ClaimsHook != nil {
		hook = &claimsHook{hook: deps.ClaimsHook, failOpen: cfg.ClaimsHookFailOpen, metrics: deps.HookMetrics,
			clock: deps.Clock, log: c.log}
	}
	return shared{
		hook:     hook,
		webhooks: webhooks, mail: mail, delivery: make(wakeup, 1), password: password,
		sessionEnds: sessionEnds,
		refresh: &refreshRotation{core: c, tokens: st.Tokens, codec: deps.Codec, tx: st.Tx, webhooks: webhooks,
			sessionEnds: sessionEnds, refreshTTL: cfg.RefreshTTL, reuseGrace: cfg.RefreshReuseGrace},
		factors: &secondFactors{core: c, users: st.Users, mfa: st.MFA, otp: deps.OTP,
			webhooks: webhooks, mail: mail, password: password},
		signIn: &signInPath{core: c, users: st.Users, mfa: st.MFA, challenges: st.Challenges, tokens: st.Tokens,
			codec: deps.Codec, issuer: deps.Issuer, tx: st.Tx, webhooks: webhooks, hook: hook,
			requireEmailVerification: cfg.RequireEmailVerification,
			refreshTTL:               cfg.RefreshTTL, refreshFamilyTTL: cfg.RefreshFamilyTTL,
			endedSessionKeep: cfg.EndedSessionKeep, reuseGrace: cfg.RefreshReuseGrace},
	}
}

// newServices gives each service the ports and shared parts it uses, and
// nothing else.
func newServices(c core, deps Deps, cfg Config, sh shared) *Services {
	st := deps.Stores
	return &Services{
		Users: &UserService{core: c, userPorts: userPorts{users: st.Users, tokens: st.Tokens, links: st.Links,
			tx: st.Tx, hasher: deps.Hasher, password: sh.password, mail: sh.mail, webhooks: sh.webhooks,
			sessionEnds: sh.sessionEnds, delivery: sh.delivery,
			openRegistration: cfg.OpenRegistration, requireCurrentPassword: cfg.RequireCurrentPassword}},
		Auth: &AuthService{core: c, authPorts: authPorts{users: st.Users, tokens: st.Tokens, codec: deps.Codec,
			issuer: deps.Issuer, hasher: deps.Hasher, mfa: st.MFA, tx: st.Tx, signIn: sh.signIn, factors: sh.factors,
			webhooks: sh.webhooks, sessionEnds: sh.sessionEnds, refresh: sh.refresh, hook: sh.hook}},
		Audit:  &AuditService{users: st.Users, audit: st.Audit},
		Import: &ImportService{core: c, users: st.Users, hasher: deps.Hasher},
		Keys:   &KeyService{core: c, users: st.Users, keys: deps.Keys},
		Mail: &MailService{core: c, mailPorts: mailPorts{users: st.Users, links: st.Links, outbox: st.Outbox,
			tokens: st.Tokens, tx: st.Tx, hasher: deps.Hasher, mail: sh.mail, webhooks: sh.webhooks,
			sessionEnds: sh.sessionEnds, delivery: sh.delivery}},
		EmailSignIn: &EmailSignInService{core: c, emailSignInPorts: emailSignInPorts{users: st.Users, links: st.Links,
			outbox: st.Outbox, tx: st.Tx, signIn: sh.signIn, webhooks: sh.webhooks, delivery: sh.delivery,
			enabled: cfg.EmailSignIn, signUp: cfg.EmailSignIn && cfg.EmailSignUp}},
		Delivery: &DeliveryService{core: c, deliveryPorts: deliveryPorts{outbox: st.Outbox, mailer: deps.Mailer,
			webhookSender: deps.Webhooks, outboxMetrics: deps.OutboxMetrics, users: st.Users, links: st.Links,
			tx: st.Tx, mail: sh.mail, budget: cfg.MailBudget, wakeup: sh.delivery, traces: deps.Traces,
			emailSignUp: cfg.EmailSignIn && cfg.EmailSignUp}},
		MFA: &MFAService{core: c, mfaPorts: mfaPorts{users: st.Users, mfa: st.MFA, otp: deps.OTP, passkeys: st.Passkeys,
			tokens: st.Tokens, tx: st.Tx, factors: sh.factors, webhooks: sh.webhooks, sessionEnds: sh.sessionEnds,
			delivery: sh.delivery}},
		Passkeys: &PasskeyService{core: c, passkeyPorts: passkeyPorts{users: st.Users, passkeys: st.Passkeys,
			rp: deps.RelyingParty, tx: st.Tx, factors: sh.factors, signIn: sh.signIn, delivery: sh.delivery}},
		Sessions: &SessionService{core: c, sessionPorts: sessionPorts{users: st.Users, tokens: st.Tokens, clients: st.OAuthClients,
			webhooks: sh.webhooks, sessionEnds: sh.sessionEnds}},
		OAuthClients: &OAuthClientService{core: c, oauthClientPorts: oauthClientPorts{users: st.Users,
			clients: st.OAuthClients, tx: st.Tx, webhooks: sh.webhooks, sessionEnds: sh.sessionEnds,
			revoker: st.ClientRevoker, dynamicRegistration: cfg.OIDCDynamicRegistration}},
		IdentityProviders: &IdentityProviderService{core: c, identityProviderPorts: identityProviderPorts{users: st.Users,
			providers: st.IdentityProviders}},
		Federation: &FederationService{core: c, identityPorts: identityPorts{users: st.Users, providers: st.IdentityProviders,
			identities: st.Identities, passkeys: st.Passkeys, tx: st.Tx, webhooks: sh.webhooks, upstream: deps.Upstream,
			signIn: sh.signIn, callbackBase: strings.TrimRight(cfg.PublicURL, "/")}},
		Tokens: &PersonalTokenService{core: c, personalTokenPorts: personalTokenPorts{users: st.Users,
			tokens: st.PersonalTokens, webhooks: sh.webhooks}},
		Housekeeping: &HousekeepingService{core: c, purger: st.Purger, lock: st.Lock, metrics: deps.PurgeMetrics,
			cfg: housekeepingConfig{endedSessionKeep: cfg.EndedSessionKeep, reuseGrace: cfg.RefreshReuseGrace,
				auditRetention: cfg.AuditRetention, purgeBatch: cfg.PurgeBatch, purgeInterval: cfg.PurgeInterval}},
	}
}

// newProvider builds the OpenID provider's use cases.
func newProvider(c core, deps Deps, cfg Config, sh shared, clients *OAuthClientService) *ProviderService {
	st := deps.Stores
	return &ProviderService{core: c, providerPorts: providerPorts{users: st.Users, clients: clients,
		requests: st.AuthRequests, grants: st.Grants, tokens: st.Tokens, codec: deps.Codec, oauthTokens: deps.OAuthTokens,
		tx: st.Tx, webhooks: sh.webhooks, sessionEnds: sh.sessionEnds, refresh: sh.refresh, hook: sh.hook,
		issuer: cfg.ProviderIssuer, refreshTTL: cfg.RefreshTTL, refreshFamilyTTL: cfg.RefreshFamilyTTL}}
}
