package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The claims hook's scenarios: login and refresh again, against a second
// userd whose USERD_CLAIMS_HOOK_URL is a hook on loopback that answers at
// once, so that their difference to login and refresh is what the hook
// costs userd (docs/claims.md).
const (
	scLoginHook   = "login-hook"
	scRefreshHook = "refresh-hook"
	// hookSuffix turns a scenario into its hooked twin.
	hookSuffix = "-hook"
)

// hookAnswer is the hook's answer: one small claim, as a real hook's.
const hookAnswer = `{"claims":{"tenant":"load"}}`

func isHookScenario(sc string) bool { return strings.HasSuffix(sc, hookSuffix) }

// hookGoalMs is the most a hook answering at once may add to a login's
// or a refresh's p50.
const hookGoalMs = 1.0

// hookGoals hold each hooked scenario's p50 to its plain twin's, level by
// level.
func hookGoals(r *Report) []Goal {
	var gs []Goal
	for _, sc := range []string{scLoginHook, scRefreshHook} {
		for _, p := range r.Results {
			if p.Scenario != sc {
				continue
			}
			plain, ok := r.point(strings.TrimSuffix(sc, hookSuffix), p.Concurrency)
			if !ok {
				continue
			}
			d := round(p.P50-plain.P50, 3)
			gs = append(gs, Goal{Name: sc + " p50 − " + plain.Scenario + " p50", Concurrency: p.Concurrency,
				Value: d, Unit: "ms", Target: fmt.Sprintf("≤ %g ms", hookGoalMs), Met: yes(d <= hookGoalMs), Noisy: noisy(p, plain)})
		}
	}
	return gs
}

// runHookScenarios measures the hook scenarios of cfg against a userd of
// their own (a fresh database in its own folder, seeded as the first),
// configured with a hook the loader serves. A --target cannot be
// reconfigured: there they are left out, and said so.
func runHookScenarios(ctx context.Context, cfg *config, backend, binary, tmp string, rep *Report, logf func(string, ...any)) error {
	hooked := slices.DeleteFunc(slices.Clone(cfg.scenarios), func(sc string) bool { return !isHookScenario(sc) })
	if len(hooked) == 0 {
		return nil
	}
	if cfg.target != "" {
		logf("%s: %s left out: --target's claims hook cannot be set by the loader", backend, strings.Join(hooked, ","))
		return nil
	}
	hookURL, stopHook, err := startHookReceiver()
	if err != nil {
		return fmt.Errorf("claims hook: %w", err)
	}
	defer stopHook()
	dir := filepath.Join(tmp, "hook")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	srv, err := startBackend(ctx, cfg, backend, binary, dir, rep, logf,
		"USERD_CLAIMS_HOOK_URL="+hookURL, "USERD_CLAIMS_HOOK_SECRET=whsec_"+base64.StdEncoding.EncodeToString(secret))
	if err != nil {
		return err
	}
	defer srv.stop()
	mon := newProcMon(srv.pid)
	defer mon.close()
	hc := newHTTPClient(max(slices.Max(cfg.concurrency), cfg.seedConc), cfg.timeout)
	defer hc.CloseIdleConnections()
	t, err := newTarget(hc, srv.base)
	if err != nil {
		return err
	}
	if err := t.adminLoginWait(ctx, srv.adminEmail, srv.adminPassword, true); err != nil {
		return err
	}
	// The seeding's figures are the first server's; these are not kept.
	if err := seedAndLogIn(ctx, cfg, t, &Report{Backend: backend + " (claims hook)"}, logf); err != nil {
		return err
	}
	for _, sc := range hooked {
		for _, conc := range cfg.concurrency {
			if err := t.refreshAccess(ctx, cfg.seedConc, srv.adminEmail, srv.adminPassword); err != nil {
				return err
			}
			rep.add(measure(ctx, cfg, sc, backend, conc, t.stepFactory(strings.TrimSuffix(sc, hookSuffix)), mon, nil), logf)
		}
	}
	return nil
}

// startHookReceiver serves a claims hook on loopback that answers every
// request at once with hookAnswer, without checking its signature (what
// is measured is userd's side). It returns the hook's URL and its stop.
func startHookReceiver() (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, hookAnswer)
	})}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String() + "/claims", func() { _ = srv.Close() }, nil
}
