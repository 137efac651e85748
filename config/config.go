// Package config holds userd's configuration: one plain struct, read once at
// start from USERD_* environment variables and an optional YAML file named by
// USERD_CONFIG. The environment wins over the file, the file over the
// defaults. Every problem is reported with the name of its key, and never
// with the value of a secret.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// EnvPrefix starts the name of every environment variable read.
const EnvPrefix = "USERD_"

// EnvConfigFile names the environment variable holding the YAML file's path.
const EnvConfigFile = EnvPrefix + "CONFIG"

// Database drivers.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
	DriverMemory   = "memory"
)

// Access-token signing algorithms.
const (
	JWTAlgorithmEdDSA = "EdDSA"
	JWTAlgorithmES256 = "ES256"
	JWTAlgorithmHS256 = "HS256"
)

// MinJWTHMACSecretLen is the shortest USERD_JWT_HMAC_SECRET accepted, in
// bytes: as long as the HMAC-SHA-256 output (RFC 7518, section 3.2).
const MinJWTHMACSecretLen = 32

// Log formats.
const (
	LogFormatJSON = "json"
	LogFormatText = "text"
)

// Argon2 bounds. They match what adapters/passwordhash agrees to verify:
// parameters beyond them would produce hashes that no login could check.
const (
	maxArgon2MemoryKiB   = 1 << 20
	maxArgon2Iterations  = 20
	maxArgon2Parallelism = 16
)

// mask replaces the value of a secret wherever the configuration is shown.
const mask = "********"

// Config is userd's effective configuration.
type Config struct {
	// HTTPAddr is the listen address, host:port.
	HTTPAddr string
	// AdminAddr, when set, is a second listen address (host:port) that
	// serves GET /metrics, which the main address then does not. Empty
	// serves the metrics on HTTPAddr.
	AdminAddr string
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are the
	// http.Server timeouts; zero means none, except for ReadHeaderTimeout,
	// which must be set because without it a slow client can hold a
	// connection open forever.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// ShutdownTimeout bounds the graceful shutdown.
	ShutdownTimeout time.Duration
	// RequestTimeout bounds the work done for one request, database calls
	// included; past it the request answers 503.
	RequestTimeout time.Duration
	// MaxInFlight caps the API requests served at once; past it requests
	// wait briefly, then answer 503.
	MaxInFlight int

	// DBDriver is DriverSQLite, DriverPostgres or DriverMemory.
	DBDriver string
	// DBDSN is a SQLite path or file: URI, or a PostgreSQL DSN. It may hold
	// a password; Redacted hides it.
	DBDSN string
	// DBMaxOpenConns, DBMaxIdleConns and DBConnMaxLifetime size the
	// PostgreSQL pool, as in database/sql: zero means unlimited.
	DBMaxOpenConns    int
	DBMaxIdleConns    int
	DBConnMaxLifetime time.Duration
	// DBAutoMigrate applies pending schema migrations at `serve`. Off, the
	// server refuses to start on an out-of-date schema instead, for teams
	// that migrate as a separate deployment step.
	DBAutoMigrate bool

	// BootstrapAdminEmail and BootstrapAdminPassword, when set, create an
	// admin at start if that email is not registered yet. Both or neither.
	BootstrapAdminEmail    string
	BootstrapAdminPassword string
	BootstrapAdminName     string

	// OpenRegistration lets anyone create a ROLE_CUSTOMER account.
	OpenRegistration bool
	// RequireCurrentPassword makes a non-admin send currentPassword to
	// change its own password or email.
	RequireCurrentPassword bool

	// AccessTTL is the lifetime of an access token.
	AccessTTL time.Duration
	// RefreshTTL is the lifetime of one refresh token.
	RefreshTTL time.Duration
	// RefreshFamilyTTL is the absolute lifetime of a login session.
	RefreshFamilyTTL time.Duration
	// RefreshReuseGrace is how long a used refresh token still returns its
	// successor; zero turns it off.
	RefreshReuseGrace time.Duration

	// AuthIPLimit is the number of /auth/* requests a client IP may make per
	// minute; zero turns the limit off.
	AuthIPLimit int
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix

	// Issuer and Audience are the iss and aud of access tokens.
	Issuer   string
	Audience string
	// JWTAlgorithm signs access tokens and is the only one accepted:
	// JWTAlgorithmEdDSA, JWTAlgorithmES256 or JWTAlgorithmHS256.
	JWTAlgorithm string
	// JWTHMACSecret, with HS256 only, is the signing key instead of keys
	// generated and kept in the database; at least MinJWTHMACSecretLen
	// bytes. Redacted hides it.
	JWTHMACSecret string

	// LogLevel is one of slog.LevelDebug, LevelInfo, LevelWarn, LevelError.
	LogLevel slog.Level
	// LogFormat is LogFormatJSON or LogFormatText.
	LogFormat string

	// Argon2MemoryKiB, Argon2Iterations and Argon2Parallelism are the
	// argon2id parameters for new password hashes.
	Argon2MemoryKiB   uint32
	Argon2Iterations  uint32
	Argon2Parallelism uint8
}

// field describes one configuration key.
type field struct {
	// key is the name without prefix in upper case, e.g. HTTP_ADDR; the YAML
	// key is its lower-case form.
	key string
	def string
	// secret values are never shown or put in an error message.
	secret bool
	// list values may be a YAML sequence as well as a comma-separated string.
	list bool
	set  func(c *Config, v string) error
	get  func(c *Config) string
}

func (f field) envName() string  { return EnvPrefix + f.key }
func (f field) yamlName() string { return strings.ToLower(f.key) }

// fields lists every key, in the order they are printed.
var fields = []field{
	stringField("HTTP_ADDR", ":8080", func(c *Config) *string { return &c.HTTPAddr }, checkHostPort),
	stringField("ADMIN_ADDR", "", func(c *Config) *string { return &c.AdminAddr }, func(v string) error {
		if v == "" {
			return nil
		}
		return checkHostPort(v)
	}),
	durationField("READ_HEADER_TIMEOUT", "5s", time.Nanosecond, func(c *Config) *time.Duration { return &c.ReadHeaderTimeout }),
	durationField("READ_TIMEOUT", "15s", 0, func(c *Config) *time.Duration { return &c.ReadTimeout }),
	durationField("WRITE_TIMEOUT", "30s", 0, func(c *Config) *time.Duration { return &c.WriteTimeout }),
	durationField("IDLE_TIMEOUT", "120s", 0, func(c *Config) *time.Duration { return &c.IdleTimeout }),
	durationField("SHUTDOWN_TIMEOUT", "15s", time.Nanosecond, func(c *Config) *time.Duration { return &c.ShutdownTimeout }),
	durationField("REQUEST_TIMEOUT", "10s", time.Millisecond, func(c *Config) *time.Duration { return &c.RequestTimeout }),
	intField("MAX_INFLIGHT", "256", 1, func(c *Config) *int { return &c.MaxInFlight }),

	stringField("DB_DRIVER", DriverSQLite, func(c *Config) *string { return &c.DBDriver },
		oneOf(DriverSQLite, DriverPostgres, DriverMemory)),
	{
		key: "DB_DSN", def: "userd.db",
		set: func(c *Config, v string) error { c.DBDSN = v; return nil },
		get: func(c *Config) string { return redactDSN(c.DBDSN) },
	},
	intField("DB_MAX_OPEN_CONNS", "20", 0, func(c *Config) *int { return &c.DBMaxOpenConns }),
	intField("DB_MAX_IDLE_CONNS", "20", 0, func(c *Config) *int { return &c.DBMaxIdleConns }),
	durationField("DB_CONN_MAX_LIFETIME", "30m", 0, func(c *Config) *time.Duration { return &c.DBConnMaxLifetime }),
	boolField("DB_AUTO_MIGRATE", "true", func(c *Config) *bool { return &c.DBAutoMigrate }),

	stringField("BOOTSTRAP_ADMIN_EMAIL", "", func(c *Config) *string { return &c.BootstrapAdminEmail }, nil),
	{
		key: "BOOTSTRAP_ADMIN_PASSWORD", secret: true,
		set: func(c *Config, v string) error { c.BootstrapAdminPassword = v; return nil },
		get: func(c *Config) string { return maskSecret(c.BootstrapAdminPassword) },
	},
	stringField("BOOTSTRAP_ADMIN_NAME", "Administrator", func(c *Config) *string { return &c.BootstrapAdminName }, nil),

	boolField("OPEN_REGISTRATION", "true", func(c *Config) *bool { return &c.OpenRegistration }),
	boolField("REQUIRE_CURRENT_PASSWORD", "false", func(c *Config) *bool { return &c.RequireCurrentPassword }),

	durationField("ACCESS_TTL", "15m", time.Minute, func(c *Config) *time.Duration { return &c.AccessTTL }),
	durationField("REFRESH_TTL", "720h", time.Minute, func(c *Config) *time.Duration { return &c.RefreshTTL }),
	durationField("REFRESH_FAMILY_TTL", "2160h", time.Minute, func(c *Config) *time.Duration { return &c.RefreshFamilyTTL }),
	durationField("REFRESH_REUSE_GRACE", "10s", 0, func(c *Config) *time.Duration { return &c.RefreshReuseGrace }),

	intField("AUTH_IP_LIMIT", "120", 0, func(c *Config) *int { return &c.AuthIPLimit }),
	{
		key: "TRUSTED_PROXIES", list: true,
		set: func(c *Config, v string) error {
			ps, err := parsePrefixes(v)
			c.TrustedProxies = ps
			return err
		},
		get: func(c *Config) string {
			s := make([]string, len(c.TrustedProxies))
			for i, p := range c.TrustedProxies {
				s[i] = p.String()
			}
			return strings.Join(s, ",")
		},
	},

	stringField("ISSUER", "userd", func(c *Config) *string { return &c.Issuer }, nonEmpty),
	stringField("AUDIENCE", "userd", func(c *Config) *string { return &c.Audience }, nonEmpty),
	stringField("JWT_ALGORITHM", JWTAlgorithmEdDSA, func(c *Config) *string { return &c.JWTAlgorithm },
		oneOf(JWTAlgorithmEdDSA, JWTAlgorithmES256, JWTAlgorithmHS256)),
	{
		key: "JWT_HMAC_SECRET", secret: true,
		set: func(c *Config, v string) error { c.JWTHMACSecret = v; return nil },
		get: func(c *Config) string { return maskSecret(c.JWTHMACSecret) },
	},

	{
		key: "LOG_LEVEL", def: "info",
		set: func(c *Config, v string) error {
			levels := map[string]slog.Level{
				"debug": slog.LevelDebug, "info": slog.LevelInfo,
				"warn": slog.LevelWarn, "error": slog.LevelError,
			}
			l, ok := levels[v]
			if !ok {
				return fmt.Errorf("%q is not one of debug, info, warn, error", v)
			}
			c.LogLevel = l
			return nil
		},
		get: func(c *Config) string { return strings.ToLower(c.LogLevel.String()) },
	},
	stringField("LOG_FORMAT", LogFormatJSON, func(c *Config) *string { return &c.LogFormat },
		oneOf(LogFormatJSON, LogFormatText)),

	uintField("ARGON2_MEMORY_KIB", "19456", 8, maxArgon2MemoryKiB, func(c *Config) *uint32 { return &c.Argon2MemoryKiB }),
	uintField("ARGON2_ITERATIONS", "2", 1, maxArgon2Iterations, func(c *Config) *uint32 { return &c.Argon2Iterations }),
	uintField("ARGON2_PARALLELISM", "1", 1, maxArgon2Parallelism, func(c *Config) *uint8 { return &c.Argon2Parallelism }),
}

// Load reads the configuration from the process environment and the file
// named by USERD_CONFIG, if any.
func Load() (Config, error) {
	return LoadFrom(os.Getenv)
}

// LoadFrom is Load with the environment given by getenv. An empty variable
// counts as unset.
func LoadFrom(getenv func(string) string) (Config, error) {
	c, err := defaults()
	if err != nil {
		return Config{}, err
	}
	var errs []error
	if path := getenv(EnvConfigFile); path != "" {
		if err := c.applyFile(path); err != nil {
			errs = append(errs, err)
		}
	}
	for _, f := range fields {
		if v := getenv(f.envName()); v != "" {
			if err := f.apply(&c, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f.envName(), err))
			}
		}
	}
	if len(errs) == 0 {
		errs = c.validate()
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Default returns the configuration with every key at its default.
func Default() Config {
	c, err := defaults()
	if err != nil {
		panic(err) // the defaults are constants; TestDefaults keeps them valid
	}
	return c
}

func defaults() (Config, error) {
	var c Config
	for _, f := range fields {
		if err := f.set(&c, f.def); err != nil {
			return Config{}, fmt.Errorf("default of %s: %w", f.envName(), err)
		}
	}
	return c, nil
}

// apply sets the field from v, hiding the reason of a failure for a secret
// because parse errors tend to quote their input.
func (f field) apply(c *Config, v string) error {
	err := f.set(c, v)
	if err != nil && f.secret {
		return errors.New("invalid value")
	}
	return err
}

// validate checks what involves more than one key.
func (c *Config) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.AdminAddr != "" && c.AdminAddr == c.HTTPAddr {
		add("%sADMIN_ADDR: must differ from %sHTTP_ADDR (%s); leave it unset to serve /metrics there", EnvPrefix, EnvPrefix, c.HTTPAddr)
	}
	if c.DBDriver != DriverMemory && c.DBDSN == "" {
		add("%sDB_DSN: must be set for driver %s", EnvPrefix, c.DBDriver)
	}
	switch {
	case c.BootstrapAdminEmail != "" && c.BootstrapAdminPassword == "":
		add("%sBOOTSTRAP_ADMIN_PASSWORD: must be set when %sBOOTSTRAP_ADMIN_EMAIL is", EnvPrefix, EnvPrefix)
	case c.BootstrapAdminEmail == "" && c.BootstrapAdminPassword != "":
		add("%sBOOTSTRAP_ADMIN_EMAIL: must be set when %sBOOTSTRAP_ADMIN_PASSWORD is", EnvPrefix, EnvPrefix)
	}
	if c.BootstrapAdminEmail != "" && strings.TrimSpace(c.BootstrapAdminName) == "" {
		add("%sBOOTSTRAP_ADMIN_NAME: must not be empty", EnvPrefix)
	}
	// Only the key is named, never the secret.
	if c.JWTHMACSecret != "" {
		if c.JWTAlgorithm != JWTAlgorithmHS256 {
			add("%sJWT_HMAC_SECRET: only used with %sJWT_ALGORITHM=%s, which is %s", EnvPrefix, EnvPrefix, JWTAlgorithmHS256, c.JWTAlgorithm)
		}
		if len(c.JWTHMACSecret) < MinJWTHMACSecretLen {
			add("%sJWT_HMAC_SECRET: must be at least %d bytes", EnvPrefix, MinJWTHMACSecretLen)
		}
	}
	if c.RefreshFamilyTTL < c.RefreshTTL {
		add("%sREFRESH_FAMILY_TTL: must be at least %sREFRESH_TTL (%s)", EnvPrefix, EnvPrefix, c.RefreshTTL)
	}
	if c.RefreshReuseGrace >= c.RefreshTTL {
		add("%sREFRESH_REUSE_GRACE: must be less than %sREFRESH_TTL (%s)", EnvPrefix, EnvPrefix, c.RefreshTTL)
	}
	// Argon2 needs 8 KiB of memory per lane (RFC 9106, section 3.1).
	if c.Argon2MemoryKiB < 8*uint32(c.Argon2Parallelism) {
		add("%sARGON2_MEMORY_KIB: must be at least 8 per lane of %sARGON2_PARALLELISM (%d)",
			EnvPrefix, EnvPrefix, 8*uint32(c.Argon2Parallelism))
	}
	return errs
}

// applyFile sets the keys found in the YAML file at path.
func (c *Config) applyFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvConfigFile, err)
	}
	// Decoding into a node rather than a struct keeps one parser per key for
	// file and environment alike. A struct decoder's KnownFields(true) would
	// catch unknown keys; the loop below does, and also repeated ones.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("config file %s: line %d: want a mapping of keys to values", path, root.Line)
	}

	byName := make(map[string]field, len(fields))
	for _, f := range fields {
		byName[f.yamlName()] = f
	}
	seen := make(map[string]bool)
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		where := fmt.Sprintf("config file %s: line %d", path, k.Line)
		f, ok := byName[k.Value]
		if k.Kind != yaml.ScalarNode || !ok {
			errs = append(errs, fmt.Errorf("%s: unknown key %q", where, k.Value))
			continue
		}
		if seen[k.Value] {
			errs = append(errs, fmt.Errorf("%s: %s: repeated key", where, k.Value))
			continue
		}
		seen[k.Value] = true
		s, set, err := scalarValue(f, v)
		if err == nil && set {
			err = f.apply(c, s)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", where, k.Value, err))
		}
	}
	return errors.Join(errs...)
}

// scalarValue returns the text of a YAML value; set is false for null, which
// leaves the key at its default.
func scalarValue(f field, v *yaml.Node) (s string, set bool, err error) {
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return "", false, nil
	case v.Kind == yaml.ScalarNode:
		return v.Value, true, nil
	case v.Kind == yaml.SequenceNode && f.list:
		items := make([]string, 0, len(v.Content))
		for _, item := range v.Content {
			if item.Kind != yaml.ScalarNode {
				return "", false, errors.New("list items must be scalars")
			}
			items = append(items, item.Value)
		}
		return strings.Join(items, ","), true, nil
	}
	return "", false, errors.New("must be a single value")
}

// Redacted returns the effective value of every key by its environment
// variable name, in the syntax Load reads, with secrets masked: the
// bootstrap password and the JWT HMAC secret entirely, a database password
// inside the DSN.
func (c Config) Redacted() map[string]string {
	m := make(map[string]string, len(fields))
	for _, f := range fields {
		m[f.envName()] = f.get(&c)
	}
	return m
}

// String returns the redacted configuration, one KEY=value per line, so that
// printing a Config by accident never shows a secret.
func (c Config) String() string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(f.envName())
		b.WriteByte('=')
		b.WriteString(f.get(&c))
	}
	return b.String()
}

// GoString is String, so that %#v masks secrets too.
func (c Config) GoString() string { return c.String() }

// LogValue makes log/slog print the redacted configuration.
func (c Config) LogValue() slog.Value {
	attrs := make([]slog.Attr, len(fields))
	for i, f := range fields {
		attrs[i] = slog.String(f.yamlName(), f.get(&c))
	}
	return slog.GroupValue(attrs...)
}

func stringField(key, def string, p func(*Config) *string, check func(string) error) field {
	return field{
		key: key, def: def,
		set: func(c *Config, v string) error {
			if check != nil {
				if err := check(v); err != nil {
					return err
				}
			}
			*p(c) = v
			return nil
		},
		get: func(c *Config) string { return *p(c) },
	}
}

func boolField(key, def string, p func(*Config) *bool) field {
	return field{
		key: key, def: def,
		set: func(c *Config, v string) error {
			// Strict on purpose: strconv.ParseBool would also take "1", "t"
			// and "F", and a typo must not silently flip a security switch.
			switch v {
			case "true":
				*p(c) = true
			case "false":
				*p(c) = false
			default:
				return fmt.Errorf("%q is not true or false", v)
			}
			return nil
		},
		get: func(c *Config) string { return strconv.FormatBool(*p(c)) },
	}
}

func durationField(key, def string, min time.Duration, p func(*Config) *time.Duration) field {
	return field{
		key: key, def: def,
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%q is not a duration like 30s, 15m or 720h", v)
			}
			if d < min {
				if min <= time.Nanosecond {
					return fmt.Errorf("%s must be positive", d)
				}
				return fmt.Errorf("%s is below the minimum of %s", d, min)
			}
			*p(c) = d
			return nil
		},
		get: func(c *Config) string { return p(c).String() },
	}
}

func intField(key, def string, min int, p func(*Config) *int) field {
	return field{
		key: key, def: def,
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%q is not an integer", v)
			}
			if n < min {
				return fmt.Errorf("%d is below the minimum of %d", n, min)
			}
			*p(c) = n
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(*p(c)) },
	}
}

func uintField[T uint8 | uint32](key, def string, min, max uint64, p func(*Config) *T) field {
	return field{
		key: key, def: def,
		set: func(c *Config, v string) error {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%q is not a non-negative integer", v)
			}
			if n < min || n > max {
				return fmt.Errorf("%d is outside %d..%d", n, min, max)
			}
			*p(c) = T(n)
			return nil
		},
		get: func(c *Config) string { return strconv.FormatUint(uint64(*p(c)), 10) },
	}
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(allowed, v) {
			return fmt.Errorf("%q is not one of %s", v, strings.Join(allowed, ", "))
		}
		return nil
	}
}

func nonEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("must not be empty")
	}
	return nil
}

func checkHostPort(v string) error {
	if _, _, err := net.SplitHostPort(v); err != nil {
		return fmt.Errorf("%q is not host:port", v)
	}
	return nil
}

// parsePrefixes parses a comma-separated list of IP addresses and CIDR
// prefixes. An address is a prefix of its full length; host bits of a
// prefix are cleared.
func parsePrefixes(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		var p netip.Prefix
		if strings.Contains(item, "/") {
			var err error
			if p, err = netip.ParsePrefix(item); err != nil {
				return nil, fmt.Errorf("%q is not an IP address or CIDR prefix", item)
			}
			p = p.Masked()
		} else {
			a, err := netip.ParseAddr(item)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%q is not an IP address or CIDR prefix", item)
			}
			// ::ffff:10.0.0.1 is the peer 10.0.0.1 seen through a
			// dual-stack socket; keep the plain form to compare with.
			a = a.Unmap()
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p)
	}
	return out, nil
}

func maskSecret(s string) string {
	if s == "" {
		return ""
	}
	return mask
}

// dsnPassword finds password=… in a key=value PostgreSQL DSN, quoted or not.
var dsnPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]*)`)

// redactDSN masks the password of a URL or key=value DSN. A SQLite path
// comes back unchanged.
func redactDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && u.Scheme != "file" {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), mask)
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", mask)
			u.RawQuery = q.Encode()
		}
		// url.String would percent-encode the mask.
		return strings.ReplaceAll(u.String(), url.QueryEscape(mask), mask)
	}
	if strings.Contains(dsn, "://") {
		// A URL we cannot parse: we cannot tell where a password might be.
		return mask
	}
	return dsnPassword.ReplaceAllString(dsn, "${1}"+mask)
}
