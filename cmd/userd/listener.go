package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"go.uber.org/fx"

	"github.com/userd/userd/config"
)

// httpModule provides the handler of the API. The listeners, the API's on
// USERD_HTTP_ADDR and, when it is set, the metrics' on USERD_METRICS_ADDR,
// are the last steps of the start (serveAPI, serveMetrics in
// startServer): each listens at start, shuts down gracefully at stop.
var httpModule = fx.Module("http", fx.Provide(newHandler))

// listener is what newListener needs to know of one address.
type listener struct {
	// name starts the log lines: "userd", "userd metrics".
	name string
	// setting is the configuration key of addr, named in errors.
	setting string
	addr    string
	handler http.Handler
	// attrs are added to the "listening" log line.
	attrs []any
}

// newListener is the one constructor of an HTTP server: the configured
// timeouts and limits, listening in OnStart so that a taken port fails the
// start instead of a log line after it, serving in a goroutine, and a
// graceful Shutdown in OnStop.
func newListener(lc fx.Lifecycle, cfg config.Config, log *slog.Logger, l listener) *http.Server {
	srv := &http.Server{
		Addr:              l.addr,
		Handler:           l.handler,
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
				return fmt.Errorf("listen on %s (%s): %w", srv.Addr, l.setting, err)
			}
			log.Info(l.name+" listening", append([]any{slog.String("addr", ln.Addr().String())}, l.attrs...)...)
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					log.Error(l.name+" server stopped", slog.String("error", err.Error()))
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error {
			log.Info(l.name + " shutting down")
			if err := srv.Shutdown(ctx); err != nil {
				// Requests still running when the time ran out.
				return fmt.Errorf("%s server: %w", l.name, err)
			}
			return nil
		},
	})
	return srv
}

// serveAPI serves the API on USERD_HTTP_ADDR.
func serveAPI(lc fx.Lifecycle, cfg config.Config, handler http.Handler, log *slog.Logger) {
	newListener(lc, cfg, log, listener{
		name: "userd", setting: "USERD_HTTP_ADDR", addr: cfg.HTTPAddr, handler: handler,
		attrs: []any{slog.String("version", version)},
	})
}
