package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/userd/userd/test/softauthn"
)

// The second-factor scenarios, mfa and passkey, count one request a step:
// POST /auth/login/mfa with an mfaToken and an unused recovery code, and
// POST /auth/passkey/finish with a signed assertion. What each of those
// needs costs more than the request itself (an mfaToken is a password
// login, ~25 ms of argon2id; an assertion is a ceremony begun and signed),
// so the requests are prepared just before each point, outside the
// measured time, and the point runs until they are spent rather than for
// --duration: --mfa-steps and --passkey-steps requests, after a warm-up of
// a tenth as many (at least one a worker).

// The relying party a started server is given and the origin the
// software authenticator writes in its client data. The origin need not
// be where userd listens: it is the page a browser would be on.
const (
	passkeyRPID   = "localhost"
	passkeyOrigin = "http://localhost:8080" //nolint:gosec // G101: an origin (a URL), not a credential; the name says passkey
)

// recoveryCodes is how many recovery codes a TOTP enrolment answers.
const recoveryCodes = 10

// preparedLimit bounds a point of prepared requests: the mfaTokens and
// the ceremonies live 5 minutes from their making.
const preparedLimit = 4 * time.Minute

// measurePrepared prepares the requests of one point of the mfa or
// passkey scenario and measures them.
func (t *target) measurePrepared(ctx context.Context, cfg *config, sc, backend string, conc int, mon *procMon, logf func(string, ...any)) (Point, error) {
	n := cfg.mfaSteps
	if sc == "passkey" {
		n = cfg.passkeySteps
	}
	warm := 0
	if cfg.warmup > 0 {
		warm = max(conc, n/10)
	}
	start := time.Now()
	var (
		u         *url.URL
		warmQ, mq [][][]byte
		err       error
	)
	switch sc {
	case "mfa":
		u = t.ref("/auth/login/mfa")
		warmQ, mq, err = t.prepareMFA(ctx, cfg.seedConc, conc, warm, n)
	case "passkey":
		u = t.ref("/auth/passkey/finish")
		warmQ, mq, err = t.preparePasskey(ctx, cfg.seedConc, conc, warm, n)
	default:
		return Point{}, fmt.Errorf("%s is not a scenario of prepared requests", sc)
	}
	if err != nil {
		return Point{}, fmt.Errorf("%s c=%d: prepare: %w", sc, conc, err)
	}
	logf("%s: %-7s c=%-3d prepared %d requests (%d of them for the warm-up) in %.1f s",
		backend, sc, conc, warm+n, warm, time.Since(start).Seconds())
	return measureRun(ctx, cfg, sc, backend, conc, mon,
		func() { runPoint(ctx, t.spendStep(u, warmQ), conc, preparedLimit, cfg.maxRequests) },
		func() pointResult { return runPoint(ctx, t.spendStep(u, mq), conc, preparedLimit, cfg.maxRequests) },
	), nil
}

// spendStep: worker w posts the bodies of queues[w] in turn, expecting 200,
// and is spent after the last.
func (t *target) spendStep(u *url.URL, queues [][][]byte) func(w int) step {
	return func(w int) step {
		q := queues[w]
		return func() error {
			if len(q) == 0 {
				return errSpent
			}
			body := q[0]
			q = q[1:]
			return do(t.hc, newPost(u, nil, body), http.StatusOK, nil)
		}
	}
}

// share is how many of total requests dealt round conc workers worker w
// gets.
func share(total, conc, w int) int {
	n := total / conc
	if w < total%conc {
		n++
	}
	return n
}

// deal gives item i to worker i % conc.
func deal(items [][]byte, conc int) [][][]byte {
	q := make([][][]byte, conc)
	for i, it := range items {
		q[i%conc] = append(q[i%conc], it)
	}
	return q
}

// newAccount has the admin create an account of the loader's own and
// logs it in; it answers the account's bearer and login body.
func (t *target) newAccount(kind string) ([]string, []byte, error) {
	k := t.accounts.Add(1)
	email := fmt.Sprintf("%s-%s-%06d@example.com", kind, t.runTag, k)
	body := fmt.Appendf(nil, `{"name":"Load %s %d","email":%q,"password":%q}`, kind, k, email, userPassword)
	if err := do(t.hc, newPost(t.usersURL, t.adminAuth, body), http.StatusCreated, nil); err != nil {
		return nil, nil, fmt.Errorf("create %s account: %w", kind, err)
	}
	lb := loginBody(email, userPassword)
	tr, err := t.login(lb)
	if err != nil {
		return nil, nil, fmt.Errorf("log in %s account: %w", kind, err)
	}
	return bearer(tr.AccessToken), lb, nil
}

// totpAccount is an account with a confirmed TOTP factor.
type totpAccount struct {
	loginBody []byte
	codes     []string // its unused recovery codes
}

// enrolTOTP makes n accounts with a confirmed TOTP factor: create, log in,
// begin the enrolment with the password, confirm it with a code of the
// secret, and keep the recovery codes the confirmation answers.
func (t *target) enrolTOTP(ctx context.Context, n, conc int) ([]totpAccount, error) {
	begin, confirm := t.ref("/api/users/me/mfa/totp"), t.ref("/api/users/me/mfa/totp/confirm")
	accounts := make([]totpAccount, n)
	err := parallel(ctx, n, conc, func(i int) error {
		auth, lb, err := t.newAccount("mfa")
		if err != nil {
			return err
		}
		var enrolment struct {
			Secret string `json:"secret"`
		}
		if err := do(t.hc, newPost(begin, auth, fmt.Appendf(nil, `{"currentPassword":%q}`, userPassword)), http.StatusCreated, &enrolment); err != nil {
			return fmt.Errorf("begin TOTP: %w", err)
		}
		code, err := totp.GenerateCodeCustom(enrolment.Secret, time.Now(), totp.ValidateOpts{
			Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1,
		})
		if err != nil {
			return fmt.Errorf("TOTP code: %w", err)
		}
		var rc struct {
			RecoveryCodes []string `json:"recoveryCodes"`
		}
		if err := do(t.hc, newPost(confirm, auth, fmt.Appendf(nil, `{"code":%q}`, code)), http.StatusOK, &rc); err != nil {
			return fmt.Errorf("confirm TOTP: %w", err)
		}
		if len(rc.RecoveryCodes) != recoveryCodes {
			return fmt.Errorf("confirm TOTP: %d recovery codes, want %d", len(rc.RecoveryCodes), recoveryCodes)
		}
		accounts[i] = totpAccount{loginBody: lb, codes: rc.RecoveryCodes}
		return nil
	})
	return accounts, err
}

// mfaToken logs in an account with a second factor and returns the
// mfaToken of its 401 mfa_required.
func (t *target) mfaToken(loginBody []byte) (string, error) {
	var p struct {
		Code     string `json:"code"`
		MFAToken string `json:"mfaToken"`
	}
	if err := do(t.hc, newPost(t.loginURL, nil, loginBody), http.StatusUnauthorized, &p); err != nil {
		return "", fmt.Errorf("password login for an mfaToken: %w", err)
	}
	if p.MFAToken == "" {
		return "", fmt.Errorf("password login: 401 %q without an mfaToken", p.Code)
	}
	return p.MFAToken, nil
}

// prepareMFA enrols enough fresh TOTP accounts for warm+n recovery codes
// and logs in once per code for an mfaToken. The bodies are in
// code-major order, so that requests in flight together are mostly of
// different accounts; the first warm are the warm-up's.
func (t *target) prepareMFA(ctx context.Context, seedConc, conc, warm, n int) (warmQ, q [][][]byte, err error) {
	total := warm + n
	accounts, err := t.enrolTOTP(ctx, (total+recoveryCodes-1)/recoveryCodes, seedConc)
	if err != nil {
		return nil, nil, err
	}
	bodies := make([][]byte, total)
	err = parallel(ctx, total, seedConc, func(i int) error {
		a := accounts[i%len(accounts)]
		token, err := t.mfaToken(a.loginBody)
		if err != nil {
			return err
		}
		bodies[i] = fmt.Appendf(nil, `{"mfaToken":%q,"recoveryCode":%q}`, token, a.codes[i/len(accounts)])
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return deal(bodies[:warm], conc), deal(bodies[warm:], conc), nil
}

// ceremony is the answer that begins a passkey ceremony.
type ceremony struct {
	CeremonyID string          `json:"ceremonyId"`
	PublicKey  json.RawMessage `json:"publicKey"`
}

// ensurePasskeys gives each of conc workers an account with a passkey, held
// by an authenticator of its own: the signature counter of a passkey must
// move forward, which holds when one worker sends its assertions in the
// order they were signed.
func (t *target) ensurePasskeys(ctx context.Context, conc, seedConc int) error {
	have := len(t.passkeys)
	if have >= conc {
		return nil
	}
	begin, finish := t.ref("/api/users/me/passkeys/registration"), t.ref("/api/users/me/passkeys/registration/finish")
	more := make([]*softauthn.Authenticator, conc-have)
	err := parallel(ctx, len(more), seedConc, func(i int) error {
		auth, _, err := t.newAccount("passkey")
		if err != nil {
			return err
		}
		var c ceremony
		if err := do(t.hc, newPost(begin, auth, fmt.Appendf(nil, `{"currentPassword":%q}`, userPassword)), http.StatusOK, &c); err != nil {
			return fmt.Errorf("begin passkey registration: %w", err)
		}
		a := softauthn.New(passkeyOrigin)
		cred, err := a.Create(c.PublicKey, softauthn.Faults{})
		if err != nil {
			return fmt.Errorf("create a passkey: %w", err)
		}
		body, err := json.Marshal(map[string]any{"ceremonyId": c.CeremonyID, "name": "load", "credential": cred})
		if err != nil {
			return err
		}
		if err := do(t.hc, newPost(finish, auth, body), http.StatusCreated, nil); err != nil {
			return fmt.Errorf("finish passkey registration: %w", err)
		}
		more[i] = a
		return nil
	})
	if err != nil {
		return err
	}
	t.passkeys = append(t.passkeys, more...)
	return nil
}

// preparePasskey begins warm+n discoverable passkey logins and has worker
// w's authenticator sign its share, in the order the worker will send
// them: its warm-up share first.
func (t *target) preparePasskey(ctx context.Context, seedConc, conc, warm, n int) (warmQ, q [][][]byte, err error) {
	if err := t.ensurePasskeys(ctx, conc, seedConc); err != nil {
		return nil, nil, err
	}
	begin := t.ref("/auth/passkey")
	warmQ, q = make([][][]byte, conc), make([][][]byte, conc)
	err = parallel(ctx, conc, seedConc, func(w int) error {
		nw, nq := share(warm, conc, w), share(n, conc, w)
		for k := range nw + nq {
			var c ceremony
			if err := do(t.hc, newPost(begin, nil, []byte(`{}`)), http.StatusOK, &c); err != nil {
				return fmt.Errorf("begin passkey login: %w", err)
			}
			cred, err := t.passkeys[w].Get(c.PublicKey, softauthn.Faults{})
			if err != nil {
				return fmt.Errorf("sign a passkey assertion: %w", err)
			}
			body, err := json.Marshal(map[string]any{"ceremonyId": c.CeremonyID, "credential": cred})
			if err != nil {
				return err
			}
			if k < nw {
				warmQ[w] = append(warmQ[w], body)
			} else {
				q[w] = append(q[w], body)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return warmQ, q, nil
}
