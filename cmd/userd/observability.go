package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

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
			fx.As(fx.Self()), fx.As(new(ports.SecurityMetrics))),
	),
	fx.Invoke(registerDBStats),
)

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

// adminServer serves GET /metrics on USERD_ADMIN_ADDR when it is set, so
// that the metrics can stay off the public listener. It is not counted in
// the request metrics: scrapes are not traffic.
type adminServer struct{ srv *http.Server }

func newAdminServer(lc fx.Lifecycle, cfg config.Config, reg *prometheus.Registry, log *slog.Logger) *adminServer {
	if cfg.AdminAddr == "" {
		return &adminServer{}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(reg))
	srv := &http.Server{
		Addr:              cfg.AdminAddr,
		Handler:           mux,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", srv.Addr)
			if err != nil {
				return fmt.Errorf("listen on %s (USERD_ADMIN_ADDR): %w", srv.Addr, err)
			}
			log.Info("userd admin listening", slog.String("addr", ln.Addr().String()), slog.String("serves", "/metrics"))
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error("admin server stopped", slog.String("error", err.Error()))
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error { return srv.Shutdown(ctx) },
	})
	return &adminServer{srv: srv}
}
