package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/userd/userd/test/softauthn"
)

// userPassword is the password of every seeded and created user.
const userPassword = "Load-test-passphrase-9"

// tokenResponse is the part of a login or refresh answer the loader uses.
type tokenResponse struct {
	AccessToken  string `json:"accessToken"`
	ExpiresIn    int    `json:"expiresIn"`
	RefreshToken string `json:"refreshToken"`
	User         struct {
		ID string `json:"id"`
	} `json:"user"`
}

// seededUser is a user created while seeding.
type seededUser struct {
	id        string
	email     string
	loginBody []byte
	// emailBody is {"email": …}, the body of a request for a link.
	emailBody []byte
}

// session is a logged-in user whose tokens the workers use.
type session struct {
	user    int      // index into target.users
	auth    []string // "Bearer <access token>"
	readURL *url.URL // /api/users/{own id}
}

// target is a running userd and the state the scenarios share: the seeded
// users, a pool of sessions, and one refresh-token chain per worker.
type target struct {
	hc        *http.Client
	base      *url.URL
	runTag    string
	adminAuth []string
	users     []seededUser
	pool      []*session
	// chains[w] is worker w's current refresh token: each refresh uses the
	// token the previous one returned. Points run one after another, so a
	// slot is only ever used by one goroutine at a time.
	chains []string
	// many are read-many's tokens, minted at manyAt (mintMany); manyNext
	// counts the reads of them: whose turn it is.
	many      []*session
	manyAt    time.Time
	manyNext  atomic.Int64
	loginAt   time.Time
	accessTTL time.Duration
	created   atomic.Int64
	// accounts numbers the accounts the second-factor scenarios make for
	// themselves; passkeys[w] is the authenticator of worker w's passkey.
	accounts atomic.Int64
	passkeys []*softauthn.Authenticator
	// pats[i] is the Authorization header of a personal access token of
	// pool[i]'s user (pat.go), made before pat-read's first point.
	pats [][]string
	// oidc is the OpenID provider's clients and browsers (oidc.go), made
	// before the first of its scenarios.
	oidc *oidcState

	meURL, listURL, usersURL, loginURL, refreshURL *url.URL
	resetURL, verifyURL, metricsURL                *url.URL
	emailCodeURL                                   *url.URL
}

func newTarget(hc *http.Client, base string) (*target, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("bad base URL %q", base)
	}
	ref := func(p string) *url.URL { return u.ResolveReference(&url.URL{Path: p}) }
	t := &target{
		hc:           hc,
		base:         u,
		runTag:       randomHex(4),
		meURL:        ref("/api/users/me"),
		usersURL:     ref("/api/users"),
		loginURL:     ref("/auth/login"),
		refreshURL:   ref("/auth/refresh-token"),
		resetURL:     ref("/auth/password-reset"),
		verifyURL:    ref("/auth/email-verification"),
		emailCodeURL: ref("/auth/email-code"),
		metricsURL:   ref("/metrics"),
	}
	t.listURL = ref("/api/users")
	t.listURL.RawQuery = "limit=50"
	return t, nil
}

// ref is the URL of path on the target.
func (t *target) ref(path string) *url.URL { return t.base.ResolveReference(&url.URL{Path: path}) }

func bearer(token string) []string { return []string{"Bearer " + token} }

func loginBody(email, password string) []byte {
	return fmt.Appendf(nil, `{"email":%q,"password":%q}`, email, password)
}

func (t *target) login(body []byte) (tokenResponse, error) {
	var tr tokenResponse
	err := do(t.hc, newPost(t.loginURL, nil, body), http.StatusOK, &tr)
	if err == nil && (tr.AccessToken == "" || tr.RefreshToken == "") {
		err = errors.New("login answer without tokens")
	}
	return tr, err
}

func (t *target) adminLogin(email, password string) error {
	tr, err := t.login(loginBody(email, password))
	if err != nil {
		return fmt.Errorf("admin login: %w", err)
	}
	t.adminAuth = bearer(tr.AccessToken)
	return nil
}

// adminLoginWait logs the admin in. userd answers /readyz before its
// start hook has created the bootstrap admin, so a server we started gets
// a few seconds to create it.
func (t *target) adminLoginWait(ctx context.Context, email, password string, wait bool) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := t.adminLogin(email, password)
		var se *statusError
		if err == nil || !wait || !errors.As(err, &se) || se.status != http.StatusUnauthorized || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// parallel runs fn(i) for i in [0, n) on conc goroutines and returns the
// first error.
func parallel(ctx context.Context, n, conc int, fn func(i int) error) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range min(conc, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errOnce.Do(func() { first = err })
					next.Store(int64(n)) // stop the others
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// backlogRE finds the outbox backlog gauge in the metrics exposition.
var backlogRE = regexp.MustCompile(`(?m)^userd_outbox_backlog ([0-9.e+]+)$`)

// outboxBacklog reads userd_outbox_backlog off /metrics; -1 when it
// cannot (a --target whose metrics are elsewhere).
func (t *target) outboxBacklog() int {
	res, err := t.hc.Do(newGet(t.metricsURL, nil)) //nolint:gosec // G704: the metrics of the userd under test
	if err != nil {
		return -1
	}
	defer func() { _ = res.Body.Close() }()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		return -1
	}
	m := backlogRE.FindSubmatch(b)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return -1
	}
	return int(v)
}

// seed has the admin create n users through the API.
func (t *target) seed(ctx context.Context, n, conc int) error {
	t.users = make([]seededUser, n)
	return parallel(ctx, n, conc, func(i int) error {
		email := fmt.Sprintf("load-%s-%06d@example.com", t.runTag, i)
		body := fmt.Appendf(nil, `{"name":"Load User %d","email":%q,"password":%q}`, i, email, userPassword)
		var u struct {
			ID string `json:"id"`
		}
		if err := do(t.hc, newPost(t.usersURL, t.adminAuth, body), http.StatusCreated, &u); err != nil {
			return fmt.Errorf("seed user %d: %w", i, err)
		}
		t.users[i] = seededUser{id: u.ID, email: email, loginBody: loginBody(email, userPassword), emailBody: fmt.Appendf(nil, `{"email":%q}`, email)}
		return nil
	})
}

// loginPool logs in size sessions (users repeat when there are fewer) and
// starts one refresh chain per session.
func (t *target) loginPool(ctx context.Context, size, conc int) error {
	t.pool = make([]*session, size)
	t.chains = make([]string, size)
	start := time.Now()
	err := parallel(ctx, size, conc, func(i int) error {
		ui := i % len(t.users)
		tr, err := t.login(t.users[ui].loginBody)
		if err != nil {
			return fmt.Errorf("log in pool user %d: %w", ui, err)
		}
		t.pool[i] = &session{
			user:    ui,
			auth:    bearer(tr.AccessToken),
			readURL: t.base.ResolveReference(&url.URL{Path: "/api/users/" + t.users[ui].id}),
		}
		t.chains[i] = tr.RefreshToken
		if i == 0 {
			t.accessTTL = time.Duration(tr.ExpiresIn) * time.Second
		}
		return nil
	})
	t.loginAt = start
	return err
}

// refreshAccess logs the pool in again when its access tokens are past half
// their lifetime, so that a long run never meets an expired one. The
// refresh chains are kept.
func (t *target) refreshAccess(ctx context.Context, conc int, adminEmail, adminPassword string) error {
	if t.accessTTL <= 0 || time.Since(t.loginAt) < t.accessTTL/2 {
		return nil
	}
	start := time.Now()
	if err := t.adminLogin(adminEmail, adminPassword); err != nil {
		return err
	}
	err := parallel(ctx, len(t.pool), conc, func(i int) error {
		tr, err := t.login(t.users[t.pool[i].user].loginBody)
		if err != nil {
			return fmt.Errorf("log in pool user again: %w", err)
		}
		t.pool[i].auth = bearer(tr.AccessToken)
		return nil
	})
	t.loginAt = start
	return err
}
