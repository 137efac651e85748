package application

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// SignInResult is the outcome of a sign-in that proved who the person is:
// the tokens of the session it opened, or, for an account that asks for a
// second factor, the challenge of the second step. Exactly one is set. A
// sign-in that did not prove it (a wrong password, a locked email) is an
// error instead.
type SignInResult struct {
	Tokens     *TokenPair
	SecondStep *SecondStepChallenge
}

// SecondStepChallenge is a sign-in waiting for a second factor: no session
// yet, but the token its second step is sent with.
type SecondStepChallenge struct {
	// MFAToken is the mfaToken (43 characters), shown once.
	MFAToken string
	// Methods are the second factors the account can use, in the order
	// totp, recovery_code, passkey (domain.MFAMethod…).
	Methods []string
}

// signInPath is the one way a sign-in ends, whatever proved the person
// (ory/kratos's login hooks beside its strategies): a method (a password,
// a passkey, and every later one) only proves who the person is and hands
// that over as authenticated to complete; the second step's methods go
// through secondStep. Here, once, are the checks (a disabled account, an
// unverified email), the lock-out's bookkeeping of the proof, the second
// step when the account has a second factor, the session with its amr,
// the tokens, the audit event and the webhook.
type signInPath struct {
	core
	users      ports.UserRepository
	mfa        ports.MFAStore
	challenges ports.MFAChallengeStore
	tokens     ports.RefreshTokenStore
	codec      ports.RefreshTokenCodec
	issuer     ports.TokenIssuer
	tx         ports.Transactor
	webhooks   *webhookQueue
	hook       *claimsHook
	// requireEmailVerification refuses a session to an account whose
	// email is not verified (Config.RequireEmailVerification).
	requireEmailVerification bool
	// The lifetimes of a session and of its refresh tokens (Config).
	refreshTTL       time.Duration
	refreshFamilyTTL time.Duration
	endedSessionKeep time.Duration
	reuseGrace       time.Duration
}

// authenticated is what a sign-in method proved: who the person is, and
// how.
type authenticated struct {
	user domain.User
	amr  domain.AMR
	// at is when it was proved, the session's auth_time; zero is when
	// the session opens.
	at time.Time
	// counted is the email whose check the method reserved under the
	// lock-out before making it (a password's); empty for a method the
	// lock-out does not count. The email's failures are forgotten once
	// the session opens; when a second step follows, only the reservation
	// is given back (docs/mfa.md says why).
	counted domain.Email
	// secondFactor says the method was one of the account's second
	// factors itself (a passkey): no second step follows.
	secondFactor bool
	// accepted, when set, runs once the account may go on, before the
	// session or the second step opens (a password's rehash); it returns
	// the account as it stands after it.
	accepted func(context.Context, domain.User) domain.User
}

// complete ends a sign-in that a method proved: the second step when the
// account has a second factor, the session otherwise.
func (p *signInPath) complete(ctx context.Context, a authenticated) (SignInResult, error) {
	if a.user.MFAEnabled && !a.secondFactor {
		res, err := p.requireSecondStep(ctx, a)
		if !errors.Is(err, errNoSecondFactor) {
			return res, err
		}
	}
	if a.counted != "" {
		if err := p.throttle.succeeded(ctx, a.counted); err != nil {
			return SignInResult{}, err
		}
	}
	// The proof was right: only now may the answer tell what stands in
	// the way, which would otherwise tell a guesser about the account.
	if err := p.mayOpenSession(ctx, a.user); err != nil {
		return SignInResult{}, err
	}
	user := a.user
	if a.accepted != nil {
		user = a.accepted(ctx, user)
	}
	at := a.at
	if at.IsZero() {
		at = p.clock.Now()
	}
	// The hook is asked before the session exists: a refusal opens none.
	sid := newFamilyID()
	claims, err := p.hook.forUser(ctx, domain.ClaimsGrantSignIn, user, sid, a.amr, "", nil)
	if err != nil {
		return SignInResult{}, err
	}
	pair, err := p.openSession(ctx, user, a.amr, at, newSession{id: sid, claims: claims})
	if err != nil {
		return SignInResult{}, err
	}
	return p.signedIn(ctx, pair, a.amr), nil
}

// requireSecondStep answers a proof for an account with a second factor:
// no session, but an mfaToken for the second step, and the methods the
// account can use.
//
// The proof's reservation under the lock-out is given back rather than
// the count reset: the failures of the email (wrong passwords, and wrong
// codes of earlier attempts) are forgotten only when the whole sign-in
// succeeds. Were a right password to reset them, whoever holds the
// password could try five codes, wait out the 30 s lock, and start again
// with the password: some 14,000 guesses a day at a one-in-a-million code
// that three accepted time steps make three times likelier (docs/mfa.md).
func (p *signInPath) requireSecondStep(ctx context.Context, a authenticated) (SignInResult, error) {
	email := a.user.Email
	if a.counted != "" {
		email = a.counted
		_ = p.throttle.unchecked(ctx, a.counted, nil)
	}
	if err := p.mayOpenSession(ctx, a.user); err != nil {
		return SignInResult{}, err
	}
	summary, err := p.mfa.Summary(ctx, a.user.ID)
	if err != nil {
		return SignInResult{}, fmt.Errorf("mfa summary: %w", err)
	}
	if !summary.Enabled() {
		// MFAEnabled is kept in the factors' transactions; should it ever
		// disagree, the factors decide, and the sign-in is not held up.
		p.log.LogAttrs(ctx, slog.LevelWarn, "mfaEnabled set without a factor", slog.String("user_id", a.user.ID.String()))
		return SignInResult{}, errNoSecondFactor
	}
	if a.accepted != nil {
		a.accepted(ctx, a.user)
	}
	now := a.at
	if now.IsZero() {
		now = p.clock.Now()
	}
	token, hash := domain.NewMFAToken()
	err = p.challenges.CreateChallenge(ctx, domain.MFAChallenge{
		Hash: hash, UserID: a.user.ID, Email: email, FirstFactor: a.amr[0], CreatedAt: now,
		ExpiresAt: now.Add(domain.MFAChallengeTTL),
	})
	if err != nil {
		return SignInResult{}, fmt.Errorf("create mfa challenge: %w", err)
	}
	p.log.LogAttrs(ctx, slog.LevelInfo, "second factor required", slog.String("user_id", a.user.ID.String()))
	return SignInResult{SecondStep: &SecondStepChallenge{MFAToken: token, Methods: summary.Methods()}}, nil
}

// errNoSecondFactor makes complete go on as for an account without a
// second factor.
var errNoSecondFactor = errors.New("no second factor")

// mayOpenSession refuses a session to a disabled account, and to one whose
// email is not verified when the deployment requires it; each refusal is a
// failed login in the audit trail.
func (p *signInPath) mayOpenSession(ctx context.Context, u domain.User) error {
	switch {
	case u.Disabled:
		p.events.note(ctx, domain.LoginFailedEvent("", u.ID, domain.CheckLogin, domain.FailureAccountDisabled))
		return domain.ErrAccountDisabled
	case p.requireEmailVerification && !u.EmailVerified:
		p.events.note(ctx, domain.LoginFailedEvent("", u.ID, domain.CheckLogin, domain.FailureEmailNotVerified))
		return domain.ErrEmailNotVerified
	}
	return nil
}

// secondFactor is how a method of the second step checks its factor, and
// what the sign-in records of it. verify or spend returns
// wrongFactor(answer) for a factor that was checked and is wrong: it
// counts against the challenge and the email, and the caller is answered
// answer. Any other error gives the email's reservation back.
type secondFactor struct {
	// method is the factor's amr value (domain.MethodOTP, …); the
	// session records it after the first factor's (domain.SecondStepAMR).
	method string
	// wrong is the failure the audit trail records of a wrong factor.
	wrong domain.LoginFailure
	// verify, when set, checks the factor before the session may open,
	// outside the session's transaction (a passkey's assertion).
	verify func(ctx context.Context, user domain.User) error
	// spend, when set, checks and spends the factor in the transaction
	// that opens the session (a TOTP step, a recovery code): it is spent
	// only with the session it opens. The code is spent, the challenge
	// used, the lock-out cleared and the session opened in one commit
	// instead of four, which on PostgreSQL is most of the step's time.
	spend func(ctx context.Context, user domain.User) error
	// spent, when set, runs once the session is committed.
	spent func(ctx context.Context, user domain.User)
}

// wrongFactorError is a second factor that was checked and is wrong.
type wrongFactorError struct{ answer error }

func (e *wrongFactorError) Error() string { return e.answer.Error() }

func (e *wrongFactorError) Unwrap() error { return e.answer }

// wrongFactor marks answer as the answer to a wrong second factor.
func wrongFactor(answer error) error { return &wrongFactorError{answer: answer} }

// secondStep finishes the sign-in waiting for the second step of mfaToken
// with the factor f.
func (p *signInPath) secondStep(ctx context.Context, mfaToken string, f secondFactor) (SignInResult, error) {
	step, err := p.beginSecondStep(ctx, mfaToken)
	if err != nil {
		return SignInResult{}, err
	}
	if f.verify != nil {
		if err := f.verify(ctx, step.user); err != nil {
			return SignInResult{}, p.secondStepFailed(ctx, step, f.wrong, err)
		}
	}
	if err := p.mayOpenSession(ctx, step.user); err != nil {
		return SignInResult{}, p.throttle.unchecked(ctx, step.challenge.Email, err)
	}
	amr := domain.SecondStepAMR(step.challenge.FirstFactor, f.method)
	// The hook is asked outside the transaction, and before the session
	// exists. A refusal is answered only once the factor is checked: the
	// transaction spends it and is then rolled back, so that the factor
	// and the challenge stay as they were and a wrong code still counts.
	next := newSession{id: newFamilyID()}
	var refused error
	next.claims, refused = p.hook.forUser(ctx, domain.ClaimsGrantSignIn, step.user, next.id, amr, "", nil)
	var pair TokenPair
	err = p.tx.WithinTx(ctx, func(ctx context.Context) error {
		if f.spend != nil {
			if err := f.spend(ctx, step.user); err != nil {
				return err
			}
		}
		if refused != nil {
			return refused
		}
		var err error
		pair, err = p.finishSecondStep(ctx, step, amr, next)
		return err
	})
	if err != nil {
		return SignInResult{}, p.secondStepFailed(ctx, step, f.wrong, err)
	}
	if f.spent != nil {
		f.spent(ctx, step.user)
	}
	return p.signedIn(ctx, pair, amr), nil
}

// pendingSecondStep is the account of a sign-in waiting for the second
// step of mfaToken, without checking anything of it: for beginning a
// passkey ceremony of the account.
func (p *signInPath) pendingSecondStep(ctx context.Context, mfaToken string) (domain.User, error) {
	if !domain.WellFormedMFAToken(mfaToken) {
		return domain.User{}, domain.ErrInvalidMFAToken
	}
	ch, err := p.challenges.Challenge(ctx, domain.HashMFAToken(mfaToken), p.clock.Now())
	if err != nil {
		return domain.User{}, err
	}
	user, err := p.users.ByID(ctx, ch.UserID)
	if errors.Is(err, domain.ErrUserNotFound) {
		return domain.User{}, domain.ErrInvalidMFAToken
	}
	return user, err
}

// waitingStep is a second step under way: its challenge, the account, and
// the check of its email reserved under the lock-out.
type waitingStep struct {
	challenge domain.MFAChallenge
	user      domain.User
	reserved  domain.LoginAttempts
}

// beginSecondStep finds the usable challenge of an mfaToken and its user,
// and reserves one check of its email under the lock-out.
func (p *signInPath) beginSecondStep(ctx context.Context, token string) (waitingStep, error) {
	if !domain.WellFormedMFAToken(token) {
		return waitingStep{}, domain.ErrInvalidMFAToken
	}
	ch, err := p.challenges.Challenge(ctx, domain.HashMFAToken(token), p.clock.Now())
	if err != nil {
		return waitingStep{}, err
	}
	rec, err := p.throttle.reserve(ctx, ch.Email)
	if err != nil {
		if tooMany, ok := errors.AsType[*domain.TooManyAttemptsError](err); ok {
			p.events.note(ctx, domain.LoginThrottledEvent("", ch.UserID, domain.CheckSecondFactor, "", tooMany.RetryAfter))
		}
		return waitingStep{}, err
	}
	user, err := p.users.ByID(ctx, ch.UserID)
	if errors.Is(err, domain.ErrUserNotFound) {
		return waitingStep{}, p.throttle.unchecked(ctx, ch.Email, domain.ErrInvalidMFAToken)
	}
	if err != nil {
		return waitingStep{}, p.throttle.unchecked(ctx, ch.Email, err)
	}
	return waitingStep{challenge: ch, user: user, reserved: rec}, nil
}

// secondStepFailed answers the error of a second step: a wrong factor
// (wrongFactor) counts against the challenge and the email and is
// recorded as why; any other error gives the email's reservation back.
func (p *signInPath) secondStepFailed(ctx context.Context, step waitingStep, why domain.LoginFailure, err error) error {
	wrong, ok := errors.AsType[*wrongFactorError](err)
	if !ok {
		return p.throttle.unchecked(ctx, step.challenge.Email, err)
	}
	ch := step.challenge
	if _, err := p.challenges.FailChallenge(ctx, ch.Hash, p.clock.Now()); err != nil && !errors.Is(err, domain.ErrInvalidMFAToken) {
		p.log.LogAttrs(ctx, slog.LevelWarn, "wrong second factor not counted", slog.String("error", err.Error()))
	}
	_ = p.throttle.failed(ctx, step.reserved)
	p.events.note(ctx, domain.LoginFailedEvent("", ch.UserID, domain.CheckSecondFactor, why))
	return wrong.answer
}

// finishSecondStep uses the challenge up, clears the email's lock-out and
// opens a session that signed in by amr, in the transaction of ctx; the
// sign-in is recorded (signedIn) once it has committed.
func (p *signInPath) finishSecondStep(ctx context.Context, step waitingStep, amr domain.AMR, next newSession) (TokenPair, error) {
	now := p.clock.Now()
	if _, err := p.challenges.UseChallenge(ctx, step.challenge.Hash, now); err != nil {
		return TokenPair{}, err
	}
	if err := p.throttle.succeeded(ctx, step.challenge.Email); err != nil {
		return TokenPair{}, err
	}
	return p.openSession(ctx, step.user, amr, now, next)
}

// signedIn records the sign-in of a session opened by amr, and returns
// its result.
func (p *signInPath) signedIn(ctx context.Context, pair TokenPair, amr domain.AMR) SignInResult {
	p.log.LogAttrs(ctx, slog.LevelInfo, "login succeeded", slog.String("user_id", pair.User.ID.String()))
	p.events.note(ctx, domain.LoginSucceededEvent(pair.User.ID, amr))
	return SignInResult{Tokens: &pair}
}

// newSession is the id of a session about to open, and the claims the
// hook gave its first access token.
type newSession struct {
	id     string
	claims domain.HookClaims
}

// openSession starts the refresh-token family next for the user, signed
// in at now by amr, and returns the first token pair. The family lasts
// the deployment's session lifetime, or less when the request's client
// keeps shorter limits (sessionLimits).
func (p *signInPath) openSession(ctx context.Context, user domain.User, amr domain.AMR, now time.Time, next newSession) (TokenPair, error) {
	token := p.codec.New()
	meta := domain.RequestMetaFrom(ctx)
	lifetime, idle := p.sessionLimits(meta.SessionLimits)
	family := domain.RefreshFamily{
		ID:          next.id,
		UserID:      user.ID,
		CreatedAt:   now,
		ExpiresAt:   now.Add(lifetime),
		AMR:         amr.Clone(),
		LastUsedAt:  now,
		IdleTimeout: idle,
		UserAgent:   domain.SessionUserAgent(meta.UserAgent),
		IP:          meta.ClientIP,
	}
	rec := domain.RefreshToken{
		Hash:      p.codec.Hash(token),
		FamilyID:  family.ID,
		UserID:    user.ID,
		IssuedAt:  now,
		ExpiresAt: minTime(now.Add(p.refreshTTL), family.ExpiresAt),
	}
	create := func(ctx context.Context) error {
		if err := p.tokens.CreateFamily(ctx, family, rec); err != nil {
			return fmt.Errorf("create session: %w", err)
		}
		return p.webhooks.emit(ctx, domain.WebhookSessionCreated, user.ID, map[string]any{"sessionId": family.ID, "amr": []string(amr)})
	}
	if err := p.webhooks.inTxFor(ctx, domain.WebhookSessionCreated, create); err != nil {
		return TokenPair{}, err
	}
	return issuePair(ctx, p.issuer, user, domain.SessionOf(family), next.claims, token, rec.ExpiresAt)
}

// sessionLimits are the lifetime and idle timeout of a family opened
// under lim. The idle timeout counts from the family's last refresh,
// which a client that refreshes when a request finds its access token
// expired makes at most an access token's lifetime (and the verifier's
// leeway: EndedSessionKeep) before its last request; a repeat within the
// reuse grace issues an access token without moving it. Past that sum
// the client has ended the session, and every access token of it has
// expired.
func (p *signInPath) sessionLimits(lim domain.SessionLimits) (lifetime, idle time.Duration) {
	lifetime = p.refreshFamilyTTL
	if lim.Absolute > 0 {
		lifetime = min(lifetime, lim.Absolute)
	}
	if lim.Idle > 0 {
		idle = lim.Idle + p.endedSessionKeep + p.reuseGrace
	}
	return lifetime, idle
}
