package main

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/userd/userd/adapters/redislimit"
	"github.com/userd/userd/config"
	"github.com/userd/userd/ports"
)

// rateLimitModule provides the store of the per-IP limits: Redis when
// USERD_RATE_LIMIT_REDIS_URL is set, none (a nil ports.RateLimitStore:
// each process keeps its buckets in memory) otherwise.
var rateLimitModule = fx.Module("rate-limit", fx.Provide(newRateLimitStore, rateLimitPort))

// redisPingTimeout bounds the ping at start.
const redisPingTimeout = 2 * time.Second

// newRateLimitStore builds the Redis client, without I/O; nil without
// USERD_RATE_LIMIT_REDIS_URL.
func newRateLimitStore(cfg config.Config) (*redislimit.Store, error) {
	if cfg.RateLimitRedisURL == "" {
		return nil, nil
	}
	return redislimit.New(redislimit.Options{URL: cfg.RateLimitRedisURL})
}

// rateLimitPort is s as the HTTP adapter takes it: nil without Redis.
func rateLimitPort(s *redislimit.Store) ports.RateLimitStore {
	if s == nil {
		return nil
	}
	return s
}

// rateLimitStoreHook is the start step that pings Redis, and closes the
// client at stop. A Redis that does not answer at start is logged and the
// node starts anyway: the limits then fail open or closed as
// USERD_RATE_LIMIT_FAIL says, exactly as when Redis goes away a minute
// later. Refusing to start would make a cache the availability of every
// login, which USERD_RATE_LIMIT_FAIL=open is there to avoid; the client
// reconnects by itself when Redis is back.
func rateLimitStoreHook(cfg config.Config, log *slog.Logger, s *redislimit.Store) fx.Hook {
	return fx.Hook{
		OnStart: func(ctx context.Context) error {
			ctx, cancel := context.WithTimeout(ctx, redisPingTimeout)
			defer cancel()
			if err := s.Ping(ctx); err != nil {
				log.Error("rate limit store: Redis does not answer; the per-IP limits fail "+cfg.RateLimitFail+" until it does",
					slog.String("error", err.Error()))
			}
			return nil
		},
		OnStop: func(context.Context) error { return s.Close() },
	}
}
