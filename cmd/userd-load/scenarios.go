package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
	loginBody []byte
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
	chains    []string
	loginAt   time.Time
	accessTTL time.Duration
	created   atomic.Int64

	meURL, listURL, usersURL, loginURL, refreshURL *url.URL
}

func newTarget(hc *http.Client, base string) (*target, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("bad base URL %q", base)
	}
	ref := func(p string) *url.URL { return u.ResolveReference(&url.URL{Path: p}) }
	t := &target{
		hc:         hc,
		base:       u,
		runTag:     randomHex(4),
		meURL:      ref("/api/users/me"),
		usersURL:   ref("/api/users"),
		loginURL:   ref("/auth/login"),
		refreshURL: ref("/auth/refresh-token"),
	}
	t.listURL = ref("/api/users")
	t.listURL.RawQuery = "limit=50"
	return t, nil
}

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
		t.users[i] = seededUser{id: u.ID, loginBody: loginBody(email, userPassword)}
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

// stepFactory returns the scenario's step maker: called once per worker
// and point, it returns that worker's step.
func (t *target) stepFactory(name string) func(w int) step {
	switch name {
	case "read":
		return t.readStep
	case "me":
		return t.meStep
	case "list":
		return t.listStep
	case "create":
		return t.createStep
	case "login":
		return t.loginStep
	case "refresh":
		return t.refreshStep
	case "mixed":
		return t.mixedStep
	}
	panic("unknown scenario " + name)
}

// readStep: GET /api/users/{own id} with that user's token, going round
// the pool from the worker's own place in it.
func (t *target) readStep(w int) step {
	i := w % len(t.pool)
	return func() error {
		s := t.pool[i]
		i = (i + 1) % len(t.pool)
		return do(t.hc, newGet(s.readURL, s.auth), http.StatusOK, nil)
	}
}

// bareStep loads the reference server exactly as readStep loads userd: the
// same client, the same headers, the same rotation.
func (t *target) bareStep(u *url.URL) func(w int) step {
	return func(w int) step {
		i := w % len(t.pool)
		return func() error {
			s := t.pool[i]
			i = (i + 1) % len(t.pool)
			return do(t.hc, newGet(u, s.auth), http.StatusOK, nil)
		}
	}
}

func (t *target) meStep(w int) step {
	i := w % len(t.pool)
	return func() error {
		s := t.pool[i]
		i = (i + 1) % len(t.pool)
		return do(t.hc, newGet(t.meURL, s.auth), http.StatusOK, nil)
	}
}

func (t *target) listStep(int) step {
	return func() error {
		return do(t.hc, newGet(t.listURL, t.adminAuth), http.StatusOK, nil)
	}
}

// createStep: the admin creates a user with a fresh email.
func (t *target) createStep(int) step {
	return func() error {
		n := t.created.Add(1)
		body := fmt.Appendf(nil, `{"name":"Load Created","email":"new-%s-%d@example.com","password":%q}`, t.runTag, n, userPassword)
		return do(t.hc, newPost(t.usersURL, t.adminAuth, body), http.StatusCreated, nil)
	}
}

// loginStep logs in the seeded users in turn.
func (t *target) loginStep(w int) step {
	i := (w * 7919) % len(t.users)
	return func() error {
		body := t.users[i].loginBody
		i = (i + 1) % len(t.users)
		return do(t.hc, newPost(t.loginURL, nil, body), http.StatusOK, nil)
	}
}

// refreshStep: worker w rotates its own chain, sending each time the token
// the previous refresh returned. A broken chain is started again with a
// login, outside the count but inside the time.
func (t *target) refreshStep(w int) step {
	return func() error {
		body := fmt.Appendf(nil, `{"refreshToken":%q}`, t.chains[w])
		var tr tokenResponse
		err := do(t.hc, newPost(t.refreshURL, nil, body), http.StatusOK, &tr)
		if err == nil && tr.RefreshToken == "" {
			err = errors.New("refresh answer without a refresh token")
		}
		if err != nil {
			if again, lerr := t.login(t.users[t.pool[w].user].loginBody); lerr == nil {
				t.chains[w] = again.RefreshToken
			}
			return err
		}
		t.chains[w] = tr.RefreshToken
		return nil
	}
}

// mixedStep: 80% read, 10% refresh, 5% login, 5% create.
func (t *target) mixedStep(w int) step {
	read, refresh, login, create := t.readStep(w), t.refreshStep(w), t.loginStep(w), t.createStep(w)
	rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
	return func() error {
		switch r := rng.IntN(100); {
		case r < 80:
			return read()
		case r < 90:
			return refresh()
		case r < 95:
			return login()
		default:
			return create()
		}
	}
}

// fetchReadBody returns the body of a user read, which the bare reference
// server answers.
func (t *target) fetchReadBody() ([]byte, error) {
	s := t.pool[0]
	res, err := t.hc.Do(newGet(s.readURL, s.auth))
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read for the reference body: status %d", res.StatusCode)
	}
	return b, nil
}

// measure runs one point: an unmeasured warm-up, then the measured run,
// with the server's RSS and both processes' CPU around it.
func measure(ctx context.Context, cfg *config, scenario, backend string, conc int, newStep func(int) step, mon *procMon) Point {
	// A local PostgreSQL's processes (all of them: its other clients'
	// work counts here too).
	dbCPU := func() map[int]time.Duration { return nil }
	if backend == "postgres" && localDSN(cfg.dsn) {
		dbCPU = func() map[int]time.Duration { return commandCPU("postgres") }
	}
	waitQuiet(ctx, cfg.quietWait, mon, dbCPU)
	if cfg.warmup > 0 {
		runPoint(ctx, newStep, conc, cfg.warmup, cfg.maxRequests)
	}
	mon.resetPeak()
	srv0, self0, db0, all0 := mon.cpu(), selfCPU(), dbCPU(), machineCPU()
	r := runPoint(ctx, newStep, conc, cfg.duration, cfg.maxRequests)
	srv1, self1, db1, all1 := mon.cpu(), selfCPU(), dbCPU(), machineCPU()
	db := cpuGrowth(db0, db1)
	rssNow, rssPeak := mon.rssMiB()
	wall := r.elapsed.Seconds()
	p := Point{
		Scenario:    scenario,
		Backend:     backend,
		Concurrency: conc,
		Requests:    r.requests,
		Errors:      r.errors,
		Seconds:     round(wall, 3),
		RPS:         round(float64(r.requests)/wall, 1),
		P50:         round(ms(quantile(r.latencies, 0.50)), 3),
		P90:         round(ms(quantile(r.latencies, 0.90)), 3),
		P99:         round(ms(quantile(r.latencies, 0.99)), 3),
		Max:         round(ms(quantile(r.latencies, 1)), 3),
		Mean:        round(ms(mean(r.latencies)), 3),
		RSSEndMiB:   round(rssNow, 1),
		RSSPeakMiB:  round(rssPeak, 1),
		LoaderCPU:   round((self1-self0).Seconds()/wall, 2),
		ErrorSample: r.sample,
		Capped:      r.capped,
	}
	if mon.pid > 0 {
		p.ServerCPU = round((srv1-srv0).Seconds()/wall, 2)
		p.DBCPU = round(db.Seconds()/wall, 2)
		if all1 > 0 {
			p.OtherCPU = round(max(0, (all1-all0)-(srv1-srv0)-(self1-self0)-db).Seconds()/wall, 2)
		}
	}
	return p
}

// waitQuiet waits up to limit for half a second in which other processes
// than the loader, the server and its database use less than noisyCores.
func waitQuiet(ctx context.Context, limit time.Duration, mon *procMon, dbCPU func() map[int]time.Duration) {
	if limit <= 0 || machineCPU() == 0 {
		return
	}
	const window = 500 * time.Millisecond
	deadline := time.Now().Add(limit)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		srv0, self0, db0, all0 := mon.cpu(), selfCPU(), dbCPU(), machineCPU()
		time.Sleep(window)
		srv1, self1, db1, all1 := mon.cpu(), selfCPU(), dbCPU(), machineCPU()
		other := (all1 - all0) - (srv1 - srv0) - (self1 - self0) - cpuGrowth(db0, db1)
		if other.Seconds()/window.Seconds() < noisyCores {
			return
		}
	}
}

// localDSN reports whether a PostgreSQL DSN names this machine, whose
// postgres processes' CPU then counts as the database's, not as noise.
func localDSN(dsn string) bool {
	host := ""
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		host = u.Hostname()
	} else {
		for f := range strings.FieldsSeq(dsn) {
			if v, ok := strings.CutPrefix(f, "host="); ok {
				host = v
			}
		}
	}
	switch host {
	case "", "localhost", "127.0.0.1", "::1":
		return true
	}
	return strings.HasPrefix(host, "/") // a Unix socket directory
}

// runBackend starts (or targets) one userd, seeds it and runs every
// scenario at every concurrency level.
func runBackend(ctx context.Context, cfg *config, backend, binary, tmp string, machine Machine, bare *Reference, logf func(string, ...any)) (*Report, error) {
	ref := &Reference{Argon2: cfg.argon}
	rep := &Report{
		StartedAt: time.Now().UTC(),
		Backend:   backend,
		Machine:   machine,
		Settings: Settings{
			Users: cfg.users, Pool: cfg.pool, SeedConcurrency: cfg.seedConc,
			Scenarios: cfg.scenarios, Concurrency: cfg.concurrency,
			DurationSeconds: cfg.duration.Seconds(), WarmupSeconds: cfg.warmup.Seconds(),
			MaxRequests: cfg.maxRequests, Argon2: cfg.argon, Quick: cfg.quick,
			QuietWait: cfg.quietWait.Seconds(),
		},
		Reference:    ref,
		LoadAvgStart: loadAverage(),
	}
	base, pid := cfg.target, cfg.pid
	adminEmail, adminPassword := cfg.adminEmail, cfg.adminPass
	if cfg.target == "" {
		logf("%s: starting userd", backend)
		srv, err := startUserd(ctx, binary, backend, cfg.dsn, tmp, cfg.argon)
		if err != nil {
			return nil, err
		}
		defer srv.stop()
		base, pid = srv.base, srv.pid()
		adminEmail, adminPassword = bootstrapEmail, bootstrapPassword
		defer func() {
			if rep.hasErrors() {
				logf("%s: errors during the run; the server's last log lines:\n%s", backend, srv.logTail(15))
			}
		}()
	} else {
		rep.Target = cfg.target
	}
	mon := newProcMon(pid)
	defer mon.close()

	maxConc := slices.Max(cfg.concurrency)
	hc := newHTTPClient(max(maxConc, cfg.seedConc), cfg.timeout)
	defer hc.CloseIdleConnections()
	t, err := newTarget(hc, base)
	if err != nil {
		return nil, err
	}
	if err := t.adminLoginWait(ctx, adminEmail, adminPassword, cfg.target == ""); err != nil {
		return nil, err
	}

	start := time.Now()
	if err := t.seed(ctx, cfg.users, cfg.seedConc); err != nil {
		return nil, err
	}
	rep.Seed.Users = cfg.users
	rep.Seed.Seconds = round(time.Since(start).Seconds(), 2)
	rep.Seed.UsersPerSec = round(float64(cfg.users)/time.Since(start).Seconds(), 1)
	logf("%s: seeded %d users in %.1f s (%.0f/s, seed concurrency %d)", backend, cfg.users, rep.Seed.Seconds, rep.Seed.UsersPerSec, cfg.seedConc)

	start = time.Now()
	if err := t.loginPool(ctx, cfg.pool, cfg.seedConc); err != nil {
		return nil, err
	}
	rep.Seed.PoolLogins = cfg.pool
	rep.Seed.PoolSeconds = round(time.Since(start).Seconds(), 2)
	logf("%s: logged in a pool of %d sessions in %.1f s", backend, cfg.pool, rep.Seed.PoolSeconds)

	if cfg.reference && bare.Bare == nil {
		if err := measureBare(ctx, cfg, t, tmp, bare, logf); err != nil {
			return nil, err
		}
	}
	ref.Bare, ref.BodyBytes = bare.Bare, bare.BodyBytes

	for _, sc := range cfg.scenarios {
		if cfg.reference && ref.HashesPerSec == 0 && (sc == "create" || sc == "login" || sc == "mixed") {
			measureArgon(ctx, cfg, ref, mon, logf)
		}
		for _, conc := range cfg.concurrency {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := t.refreshAccess(ctx, cfg.seedConc, adminEmail, adminPassword); err != nil {
				return nil, err
			}
			p := measure(ctx, cfg, sc, backend, conc, t.stepFactory(sc), mon)
			rep.Results = append(rep.Results, p)
			logf("%s: %-7s c=%-3d %9.1f req/s  p50 %7.2f ms  p99 %8.2f ms  errors %d  RSS %.0f MiB",
				backend, sc, conc, p.RPS, p.P50, p.P99, p.Errors, p.RSSEndMiB)
			if p.ErrorSample != "" {
				logf("%s: %s c=%d first error: %s", backend, sc, conc, p.ErrorSample)
			}
		}
	}
	if cfg.reference && ref.HashesPerSec == 0 {
		measureArgon(ctx, cfg, ref, mon, logf)
	}
	rep.ServerPeakRSSMiB = round(mon.hwmMiB(), 1)
	rep.LoadAvgEnd = loadAverage()
	rep.BackendSeconds = round(time.Since(rep.StartedAt).Seconds(), 1)
	rep.Goals = goals(rep)
	return rep, nil
}

// measureArgon takes the raw argon2id hash rate while the server is idle,
// and what the rest of the machine spent meanwhile.
func measureArgon(ctx context.Context, cfg *config, ref *Reference, mon *procMon, logf func(string, ...any)) {
	waitQuiet(ctx, cfg.quietWait, mon, func() map[int]time.Duration { return nil })
	logf("reference: raw argon2id hash rate on %d goroutines for %v", runtime.GOMAXPROCS(0), cfg.hashDuration)
	start, self0, all0 := time.Now(), selfCPU(), machineCPU()
	ref.HashesPerSec, ref.HashMillis = argonRate(ctx, cfg.argon, cfg.hashDuration)
	if all0 > 0 {
		wall := time.Since(start).Seconds()
		ref.HashOtherCPU = round(max(0, (machineCPU()-all0)-(selfCPU()-self0)).Seconds()/wall, 2)
	}
	logf("reference: %.1f hashes/s (%.1f ms a hash on one core; other processes %.2f cores)", ref.HashesPerSec, ref.HashMillis, ref.HashOtherCPU)
}

// measureBare loads the bare reference server at every concurrency level,
// with the body of a real user read.
func measureBare(ctx context.Context, cfg *config, t *target, tmp string, ref *Reference, logf func(string, ...any)) error {
	body, err := t.fetchReadBody()
	if err != nil {
		return err
	}
	bare, err := startBare(body, tmp)
	if err != nil {
		return err
	}
	defer bare.stop()
	u, err := url.Parse(bare.base + "/api/users/reference")
	if err != nil {
		return err
	}
	mon := newProcMon(bare.cmd.Process.Pid)
	defer mon.close()
	ref.BodyBytes = len(body)
	ref.Bare = []Point{}
	for _, conc := range cfg.concurrency {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := measure(ctx, cfg, "bare", "reference", conc, t.bareStep(u), mon)
		ref.Bare = append(ref.Bare, p)
		logf("reference: bare    c=%-3d %9.1f req/s  p50 %7.2f ms  p99 %8.2f ms  errors %d",
			conc, p.RPS, p.P50, p.P99, p.Errors)
	}
	return nil
}
