package main

import (
	"context"
	"maps"
	"net"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// measure runs one point: an unmeasured warm-up, then the measured run,
// with the server's RSS and both processes' CPU around it, and the
// server's profiles of it when prof (nil for none) asks for this point.
func measure(ctx context.Context, cfg *config, scenario, backend string, conc int, newStep func(int) step, mon *procMon, prof *profiler) Point {
	warm := func() {
		if cfg.warmup > 0 {
			runPoint(ctx, newStep, conc, cfg.warmup, cfg.maxRequests)
		}
	}
	return measureRun(ctx, cfg, scenario, backend, conc, mon, warm, prof.around(ctx, scenario, conc, cfg.duration, func() pointResult {
		return runPoint(ctx, newStep, conc, cfg.duration, cfg.maxRequests)
	}))
}

// measureRun is measure with the warm-up and the measured run given: those
// of a scenario whose requests are prepared beforehand run until the
// prepared requests are spent rather than for a duration.
func measureRun(ctx context.Context, cfg *config, scenario, backend string, conc int, mon *procMon, warm func(), load func() pointResult) Point {
	dbCPU := dbCPUFor(cfg, backend)
	waitQuiet(ctx, cfg.quietWait, mon, dbCPU)
	warm()
	mon.resetPeak()
	var u cpuUse
	u.begin(mon, dbCPU)
	r := load()
	u.end(mon, dbCPU)
	return pointOf(scenario, backend, conc, r, mon, u)
}

// cpuUse is the CPU the server, the loader, the database and the whole
// machine used over one or more spans of time.
type cpuUse struct {
	srv, self, db, all time.Duration
	srv0, self0, all0  time.Duration
	db0                map[int]time.Duration
	machineKnown       bool
}

// dbCPUFor returns how to read the CPU of the backend's database server,
// when it runs on this machine (all its processes: its other clients'
// work counts here too).
func dbCPUFor(cfg *config, backend string) func() map[int]time.Duration {
	switch {
	case backend == "postgres" && localDSN(cfg.dsn):
		return func() map[int]time.Duration { return commandCPU("postgres") }
	case backend == "mysql" && localMySQLDSN(cfg.mysqlDSN):
		return mysqlServerCPU
	}
	return func() map[int]time.Duration { return nil }
}

func (u *cpuUse) begin(mon *procMon, dbCPU func() map[int]time.Duration) {
	u.srv0, u.self0, u.db0, u.all0 = mon.cpu(), selfCPU(), dbCPU(), machineCPU()
}

func (u *cpuUse) end(mon *procMon, dbCPU func() map[int]time.Duration) {
	srv1, self1, db1, all1 := mon.cpu(), selfCPU(), dbCPU(), machineCPU()
	u.srv += srv1 - u.srv0
	u.self += self1 - u.self0
	u.db += cpuGrowth(u.db0, db1)
	u.all += all1 - u.all0
	u.machineKnown = all1 > 0
}

// pointOf is the point of a measured run r, and of the CPU used over it.
func pointOf(scenario, backend string, conc int, r pointResult, mon *procMon, u cpuUse) Point {
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
		LoaderCPU:   round(u.self.Seconds()/wall, 2),
		ErrorSample: r.sample,
		Capped:      r.capped,
	}
	if mon.pid > 0 {
		p.ServerCPU = round(u.srv.Seconds()/wall, 2)
		p.DBCPU = round(u.db.Seconds()/wall, 2)
		if u.machineKnown {
			p.OtherCPU = round(max(0, u.all-u.srv-u.self-u.db).Seconds()/wall, 2)
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

// localMySQLDSN reports whether a MySQL DSN names this machine, whose
// server's CPU then counts as the database's.
func localMySQLDSN(dsn string) bool {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return false
	}
	if cfg.Net == "unix" {
		return true
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		host = cfg.Addr
	}
	switch host {
	case "", "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// mysqlServerCPU is the CPU of the local MariaDB (mariadbd) or MySQL
// (mysqld) server: one process, its threads included.
func mysqlServerCPU() map[int]time.Duration {
	out := commandCPU("mariadbd")
	maps.Copy(out, commandCPU("mysqld"))
	return out
}

// dsnFor is the DSN the backend's server is started with ("" for
// SQLite, whose file the loader makes).
func (c *config) dsnFor(backend string) string {
	switch backend {
	case "postgres":
		return c.dsn
	case "mysql":
		return c.mysqlDSN
	}
	return ""
}

// drainLimit bounds the drain measurement: enough for thousands of
// messages, short enough to keep `make loadtest` within its budget.
const drainLimit = 30 * time.Second

// measureDrain reads the sender's rate off the sink while it works off
// what the mail scenarios queued and nothing else loads the server: the
// messages that arrive from now until the outbox is empty or limit has
// passed, over the time to the last one.
func measureDrain(ctx context.Context, t *target, sink *smtpSink, limit time.Duration) *MailDrain {
	d := &MailDrain{BacklogStart: t.outboxBacklog()}
	start := time.Now()
	count0, _ := sink.count()
	deadline := start.Add(limit)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		if d.BacklogEnd = t.outboxBacklog(); d.BacklogEnd == 0 {
			break
		}
	}
	count1, last := sink.count()
	d.Messages = count1 - count0
	if d.Messages > 0 && last.After(start) {
		d.Seconds = round(last.Sub(start).Seconds(), 2)
		d.PerSec = round(float64(d.Messages)/last.Sub(start).Seconds(), 1)
	}
	return d
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
		p := measure(ctx, cfg, "bare", "reference", conc, t.bareStep(u), mon, nil)
		ref.Bare = append(ref.Bare, p)
		logf("reference: bare    c=%-3d %9.1f req/s  p50 %7.2f ms  p99 %8.2f ms  errors %d",
			conc, p.RPS, p.P50, p.P99, p.Errors)
	}
	return nil
}
