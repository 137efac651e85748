package main

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"
)

// runBackend starts (or targets) one userd, seeds it and runs every
// scenario at every concurrency level.
func runBackend(ctx context.Context, cfg *config, backend, binary, tmp string, machine Machine, bare *Reference, logf func(string, ...any)) (*Report, error) {
	rep := newReport(cfg, backend, machine)
	ref := rep.Reference
	srv, err := startBackend(ctx, cfg, backend, binary, tmp, rep, logf)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	mon := newProcMon(srv.pid)
	defer mon.close()

	hc := newHTTPClient(max(slices.Max(cfg.concurrency), cfg.seedConc), cfg.timeout)
	defer hc.CloseIdleConnections()
	t, err := newTarget(hc, srv.base)
	if err != nil {
		return nil, err
	}
	var prof *profiler
	if srv.metricsBase != "" {
		// The metrics (the outbox backlog) moved with the profiles.
		if t.metricsURL, err = url.Parse(srv.metricsBase + "/metrics"); err != nil {
			return nil, err
		}
		prof = &profiler{dir: cfg.profile, base: srv.metricsBase, backend: backend, logf: logf,
			concurrency: profileConcurrency(cfg.concurrency)}
	}
	if err := t.adminLoginWait(ctx, srv.adminEmail, srv.adminPassword, cfg.target == ""); err != nil {
		return nil, err
	}
	if err := seedAndLogIn(ctx, cfg, t, rep, logf); err != nil {
		return nil, err
	}
	if cfg.reference && bare.Bare == nil {
		if err := measureBare(ctx, cfg, t, tmp, bare, logf); err != nil {
			return nil, err
		}
	}
	ref.Bare, ref.BodyBytes = bare.Bare, bare.BodyBytes

	plain := *cfg
	plain.scenarios = slices.DeleteFunc(slices.Clone(cfg.scenarios), isHookScenario)
	if err := runScenarios(ctx, &plain, t, srv, rep, mon, prof, logf); err != nil {
		return nil, err
	}
	if err := runHookScenarios(ctx, cfg, backend, binary, tmp, rep, logf); err != nil {
		return nil, err
	}
	if cfg.reference && ref.HashesPerSec == 0 {
		measureArgon(ctx, cfg, ref, mon, logf)
	}
	if srv.sink != nil && (slices.Contains(cfg.scenarios, "reset") || slices.Contains(cfg.scenarios, "verify") ||
		slices.Contains(cfg.scenarios, scEmailCodeRequest)) {
		rep.MailDrain = measureDrain(ctx, t, srv.sink, drainLimit)
		logf("%s: the sender sent %d messages in %.1f s after the load: %.0f messages/s (outbox backlog %d at the start, %d at the end)",
			backend, rep.MailDrain.Messages, rep.MailDrain.Seconds, rep.MailDrain.PerSec, rep.MailDrain.BacklogStart, rep.MailDrain.BacklogEnd)
	}
	rep.ServerPeakRSSMiB = round(mon.hwmMiB(), 1)
	rep.LoadAvgEnd = loadAverage()
	rep.BackendSeconds = round(time.Since(rep.StartedAt).Seconds(), 1)
	rep.Goals = goals(rep)
	return rep, nil
}

// newReport is the report of one backend before anything is measured: the
// settings of the run and an empty reference.
func newReport(cfg *config, backend string, machine Machine) *Report {
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
		Reference:    &Reference{Argon2: cfg.argon},
		LoadAvgStart: loadAverage(),
	}
	if slices.Contains(cfg.scenarios, "mfa") {
		rep.Settings.MFASteps = cfg.mfaSteps
	}
	if slices.Contains(cfg.scenarios, "read-many") {
		rep.Settings.ManyTokens = cfg.manyTokens
	}
	if slices.Contains(cfg.scenarios, "passkey") {
		rep.Settings.PasskeySteps = cfg.passkeySteps
	}
	if slices.Contains(cfg.scenarios, scOIDCCodeExchange) {
		rep.Settings.OIDCCodeSteps = cfg.oidcCodeSteps
	}
	if slices.ContainsFunc(cfg.scenarios, isOIDCScenario) {
		rep.Settings.OIDCIDTokenAlg = cfg.oidcIDTokenAlg
	}
	if cfg.target != "" {
		rep.Target = cfg.target
	}
	return rep
}

// backendServer is the userd a backend's scenarios load: one the loader
// started (with its SMTP sink), or the --target.
type backendServer struct {
	base, metricsBase         string
	pid                       int
	adminEmail, adminPassword string
	// sink receives the started server's messages; nil with --target.
	sink *smtpSink
	// stop ends what startBackend started; it does nothing for a target.
	stop func()
	// startTwin starts the twin of read-traced or read-untraced
	// (traced.go); nil with --target. twins are those started, by
	// scenario.
	startTwin func(ctx context.Context, scenario string) (*twinServer, error)
	twins     map[string]*twinServer
}

// startBackend starts userd on the backend, with an SMTP sink for its
// messages and the bootstrap admin, or describes the --target. When the
// run had errors, stopping a started server logs its last lines first.
func startBackend(ctx context.Context, cfg *config, backend, binary, tmp string, rep *Report, logf func(string, ...any),
	extraEnv ...string) (*backendServer, error) {
	if cfg.target != "" {
		return &backendServer{base: cfg.target, pid: cfg.pid, adminEmail: cfg.adminEmail, adminPassword: cfg.adminPass,
			stop: func() {}}, nil
	}
	sink, err := startSMTPSink()
	if err != nil {
		return nil, fmt.Errorf("SMTP sink: %w", err)
	}
	logf("%s: starting userd", backend)
	srv, err := startUserd(ctx, binary, backend, cfg.dsnFor(backend), tmp, sink.url(), cfg.argon, cfg.profile != "", extraEnv...)
	if err != nil {
		sink.close()
		return nil, err
	}
	bs := &backendServer{
		base: srv.base, metricsBase: srv.metricsBase, pid: srv.pid(),
		adminEmail: bootstrapEmail, adminPassword: bootstrapPassword, sink: sink,
		startTwin: func(ctx context.Context, sc string) (*twinServer, error) { return startTwinOf(ctx, binary, srv, sc) },
	}
	bs.stop = func() {
		if rep.hasErrors() {
			logf("%s: errors during the run; the server's last log lines:\n%s", backend, srv.logTail(15))
		}
		// The twins first: they share the database the first one drops.
		for _, twin := range bs.twins {
			twin.stop()
		}
		srv.stop()
		sink.close()
	}
	return bs, nil
}

// seedAndLogIn creates the users and logs in the pool whose sessions the
// workers use, recording how long each took.
func seedAndLogIn(ctx context.Context, cfg *config, t *target, rep *Report, logf func(string, ...any)) error {
	start := time.Now()
	if err := t.seed(ctx, cfg.users, cfg.seedConc); err != nil {
		return err
	}
	rep.Seed.Users = cfg.users
	rep.Seed.Seconds = round(time.Since(start).Seconds(), 2)
	rep.Seed.UsersPerSec = round(float64(cfg.users)/time.Since(start).Seconds(), 1)
	logf("%s: seeded %d users in %.1f s (%.0f/s, seed concurrency %d)", rep.Backend, cfg.users, rep.Seed.Seconds, rep.Seed.UsersPerSec, cfg.seedConc)

	start = time.Now()
	if err := t.loginPool(ctx, cfg.pool, cfg.seedConc); err != nil {
		return err
	}
	rep.Seed.PoolLogins = cfg.pool
	rep.Seed.PoolSeconds = round(time.Since(start).Seconds(), 2)
	logf("%s: logged in a pool of %d sessions in %.1f s", rep.Backend, cfg.pool, rep.Seed.PoolSeconds)
	return nil
}

// runScenarios measures every scenario at every concurrency level, taking
// the hash-rate reference before the first scenario that hashes.
func runScenarios(ctx context.Context, cfg *config, t *target, srv *backendServer, rep *Report, mon *procMon, prof *profiler, logf func(string, ...any)) error {
	ref := rep.Reference
	paired, twinsMeasured := pairedTwins(cfg), false
	for _, sc := range cfg.scenarios {
		if cfg.reference && ref.HashesPerSec == 0 && (sc == "create" || sc == "login" || sc == "mixed") {
			measureArgon(ctx, cfg, ref, mon, logf)
		}
		if paired && (sc == scReadUntraced || sc == scReadTraced) {
			if !twinsMeasured {
				if err := measureTwinPairs(ctx, cfg, t, srv, rep, logf); err != nil {
					return err
				}
				twinsMeasured = true
			}
			continue
		}
		for _, conc := range cfg.concurrency {
			p, err := measureScenario(ctx, cfg, t, srv, sc, rep.Backend, conc, mon, prof, logf)
			if err != nil {
				return err
			}
			rep.add(p, logf)
		}
	}
	return nil
}

// measureTwinPairs measures read-untraced and read-traced together at
// every concurrency level (traced.go).
func measureTwinPairs(ctx context.Context, cfg *config, t *target, srv *backendServer, rep *Report, logf func(string, ...any)) error {
	for _, conc := range cfg.concurrency {
		if err := t.refreshAccess(ctx, cfg.seedConc, srv.adminEmail, srv.adminPassword); err != nil {
			return err
		}
		untraced, traced, err := t.measureTwinPair(ctx, cfg, srv, rep.Backend, conc, logf)
		if err != nil {
			return err
		}
		rep.add(untraced, logf)
		rep.add(traced, logf)
	}
	return nil
}

// add keeps a measured point and logs it.
func (r *Report) add(p Point, logf func(string, ...any)) {
	r.Results = append(r.Results, p)
	logf("%s: %-7s c=%-3d %9.1f req/s  p50 %7.2f ms  p99 %8.2f ms  errors %d  RSS %.0f MiB",
		r.Backend, p.Scenario, p.Concurrency, p.RPS, p.P50, p.P99, p.Errors, p.RSSEndMiB)
	if p.ErrorSample != "" {
		logf("%s: %s c=%d first error: %s", r.Backend, p.Scenario, p.Concurrency, p.ErrorSample)
	}
}

// measureScenario measures one scenario at one concurrency level, after
// renewing the pool's access tokens (and, for read-many, minting the
// tokens it goes round).
func measureScenario(ctx context.Context, cfg *config, t *target, srv *backendServer, sc, backend string, conc int, mon *procMon, prof *profiler, logf func(string, ...any)) (Point, error) {
	if err := ctx.Err(); err != nil {
		return Point{}, err
	}
	if err := t.refreshAccess(ctx, cfg.seedConc, srv.adminEmail, srv.adminPassword); err != nil {
		return Point{}, err
	}
	if sc == "read-many" {
		if err := t.mintMany(ctx, cfg.manyTokens, cfg.seedConc); err != nil {
			return Point{}, err
		}
	}
	if sc == scPATRead {
		if err := t.ensurePATs(ctx, cfg.seedConc); err != nil {
			return Point{}, err
		}
	}
	if isOIDCScenario(sc) {
		if err := t.ensureOIDC(ctx, sc, conc, cfg.seedConc, cfg.oidcIDTokenAlg); err != nil {
			return Point{}, fmt.Errorf("%s c=%d: %w", sc, conc, err)
		}
	}
	switch sc {
	case "mfa", "passkey":
		return t.measurePrepared(ctx, cfg, sc, backend, conc, mon, logf)
	case scOIDCCodeExchange:
		return t.measureCodeExchange(ctx, cfg, backend, conc, mon, logf)
	case scReadTraced, scReadUntraced:
		return t.measureTwin(ctx, cfg, srv, sc, backend, conc, logf)
	}
	return measure(ctx, cfg, sc, backend, conc, t.stepFactory(sc), mon, prof), nil
}
