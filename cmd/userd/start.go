package main

// The start of userd, in the order it runs. The constructors of the fx
// graph build values and touch nothing; every step that does I/O at start
// is appended to the lifecycle here, and only here, in the order it must
// run: fx starts a lifecycle's hooks in the order they were appended,
// each once the one before succeeded, and stops those that started in
// reverse. So the database closes after the loops and listeners that use
// it have stopped. The one hook appended elsewhere is a stop: the
// mailer's close (newMailer), appended when the mailer is built, before
// any step here, and so run after the sender's loop has stopped.

import (
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/adapters/redislimit"
	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/application"
	"github.com/userd/userd/config"
)

// storeStart is what the start of the store takes.
type storeStart struct {
	fx.In
	Config config.Config
	Log    *slog.Logger
	Box    *secretbox.Box
	// DB and Keys (the SQL key store itself) are absent with the memory
	// store, which has nothing to open, migrate or seal.
	DB   *gormstore.DB       `optional:"true"`
	Keys *gormstore.KeyStore `optional:"true"`
}

// startStore appends the start of the store: key the secret box (before
// any secret of the database is read; a deployment without a key fails
// before it touches the database), open the database and bring its
// schema up to date (or check it is), and, with seal, seal the keys an
// earlier version stored in clear.
func startStore(lc fx.Lifecycle, p storeStart, seal bool) {
	lc.Append(keySecretBox(p.Config, p.Log, p.Box))
	if p.DB == nil {
		return
	}
	lc.Append(openDatabase(p.Config, p.Log, p.DB, true))
	if seal && p.Keys != nil {
		lc.Append(sealClearKeys(p.Keys, p.Log))
	}
}

// startCommand is the start of a command that uses the store: the
// store's start, and nothing else (the one-shot commands sign no token,
// and `userd keys list` must not create a key by looking).
func startCommand(lc fx.Lifecycle, p storeStart) { startStore(lc, p, true) }

// startMigrate is the start of `userd migrate`: the database opened, and
// nothing else; the command manages the schema itself.
func startMigrate(lc fx.Lifecycle, cfg config.Config, log *slog.Logger, db *gormstore.DB) {
	lc.Append(openDatabase(cfg, log, db, false))
}

// serverStart is what the start of `userd serve` takes.
type serverStart struct {
	fx.In
	Store    storeStart
	Issuer   *jwtissuer.Issuer
	Codec    *jwtissuer.RefreshCodec
	Services *application.Services
	// Endings is absent with the memory store: one process.
	Endings *gormstore.SessionEndings `optional:"true"`
	// RateLimit is nil without USERD_RATE_LIMIT_REDIS_URL.
	RateLimit *redislimit.Store
	Handler   http.Handler
	Registry  *prometheus.Registry
}

// startServer is the start of `userd serve`, in order:
//  1. the store: the secret key, the database opened and migrated, the
//     clear keys sealed (startStore);
//  2. the token keys loaded (or created), then reloaded while serving;
//  3. the bootstrap admin, so that it exists before /readyz says 200;
//  4. the loops: the outbox's sender, housekeeping, and the sessions
//     other nodes end (these after the services subscribed to them);
//  5. the rate-limit store asked whether it answers;
//  6. the listeners: the API's, then the metrics' own when it has one.
func startServer(lc fx.Lifecycle, p serverStart) {
	cfg, log := p.Store.Config, p.Store.Log
	startStore(lc, p.Store, true)
	startTokens(lc, p.Issuer, p.Codec)
	if cfg.BootstrapAdminEmail != "" {
		lc.Append(bootstrapAdmin(cfg, p.Services, log))
	}
	runDelivery(lc, p.Services)
	runHousekeeping(lc, p.Services)
	if p.Endings != nil {
		runSessionEndings(lc, p.Endings)
	}
	if p.RateLimit != nil {
		lc.Append(rateLimitStoreHook(cfg, log, p.RateLimit))
	}
	serveAPI(lc, cfg, p.Handler, log)
	serveMetrics(lc, cfg, p.Registry, log)
	// Last: start-up has touched what it will, and the server has yet to
	// run from what it needs (releaseBinaryPages says why).
	lc.Append(fx.StartHook(func() { releaseStartupPages(log) }))
}

// releaseStartupPages gives back what start-up held and the server does
// not need: the garbage of start-up, with the buffers start-up code left
// in sync.Pools (goose's SQL parser keeps 8 MiB of scan buffers after
// the migrations), which only a second collection frees and which an
// idle server, making no garbage, would keep for good; and the pages of
// the binary that start-up mapped. It logs what it did at debug level
// (an error as a warning: the server runs the same without it).
func releaseStartupPages(log *slog.Logger) {
	debug.FreeOSMemory()
	debug.FreeOSMemory() // the pools' victim caches, emptied by the first
	n, err := releaseBinaryPages()
	if err != nil {
		log.Warn("binary pages not released", slog.String("error", err.Error()))
		return
	}
	log.Debug("binary pages released", slog.Uint64("mib", n>>20))
}
