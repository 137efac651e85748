package application

import (
	"errors"
	"log/slog"
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
	// OutboxMetrics, when set, counts what the sender does.
	OutboxMetrics ports.OutboxMetrics
	// PurgeMetrics, when set, counts the rows housekeeping deleted.
	PurgeMetrics ports.PurgeMetrics
	Metrics      ports.SecurityMetrics
	Clock        ports.Clock
	Log          *slog.Logger
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
	// WebhookEvents are the event types queued for the receiver; empty,
	// all of them.
	WebhookEvents []string
	// EndedSessionKeep is how long an ended session's access tokens are
	// refused by its id: the access-token lifetime plus the verifier's
	// leeway, after which they have expired anyway. 0 means
	// DefaultEndedSessionKeep.
	EndedSessionKeep time.Duration
	// PurgeInterval is how often Housekeeping.Run makes a pass; 0 turns it
	// off.
	PurgeInterval time.Duration
	// AuditRetention is how long audit events are kept; 0 keeps them for
	// ever.
	AuditRetention time.Duration
	// PurgeBatch is how many rows one delete of the housekeeping takes; 0
	// means DefaultPurgeBatch.
	PurgeBatch int
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
	// Delivery sends what the outbox holds; the server runs it.
	Delivery *DeliveryService
	// MFA serves TOTP factors, recovery codes and the admin's reset.
	MFA *MFAService
	// Passkeys serves passkey registration and passkey login.
	Passkeys *PasskeyService
	// Sessions lists and ends a user's sessions.
	Sessions *SessionService
	// Housekeeping deletes expired and used rows; the server runs it,
	// `userd purge` makes one pass.
	Housekeeping *HousekeepingService
}

// base is what every service shares: the ports, the configuration, the
// events recorder and the lock-out.
type base struct {
	users  ports.UserRepository
	tx     ports.Transactor
	outbox ports.Outbox
	links  ports.LinkTokenStore
	mailer ports.Mailer
	mfa    ports.MFAStore
	// challenges are the mfaTokens of logins waiting for a second factor.
	challenges ports.MFAChallengeStore
	passkeys   ports.PasskeyStore
	otp        ports.OneTimePasswords
	rp         ports.PasskeyRelyingParty
	webhooks   ports.WebhookSender
	// delivery is the sender, which use cases that queue a message wake.
	delivery      *DeliveryService
	outboxMetrics ports.OutboxMetrics
	tokens        ports.RefreshTokenStore
	hasher        ports.PasswordHasher
	issuer        ports.TokenIssuer
	codec         ports.RefreshTokenCodec
	keys          ports.AccessTokenKeys
	audit         ports.AuditLog
	clock         ports.Clock
	log           *slog.Logger
	cfg           Config
	events        *events
	throttle      passwordThrottle
	// ended are the sessions ended lately, here or on another node;
	// endings tells the other nodes (nil: none).
	ended   *endedSessions
	endings ports.SessionEndings
}

// New builds the use cases over the ports. It does no I/O: the adapters
// behind the ports are opened and loaded by whoever runs the application,
// before it serves.
func New(deps Deps, cfg Config) (*Services, error) {
	st := deps.Stores
	required := []struct {
		name string
		set  bool
	}{
		{"Stores.Users", st.Users != nil}, {"Stores.Tokens", st.Tokens != nil}, {"Stores.Attempts", st.Attempts != nil},
		{"Stores.Tx", st.Tx != nil}, {"Stores.Outbox", st.Outbox != nil}, {"Stores.Links", st.Links != nil},
		{"Stores.MFA", st.MFA != nil}, {"Stores.Challenges", st.Challenges != nil}, {"Stores.Passkeys", st.Passkeys != nil},
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
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.VerifyEmailTTL <= 0 {
		cfg.VerifyEmailTTL = domain.DefaultVerifyEmailTTL
	}
	if cfg.ResetPasswordTTL <= 0 {
		cfg.ResetPasswordTTL = domain.DefaultResetPasswordTTL
	}
	if cfg.EndedSessionKeep <= 0 {
		cfg.EndedSessionKeep = DefaultEndedSessionKeep
	}
	if cfg.PurgeBatch <= 0 {
		cfg.PurgeBatch = DefaultPurgeBatch
	}
	b := &base{
		users: st.Users, tx: st.Tx, outbox: st.Outbox, links: st.Links, mailer: deps.Mailer,
		mfa: st.MFA, challenges: st.Challenges, passkeys: st.Passkeys, otp: deps.OTP, rp: deps.RelyingParty,
		webhooks:      deps.Webhooks,
		outboxMetrics: deps.OutboxMetrics,
		tokens:        st.Tokens, hasher: deps.Hasher, issuer: deps.Issuer,
		codec: deps.Codec, keys: deps.Keys, audit: st.Audit, clock: deps.Clock, log: log, cfg: cfg,
		events:   newEvents(st.Audit, deps.Metrics, deps.Clock, log),
		throttle: passwordThrottle{attempts: st.Attempts, clock: deps.Clock, log: log},
		ended:    newEndedSessions(cfg.EndedSessionKeep),
		endings:  st.SessionEndings,
	}
	if b.endings != nil {
		b.endings.Subscribe(func(sids []string) { b.ended.add(b.clock.Now(), sids...) })
	}
	auth := &AuthService{base: b}
	return &Services{
		Users:    &UserService{b},
		Auth:     auth,
		Audit:    &AuditService{b},
		Import:   &ImportService{b},
		Keys:     &KeyService{b},
		Mail:     &MailService{b},
		Delivery: newDeliveryService(b),
		MFA:      &MFAService{b},
		Passkeys: &PasskeyService{base: b, auth: auth},
		Sessions: &SessionService{b},
		Housekeeping: &HousekeepingService{base: b, purger: st.Purger, lock: st.Lock,
			metrics: deps.PurgeMetrics},
	}, nil
}
