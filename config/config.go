// Package config holds userd's configuration: one plain struct, read once at
// start from USERD_* environment variables and an optional YAML file named by
// USERD_CONFIG. The environment wins over the file, the file over the
// defaults. Every problem is reported with the name of its key, and never
// with the value of a secret.
//
// Each setting is declared once, by the struct tags of its Config field:
// env names the key (USERD_ and the tag in the environment, the tag in lower
// case in the file), envDefault gives its default, oneof its allowed values
// and redact how it is masked when shown. github.com/caarlos0/env reads the
// env and envDefault tags and parses the values; this package adds what
// tags cannot say (bounds in rules.go, rules across keys in validate), the
// YAML file (file.go), the reading of both (load.go) and the masked views
// (show.go). docs/configuration.md
// documents every setting, and docs_test.go holds it to these tags.
package config

import (
	"log/slog"
	"net/netip"
	"time"

	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/adapters/secretbox"
)

// EnvPrefix starts the name of every environment variable read.
const EnvPrefix = "USERD_"

// EnvConfigFile names the environment variable holding the YAML file's path.
const EnvConfigFile = EnvPrefix + "CONFIG"

// Database drivers: SQLite, PostgreSQL and MySQL/MariaDB are
// adapters/gormstore's, memory is adapters/memory. The oneof tag of
// Config.DBDriver lists them.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
	DriverMySQL    = "mysql"
	DriverMemory   = "memory"
)

// Access-token signing algorithms, as adapters/jwtissuer names them.
const (
	JWTAlgorithmEdDSA = jwtissuer.EdDSA
	JWTAlgorithmES256 = jwtissuer.ES256
	JWTAlgorithmHS256 = jwtissuer.HS256
)

// MinJWTHMACSecretLen is the shortest USERD_JWT_HMAC_SECRET accepted, in
// bytes: what adapters/jwtissuer accepts, as long as the HMAC-SHA-256
// output (RFC 7518, section 3.2).
const MinJWTHMACSecretLen = jwtissuer.MinHMACKeyLen

// SecretKeyLen is the length of each key of USERD_SECRET_KEY, in bytes once
// decoded: adapters/secretbox's AES-256 key.
const SecretKeyLen = secretbox.KeyLen

// Log formats.
const (
	LogFormatJSON = "json"
	LogFormatText = "text"
)

// Config is userd's effective configuration. Every field is a setting; see
// the package comment for its tags.
type Config struct {
	// HTTPAddr is the listen address, host:port.
	HTTPAddr string `env:"HTTP_ADDR" envDefault:":8080"`
	// MetricsAddr, when set, is a second listen address (host:port) that
	// serves GET /metrics, which the main address then does not. Empty
	// serves the metrics on HTTPAddr, to MetricsAllow only.
	MetricsAddr string `env:"METRICS_ADDR" envDefault:""`
	// AdminAddr is the former name of MetricsAddr, still read: set alone,
	// it is MetricsAddr (ServeMetricsOn says which was used); set with
	// MetricsAddr, it must be equal.
	//
	// Deprecated: use MetricsAddr.
	AdminAddr string `env:"ADMIN_ADDR" envDefault:""`
	// Pprof serves net/http/pprof under /debug/pprof/ on the metrics
	// listener, for profiling a server under load. It needs MetricsAddr:
	// the profiles show the program's inner workings and cost CPU to
	// take, so they are never served on HTTPAddr.
	Pprof bool `env:"PPROF" envDefault:"false"`
	// MetricsAllow are the client networks that may GET /metrics on
	// HTTPAddr (the client IP as the per-IP limits see it); others get a
	// 404. It does not apply to MetricsAddr, whose network placement is
	// its protection.
	MetricsAllow []netip.Prefix `env:"METRICS_ALLOW" envDefault:"127.0.0.0/8,::1/128,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,fc00::/7"`
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are the
	// http.Server timeouts; zero means none, except for ReadHeaderTimeout,
	// which must be set because without it a slow client can hold a
	// connection open forever.
	ReadHeaderTimeout time.Duration `env:"READ_HEADER_TIMEOUT" envDefault:"5s"`
	ReadTimeout       time.Duration `env:"READ_TIMEOUT" envDefault:"15s"`
	WriteTimeout      time.Duration `env:"WRITE_TIMEOUT" envDefault:"30s"`
	IdleTimeout       time.Duration `env:"IDLE_TIMEOUT" envDefault:"120s"`
	// ShutdownTimeout bounds the graceful shutdown.
	ShutdownTimeout time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"15s"`
	// RequestTimeout bounds the work done for one request, database calls
	// included; past it the request answers 503.
	RequestTimeout time.Duration `env:"REQUEST_TIMEOUT" envDefault:"10s"`
	// MaxInFlight caps the API requests served at once; past it requests
	// wait briefly, then answer 503.
	MaxInFlight int `env:"MAX_INFLIGHT" envDefault:"256"`

	// DBDriver is DriverSQLite, DriverPostgres, DriverMySQL or DriverMemory.
	DBDriver string `env:"DB_DRIVER" envDefault:"sqlite" oneof:"sqlite,postgres,mysql,memory"`
	// DBDSN is a SQLite path or file: URI, a PostgreSQL DSN, or a MySQL
	// DSN (user:password@tcp(host:port)/database). It may hold a password;
	// Redacted hides it.
	DBDSN string `env:"DB_DSN" envDefault:"userd.db" redact:"dsn"`
	// DBMaxOpenConns, DBMaxIdleConns and DBConnMaxLifetime size the
	// PostgreSQL and MySQL pool; adapters/gormstore takes zero as its own default
	// (gormstore.Options), not as "unlimited".
	DBMaxOpenConns    int           `env:"DB_MAX_OPEN_CONNS" envDefault:"20"`
	DBMaxIdleConns    int           `env:"DB_MAX_IDLE_CONNS" envDefault:"20"`
	DBConnMaxLifetime time.Duration `env:"DB_CONN_MAX_LIFETIME" envDefault:"30m"`
	// DBAutoMigrate applies pending schema migrations at `serve`. Off, the
	// server refuses to start on an out-of-date schema instead, for teams
	// that migrate as a separate deployment step.
	DBAutoMigrate bool `env:"DB_AUTO_MIGRATE" envDefault:"true"`

	// AccountCacheSize is how many accounts each node keeps in memory for
	// its signed-in requests, which then read no database; zero turns the
	// cache off.
	AccountCacheSize int `env:"ACCOUNT_CACHE_SIZE" envDefault:"10000"`

	// PurgeInterval is how often housekeeping deletes the rows nothing
	// can use any more (expired sessions, used links, old audit events);
	// zero turns it off.
	PurgeInterval time.Duration `env:"PURGE_INTERVAL" envDefault:"10m"`
	// AuditRetention is how long audit events are kept; zero keeps them
	// for ever.
	AuditRetention time.Duration `env:"AUDIT_RETENTION" envDefault:"8760h"`

	// SecretKey encrypts the secrets kept in the database (the token-signing
	// private keys, the refresh-token HMAC key): the base64 of
	// secretbox.KeyLen random bytes, or a comma-separated list of such keys
	// of which the first encrypts and all decrypt (rotation). Unset, with
	// SecretKeyFile unset too, SQLite uses a key file userd.key made beside
	// the database file, an in-memory database a random key of its own, and
	// PostgreSQL refuses to start. Redacted hides it.
	SecretKey string `env:"SECRET_KEY" envDefault:"" redact:"secret"`
	// SecretKeyFile names a file holding what SecretKey holds, instead of
	// it (a trailing line break is fine). Redacted hides it too.
	SecretKeyFile string `env:"SECRET_KEY_FILE" envDefault:"" redact:"secret"`

	// BootstrapAdminEmail and BootstrapAdminPassword, when set, create an
	// admin at start if that email is not registered yet. Both or neither.
	BootstrapAdminEmail    string `env:"BOOTSTRAP_ADMIN_EMAIL" envDefault:""`
	BootstrapAdminPassword string `env:"BOOTSTRAP_ADMIN_PASSWORD" envDefault:"" redact:"secret"`
	BootstrapAdminName     string `env:"BOOTSTRAP_ADMIN_NAME" envDefault:"Administrator"`

	// OpenRegistration lets anyone create a ROLE_CUSTOMER account.
	OpenRegistration bool `env:"OPEN_REGISTRATION" envDefault:"true"`
	// RequireEmailVerification refuses a login, with the right password,
	// to an account whose email is not verified (403 email_not_verified).
	RequireEmailVerification bool `env:"REQUIRE_EMAIL_VERIFICATION" envDefault:"false"`
	// PublicURL is where browsers reach userd: the base of the links userd
	// mails and of the passkey defaults (WebAuthnRelyingPartyID,
	// WebAuthnAllowedOrigins). Scheme and host, maybe a path prefix; no
	// query.
	PublicURL string `env:"PUBLIC_URL" envDefault:"http://localhost:8080"`
	// VerifyEmailURL and ResetPasswordURL, when set, replace the links'
	// URL up to the query (PublicURL + /account/verify-email or
	// /account/reset-password), for apps with pages of their own;
	// "token=T" is appended.
	VerifyEmailURL   string `env:"VERIFY_EMAIL_URL" envDefault:""`
	ResetPasswordURL string `env:"RESET_PASSWORD_URL" envDefault:""`
	// EmailVerificationTTL and PasswordResetTTL are the lifetimes of the
	// links' tokens.
	EmailVerificationTTL time.Duration `env:"EMAIL_VERIFICATION_TTL" envDefault:"24h"`
	PasswordResetTTL     time.Duration `env:"PASSWORD_RESET_TTL" envDefault:"30m"`
	// EmailSignIn turns on the sign-in by email alone: a code and a magic
	// link in one message (POST /auth/email-code…); off, its routes are
	// 404 and the sign-in page does not offer it.
	EmailSignIn bool `env:"EMAIL_SIGN_IN" envDefault:"true"`
	// EmailSignUp mails a sign-in code to an email no account has too,
	// and creates the account at its first right code or link.
	EmailSignUp bool `env:"EMAIL_SIGNUP" envDefault:"false"`
	// EmailCodeTTL is the lifetime of a sign-in code and its link.
	EmailCodeTTL time.Duration `env:"EMAIL_CODE_TTL" envDefault:"10m"`
	// MagicLinkURL, when set, replaces the sign-in link's URL up to the
	// query (PublicURL + /account/magic), as VerifyEmailURL does.
	MagicLinkURL string `env:"MAGIC_LINK_URL" envDefault:""`
	// MailMinInterval and MailMaxPerHour bound the messages the request
	// routes send one account: at most one per MailMinInterval and
	// MailMaxPerHour an hour; zero turns a bound off.
	MailMinInterval time.Duration `env:"MAIL_MIN_INTERVAL" envDefault:"1m"`
	MailMaxPerHour  int           `env:"MAIL_MAX_PER_HOUR" envDefault:"5"`
	// SMTPURL is the mail server, as mail.ParseSMTPURL reads it:
	// smtp://[user:pass@]host:port (STARTTLS required unless ?tls=none or
	// ?tls=opportunistic) or smtps://… (implicit TLS). Empty writes each
	// message as an .eml file into MailDir. Redacted hides its password.
	SMTPURL string `env:"SMTP_URL" envDefault:"" redact:"dsn"`
	// MailFrom is the sender of the messages, an RFC 5322 address.
	MailFrom string `env:"MAIL_FROM" envDefault:"userd <no-reply@localhost>"`
	// MailDir is where the .eml files go without SMTPURL.
	MailDir string `env:"MAIL_DIR" envDefault:"./mail"`
	// MailTemplates, when set, is a directory of templates that replaces
	// the embedded ones (docs/configuration.md, "Mail templates").
	MailTemplates string `env:"MAIL_TEMPLATES" envDefault:""`
	// RequireCurrentPassword makes a non-admin send currentPassword to
	// change its own password or email.
	RequireCurrentPassword bool `env:"REQUIRE_CURRENT_PASSWORD" envDefault:"false"`

	// WebAuthnRPID is the relying party id of passkeys, a domain name
	// (never an IP address) that every passkey is bound to for good.
	// Empty, it is the host of PublicURL: WebAuthnRelyingPartyID says
	// which.
	WebAuthnRPID string `env:"WEBAUTHN_RP_ID" envDefault:""`
	// WebAuthnRPName is the name of userd that authenticators show.
	WebAuthnRPName string `env:"WEBAUTHN_RP_NAME" envDefault:"userd"`
	// WebAuthnOrigins are the origins (scheme://host[:port]) of the pages
	// that may use passkeys. Empty, the origin of PublicURL:
	// WebAuthnAllowedOrigins says which.
	WebAuthnOrigins []string `env:"WEBAUTHN_ORIGINS" envDefault:""`
	// TOTPIssuer names userd in authenticator apps (the issuer of the
	// otpauth URI). Empty, it is WebAuthnRPName: TOTPIssuerName says
	// which.
	TOTPIssuer string `env:"TOTP_ISSUER" envDefault:""`

	// WebhookURL is where events are posted (Standard Webhooks); empty,
	// none are sent. Its query may hold a token: shown like a DSN.
	WebhookURL string `env:"WEBHOOK_URL" envDefault:"" redact:"dsn"`
	// WebhookSecret signs the events: "whsec_" and the base64 of 24 to 64
	// bytes. Required with WebhookURL.
	WebhookSecret string `env:"WEBHOOK_SECRET" envDefault:"" redact:"secret"`
	// WebhookEvents are the event types sent; empty, all of them.
	WebhookEvents []string `env:"WEBHOOK_EVENTS" envDefault:""`

	// ClaimsHookURL is the claims hook, asked for the extra claims of
	// every access and ID token (docs/claims.md); empty, none is asked.
	// https, or http on a loopback host. Shown like a DSN.
	ClaimsHookURL string `env:"CLAIMS_HOOK_URL" envDefault:"" redact:"dsn"`
	// ClaimsHookSecret signs the hook's requests as WebhookSecret does
	// events. Required with ClaimsHookURL.
	ClaimsHookSecret string `env:"CLAIMS_HOOK_SECRET" envDefault:"" redact:"secret"`
	// ClaimsHookTimeout bounds one call of the hook.
	ClaimsHookTimeout time.Duration `env:"CLAIMS_HOOK_TIMEOUT" envDefault:"2s"`
	// ClaimsHookFail is what a sign-in does when the hook does not answer
	// in time or answers another status: ClaimsHookFailClosed refuses it
	// (503), ClaimsHookFailOpen signs in without the hook's claims.
	ClaimsHookFail string `env:"CLAIMS_HOOK_FAIL" envDefault:"closed" oneof:"closed,open"`

	// AccessTTL is the lifetime of an access token.
	AccessTTL time.Duration `env:"ACCESS_TTL" envDefault:"15m"`
	// RefreshTTL is the lifetime of one refresh token.
	RefreshTTL time.Duration `env:"REFRESH_TTL" envDefault:"720h"`
	// RefreshFamilyTTL is the absolute lifetime of a login session.
	RefreshFamilyTTL time.Duration `env:"REFRESH_FAMILY_TTL" envDefault:"2160h"`
	// RefreshReuseGrace is how long a used refresh token still returns its
	// successor; zero turns it off.
	RefreshReuseGrace time.Duration `env:"REFRESH_REUSE_GRACE" envDefault:"10s"`

	// AuthIPLimit is the number of requests a client IP may make per
	// minute to /auth/* and the other routes that check or hash a
	// password; zero turns the limit off.
	AuthIPLimit int `env:"AUTH_IP_LIMIT" envDefault:"120"`
	// RegisterIPLimit is the number of accounts a client IP may register
	// per hour without being an admin; zero turns the limit off.
	RegisterIPLimit int `env:"REGISTER_IP_LIMIT" envDefault:"20"`
	// RateLimitIPv6Prefix is the prefix length by which the per-IP limits
	// key IPv6 clients: 64 gives a host's (or a home's) /64 one
	// allowance, 128 each address its own.
	RateLimitIPv6Prefix int `env:"RATE_LIMIT_IPV6_PREFIX" envDefault:"64"`
	// RateLimitRedisURL, when set, keeps the per-IP limits' buckets in
	// this Redis (redis://[user:password@]host:port/db), shared by every
	// node, instead of each process's memory.
	RateLimitRedisURL string `env:"RATE_LIMIT_REDIS_URL" envDefault:"" redact:"dsn"`
	// RateLimitFail is what the per-IP limits do while Redis fails:
	// RateLimitFailOpen admits the requests, RateLimitFailClosed refuses
	// them with 503.
	RateLimitFail string `env:"RATE_LIMIT_FAIL" envDefault:"open" oneof:"open,closed"`
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix `env:"TRUSTED_PROXIES" envDefault:""`

	// CORSOrigins are the origins (scheme://host[:port]) whose browser
	// pages may call /api/* and /auth/*; "*" alone admits every origin,
	// but not with RefreshCookie. CORSAllowedOrigins gives them as a
	// browser writes them.
	CORSOrigins []string `env:"CORS_ALLOWED_ORIGINS" envDefault:""`
	// RefreshCookie hands browsers the refresh token as the HttpOnly
	// cookie __Host-userd_refresh instead of in the body, and refuses
	// unsafe requests from unlisted origins.
	RefreshCookie bool `env:"REFRESH_COOKIE" envDefault:"false"`
	// AdminConsole serves the admin console under /admin/; false makes
	// every path of it 404. The account page under /account/ is always
	// served.
	AdminConsole bool `env:"ADMIN_CONSOLE" envDefault:"true"`

	// Issuer and Audience are the iss and aud of access tokens.
	Issuer   string `env:"ISSUER" envDefault:"userd"`
	Audience string `env:"AUDIENCE" envDefault:"userd"`
	// JWTAlgorithm signs access tokens and is the only one accepted:
	// JWTAlgorithmEdDSA, JWTAlgorithmES256 or JWTAlgorithmHS256.
	JWTAlgorithm string `env:"JWT_ALGORITHM" envDefault:"EdDSA" oneof:"EdDSA,ES256,HS256"`
	// JWTHMACSecret, with HS256 only, is the signing key instead of keys
	// generated and kept in the database; at least MinJWTHMACSecretLen
	// bytes. Redacted hides it.
	JWTHMACSecret string `env:"JWT_HMAC_SECRET" envDefault:"" redact:"secret"`

	// OIDCProvider turns the OpenID provider on: its RS256 signing keys
	// are made, published in the JWK set and rotated with the access-token
	// keys. False makes and publishes none.
	OIDCProvider bool `env:"OIDC_PROVIDER" envDefault:"true"`
	// OIDCDynamicRegistration opens POST /oauth2/register (RFC 7591) to
	// anyone, for public clients of the code flow only (MCP clients rely
	// on it); off by default.
	OIDCDynamicRegistration bool `env:"OIDC_DYNAMIC_REGISTRATION" envDefault:"false"`

	// LogLevel is one of slog.LevelDebug, LevelInfo, LevelWarn, LevelError.
	LogLevel slog.Level `env:"LOG_LEVEL" envDefault:"info" oneof:"debug,info,warn,error"`
	// LogFormat is LogFormatJSON or LogFormatText.
	LogFormat string `env:"LOG_FORMAT" envDefault:"json" oneof:"json,text"`

	// Argon2MemoryKiB, Argon2Iterations and Argon2Parallelism are the
	// argon2id parameters for new password hashes, within the bounds of
	// adapters/passwordhash.
	Argon2MemoryKiB   uint32 `env:"ARGON2_MEMORY_KIB" envDefault:"19456"`
	Argon2Iterations  uint32 `env:"ARGON2_ITERATIONS" envDefault:"2"`
	Argon2Parallelism uint8  `env:"ARGON2_PARALLELISM" envDefault:"1"`
}

// ServeMetricsOn returns the address of the separate metrics listener
// ("" for none: the metrics are served on HTTPAddr) and the variable that
// set it, for messages: USERD_METRICS_ADDR, or the deprecated
// USERD_ADMIN_ADDR when only that is set.
func (c Config) ServeMetricsOn() (addr, setting string) {
	switch {
	case c.MetricsAddr != "":
		return c.MetricsAddr, EnvPrefix + "METRICS_ADDR"
	case c.AdminAddr != "":
		return c.AdminAddr, EnvPrefix + "ADMIN_ADDR"
	}
	return "", ""
}

// Deprecations returns a warning for each deprecated setting in use, for
// the log at start.
func (c Config) Deprecations() []string {
	var out []string
	if c.AdminAddr != "" {
		out = append(out, EnvPrefix+"ADMIN_ADDR is deprecated: set "+EnvPrefix+"METRICS_ADDR instead (same meaning)")
	}
	return out
}
