package main

// The secret key that seals the secrets kept in the database, and the
// start step that seals what an earlier version left in clear.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"go.uber.org/fx"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/config"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// keyFileName is the key file made beside a SQLite database when no key
// is configured.
const keyFileName = "userd.key"

// errNoSecretKey refuses PostgreSQL without a configured key: the database
// is shared and backed up on its own, so the key cannot live beside it.
var errNoSecretKey = errors.New("no secret key: with USERD_DB_DRIVER=postgres or mysql, set USERD_SECRET_KEY (or " +
	"USERD_SECRET_KEY_FILE, the path of a file holding it) to the same key on every node; " +
	"make one with `openssl rand -base64 32`")

// secretsModule provides the secret box the stores seal with. It is built
// without a key, and keyed at start (keySecretBox), before the database's
// secrets are read: reading a key file, or making one, is I/O.
var secretsModule = fx.Module("secrets",
	fx.Provide(fx.Annotate(func() (*secretbox.Box, error) { return secretbox.New() },
		fx.As(fx.Self()), fx.As(new(ports.SecretBox)))),
)

// keySecretBox is the start step that gives box its keys (secretKeys).
func keySecretBox(cfg config.Config, log *slog.Logger, box *secretbox.Box) fx.Hook {
	return fx.StartHook(func() error {
		keys, err := secretKeys(cfg, log)
		if err != nil {
			return err
		}
		return box.SetKeys(keys...)
	})
}

// secretKeys returns the secret keys, current first: those of
// USERD_SECRET_KEY or USERD_SECRET_KEY_FILE (checked already by config);
// else, beside a SQLite database file, those of its key file, made at the
// first start; else, for a database that lives in memory, a random key of
// the process's own. PostgreSQL or MySQL without a key is refused.
func secretKeys(cfg config.Config, log *slog.Logger) ([][]byte, error) {
	switch {
	case cfg.SecretKey != "":
		return secretbox.ParseKeys(cfg.SecretKey)
	case cfg.SecretKeyFile != "":
		kf, err := secretbox.ReadKeyFile(cfg.SecretKeyFile)
		if err != nil {
			return nil, fmt.Errorf("USERD_SECRET_KEY_FILE: %w", err)
		}
		if kf.Mode&0o077 != 0 {
			// The path is a secret setting: not logged.
			log.Warn("the file of USERD_SECRET_KEY_FILE may be read by other users than its owner; run chmod 600 on it",
				slog.String("mode", fmt.Sprintf("%#o", kf.Mode)))
		}
		return kf.Keys, nil
	case cfg.DBDriver == config.DriverPostgres, cfg.DBDriver == config.DriverMySQL:
		return nil, errNoSecretKey
	}
	file, onDisk := "", false
	if cfg.DBDriver == config.DriverSQLite {
		file, onDisk = gormstore.SQLiteFile(cfg.DBDSN)
	}
	if !onDisk {
		log.Info("no USERD_SECRET_KEY: the database lives in memory, and its secrets are sealed under a random key that lasts as long as the process")
		return [][]byte{secretbox.NewKey()}, nil
	}
	path := filepath.Join(filepath.Dir(file), keyFileName)
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	kf, err := secretbox.LoadOrCreateKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("secret key file %s: %w", path, err)
	}
	switch {
	case kf.Created:
		log.Warn("no USERD_SECRET_KEY: created the secret key file that seals the secrets of the database; "+
			"back it up, apart from the database, which is useless without it", slog.String("path", path))
	case kf.Mode&0o077 != 0:
		log.Warn("the secret key file may be read by other users than its owner; run chmod 600 on it",
			slog.String("path", path), slog.String("mode", fmt.Sprintf("%#o", kf.Mode)))
	}
	return kf.Keys, nil
}

// sealClearKeys is the start step that seals the keys an earlier version
// stored in clear, under the current secret key, and checks that every
// sealed key opens. It follows the keying of the secret box and the
// database's opening and migration, and precedes the token keys' load,
// which needs the keys (startStore, startServer).
func sealClearKeys(keys *gormstore.KeyStore, log *slog.Logger) fx.Hook {
	return fx.StartHook(func(ctx context.Context) error {
		n, err := keys.SealClear(ctx)
		if err != nil {
			return secretKeyHint(err)
		}
		if n > 0 {
			log.Info("sealed the keys stored in clear by an earlier version", slog.Int("keys", n))
		}
		return nil
	})
}

// secretKeyHint adds what to do to a secret that does not open.
func secretKeyHint(err error) error {
	switch {
	case errors.Is(err, domain.ErrSecretKeyUnknown):
		return fmt.Errorf("%w: give USERD_SECRET_KEY the key the secrets were sealed with, "+
			"after the new one if it is being replaced (see `userd secrets reencrypt`)", err)
	case errors.Is(err, domain.ErrSecretInvalid):
		return fmt.Errorf("%w: the database's keys or TOTP secrets were altered, or restored from another database", err)
	}
	return err
}
