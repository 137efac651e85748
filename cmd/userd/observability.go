package main

import (
	"log/slog"
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/adapters/metrics"
	"github.com/userd/userd/config"
	"github.com/userd/userd/ports"
)

// metricsModule gives `userd serve` its Prometheus registry (never the
// global one): the Go runtime and process collectors, userd's own
// counters, bound as ports.SecurityMetrics, and the database pool's
// statistics when there is a pool. The CLI commands leave it out, and
// their security events are then stored but not counted.
var metricsModule = fx.Module("metrics",
	fx.Provide(
		metrics.NewRegistry,
		fx.Annotate(func(reg *prometheus.Registry) (*metrics.Metrics, error) { return metrics.New(reg) },
			fx.As(fx.Self()), fx.As(new(ports.SecurityMetrics)), fx.As(new(ports.OutboxMetrics)),
			fx.As(new(ports.PurgeMetrics)), fx.As(new(ports.ClaimsHookMetrics)), fx.As(new(ports.AccountCacheMetrics))),
	),
	fx.Invoke(registerDBStats, registerOutboxBacklog),
)

// registerOutboxBacklog shows what waits in the outbox (read from the
// store at each scrape): the backlog that grows while the mail server is
// away.
func registerOutboxBacklog(reg *prometheus.Registry, outbox ports.Outbox, clk ports.Clock) error {
	return reg.Register(metrics.NewOutboxBacklogCollector(outbox, clk.Now))
}

// countHashing wraps the password hasher in the metrics' counter, so that
// /metrics shows how many passwords were hashed and compared. Only `serve`
// counts; the one-shot commands hash with the bare hasher.
func countHashing(h ports.PasswordHasher, m *metrics.Metrics) ports.PasswordHasher {
	return m.CountHashing(h)
}

type dbStatsParams struct {
	fx.In
	Registry *prometheus.Registry
	// DB is absent with USERD_DB_DRIVER=memory.
	DB *gormstore.DB `optional:"true"`
}

func registerDBStats(p dbStatsParams) error {
	if p.DB == nil {
		return nil
	}
	return p.Registry.Register(metrics.NewDBStatsCollector(p.DB))
}

// serveMetrics serves GET /metrics on USERD_METRICS_ADDR (or its
// deprecated name USERD_ADMIN_ADDR) when it is set, so that the metrics
// can stay off the public listener. Whoever reaches the address is
// served: USERD_METRICS_ALLOW guards the main listener only. It is not
// counted in the request metrics: scrapes are not traffic.
func serveMetrics(lc fx.Lifecycle, cfg config.Config, reg *prometheus.Registry, log *slog.Logger) {
	addr, setting := cfg.ServeMetricsOn()
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(reg))
	serves := "/metrics"
	if cfg.Pprof {
		servePprof(mux)
		serves += " /debug/pprof/"
	}
	newListener(lc, cfg, log, listener{
		name: "userd metrics", setting: setting, addr: addr, handler: mux,
		attrs: []any{slog.String("serves", serves)},
	})
}

// servePprof adds net/http/pprof's handlers to mux, the metrics
// listener's (USERD_PPROF; config refuses it without USERD_METRICS_ADDR,
// so it never reaches the public listener). They are registered one by
// one: importing net/http/pprof registers them on http.DefaultServeMux,
// which userd does not serve.
func servePprof(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
