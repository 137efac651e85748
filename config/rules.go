package config

import (
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"net/netip"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	envlib "github.com/caarlos0/env/v11"

	"github.com/userd/userd/adapters/mail"
	"github.com/userd/userd/adapters/passwordhash"
	"github.com/userd/userd/adapters/redislimit"
	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/adapters/webauthn"
	"github.com/userd/userd/adapters/webhook"
	"github.com/userd/userd/domain"
)

// parsers replace caarlos0/env's own for the types where userd is stricter
// or says more in its errors. No setting is a negative number. slog.Level
// needs none: the library uses its UnmarshalText, and the oneof tag keeps
// its input to the four names.
var parsers = map[reflect.Type]envlib.ParserFunc{
	reflect.TypeFor[bool]():           parseBool,
	reflect.TypeFor[time.Duration]():  parseDuration,
	reflect.TypeFor[int]():            parseCount,
	reflect.TypeFor[uint32]():         parseUint[uint32],
	reflect.TypeFor[uint8]():          parseUint[uint8],
	reflect.TypeFor[[]netip.Prefix](): func(v string) (any, error) { return parsePrefixes(v) },
	reflect.TypeFor[[]string]():       func(v string) (any, error) { return parseList(v), nil },
}

// parseBool is strict on purpose: strconv.ParseBool would also take "1",
// "t" and "F", and a typo must not silently flip a security switch.
func parseBool(v string) (any, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return nil, fmt.Errorf("%q is not true or false", v)
}

func parseDuration(v string) (any, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("%q is not a duration like 30s, 15m or 720h", v)
	}
	if d < 0 {
		return nil, fmt.Errorf("%s must not be negative", d)
	}
	return d, nil
}

func parseCount(v string) (any, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil, fmt.Errorf("%q is not an integer", v)
	}
	if n < 0 {
		return nil, fmt.Errorf("%d must not be negative", n)
	}
	return n, nil
}

func parseUint[T uint8 | uint32](v string) (any, error) {
	bits := int(reflect.TypeFor[T]().Size()) * 8
	n, err := strconv.ParseUint(v, 10, bits)
	if err != nil {
		return nil, fmt.Errorf("%q is not an integer from 0 to %d", v, uint64(1)<<bits-1)
	}
	return T(n), nil
}

// parseList splits a comma-separated list, trimming spaces around items and
// dropping empty ones.
func parseList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
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

// rules are the checks of one key each that tags cannot express: address
// syntax, minimums and maximums. Bounds that an adapter enforces come from
// its constants. Allowed values are oneof tags; rules across keys are in
// validate.
var rules = map[string]func(c *Config) error{
	"HTTP_ADDR": func(c *Config) error { return hostPort(c.HTTPAddr) },
	"METRICS_ADDR": func(c *Config) error {
		if c.MetricsAddr == "" {
			return nil
		}
		return hostPort(c.MetricsAddr)
	},
	"ADMIN_ADDR": func(c *Config) error {
		if c.AdminAddr == "" {
			return nil
		}
		return hostPort(c.AdminAddr)
	},
	"METRICS_ALLOW": func(c *Config) error {
		if len(c.MetricsAllow) == 0 {
			return errors.New("must not be empty: list the scrapers' networks (0.0.0.0/0,::/0 for every client), or serve the metrics on USERD_METRICS_ADDR")
		}
		return nil
	},
	"RATE_LIMIT_IPV6_PREFIX": func(c *Config) error {
		if c.RateLimitIPv6Prefix < MinRateLimitIPv6Prefix || c.RateLimitIPv6Prefix > 128 {
			return fmt.Errorf("%d is outside %d..128", c.RateLimitIPv6Prefix, MinRateLimitIPv6Prefix)
		}
		return nil
	},
	"RATE_LIMIT_REDIS_URL": func(c *Config) error {
		if c.RateLimitRedisURL == "" {
			return nil
		}
		return redislimit.CheckURL(c.RateLimitRedisURL)
	},
	"READ_HEADER_TIMEOUT": func(c *Config) error { return positive(c.ReadHeaderTimeout) },
	"PURGE_INTERVAL":      func(c *Config) error { return zeroOrAtLeast(c.PurgeInterval, time.Second) },
	"AUDIT_RETENTION":     func(c *Config) error { return zeroOrAtLeast(c.AuditRetention, time.Hour) },
	"SHUTDOWN_TIMEOUT":    func(c *Config) error { return positive(c.ShutdownTimeout) },
	"REQUEST_TIMEOUT":     func(c *Config) error { return atLeast(c.RequestTimeout, time.Millisecond) },
	"MAX_INFLIGHT":        func(c *Config) error { return atLeast(c.MaxInFlight, 1) },
	"ACCOUNT_CACHE_SIZE":  func(c *Config) error { return atLeast(c.AccountCacheSize, 0) },
	"ACCESS_TTL":          func(c *Config) error { return atLeast(c.AccessTTL, time.Minute) },
	"REFRESH_TTL":         func(c *Config) error { return atLeast(c.RefreshTTL, time.Minute) },
	"REFRESH_FAMILY_TTL":  func(c *Config) error { return atLeast(c.RefreshFamilyTTL, time.Minute) },
	"ISSUER":              func(c *Config) error { return nonEmpty(c.Issuer) },
	"AUDIENCE":            func(c *Config) error { return nonEmpty(c.Audience) },
	// Hashes beyond passwordhash's bounds could never be verified: every
	// user created would be locked out.
	"ARGON2_MEMORY_KIB": func(c *Config) error {
		return within(c.Argon2MemoryKiB, passwordhash.MinMemoryKiBPerLane, passwordhash.MaxMemoryKiB)
	},
	"ARGON2_ITERATIONS":      func(c *Config) error { return within(c.Argon2Iterations, 1, passwordhash.MaxIterations) },
	"PUBLIC_URL":             func(c *Config) error { return baseURL(c.PublicURL, true) },
	"VERIFY_EMAIL_URL":       func(c *Config) error { return baseURL(c.VerifyEmailURL, false) },
	"RESET_PASSWORD_URL":     func(c *Config) error { return baseURL(c.ResetPasswordURL, false) },
	"EMAIL_VERIFICATION_TTL": func(c *Config) error { return positive(c.EmailVerificationTTL) },
	"PASSWORD_RESET_TTL":     func(c *Config) error { return positive(c.PasswordResetTTL) },
	"MAGIC_LINK_URL":         func(c *Config) error { return baseURL(c.MagicLinkURL, false) },
	"EMAIL_CODE_TTL":         func(c *Config) error { return positive(c.EmailCodeTTL) },
	"ARGON2_PARALLELISM":     func(c *Config) error { return within(c.Argon2Parallelism, 1, passwordhash.MaxParallelism) },
	"SMTP_URL":               func(c *Config) error { return smtpURL(c.SMTPURL) },
	"MAIL_FROM":              func(c *Config) error { return mailAddress(c.MailFrom) },
	"MAIL_DIR":               func(c *Config) error { return nonEmpty(c.MailDir) },
	"WEBAUTHN_RP_ID":         func(c *Config) error { return rpID(c) },
	"WEBAUTHN_RP_NAME":       func(c *Config) error { return nonEmpty(c.WebAuthnRPName) },
	"WEBAUTHN_ORIGINS": func(c *Config) error {
		for _, o := range c.WebAuthnOrigins {
			if err := webauthn.CheckOrigin(o); err != nil {
				return err
			}
		}
		return nil
	},
	"WEBHOOK_URL": func(c *Config) error {
		if c.WebhookURL == "" {
			return nil
		}
		return webhook.CheckURL(c.WebhookURL)
	},
	// The error says what is wrong with the secret, never the secret.
	"WEBHOOK_SECRET": func(c *Config) error {
		if c.WebhookSecret == "" {
			return nil
		}
		_, err := webhook.ParseSecret(c.WebhookSecret)
		return err
	},
	"WEBHOOK_EVENTS": func(c *Config) error {
		for _, t := range c.WebhookEvents {
			if !domain.KnownWebhookEventType(t) {
				return fmt.Errorf("%q is not an event type (known: %s)", t, strings.Join(domain.WebhookEventTypes, ","))
			}
		}
		return nil
	},
	"CLAIMS_HOOK_URL": func(c *Config) error {
		if c.ClaimsHookURL == "" {
			return nil
		}
		return webhook.CheckHookURL(c.ClaimsHookURL)
	},
	"CLAIMS_HOOK_SECRET": func(c *Config) error {
		if c.ClaimsHookSecret == "" {
			return nil
		}
		_, err := webhook.ParseSecret(c.ClaimsHookSecret)
		return err
	},
	"CLAIMS_HOOK_TIMEOUT": func(c *Config) error {
		if c.ClaimsHookTimeout < webhook.MinHookTimeout || c.ClaimsHookTimeout > webhook.MaxHookTimeout {
			return fmt.Errorf("%s is outside %s..%s", c.ClaimsHookTimeout, webhook.MinHookTimeout, webhook.MaxHookTimeout)
		}
		return nil
	},
	"CORS_ALLOWED_ORIGINS": func(c *Config) error { return corsOrigins(c.CORSOrigins) },
	"TOTP_ISSUER": func(c *Config) error {
		// The issuer is the label's prefix in the otpauth URI, before a
		// colon (Google Authenticator's Key Uri Format).
		if strings.Contains(c.TOTPIssuerName(), ":") {
			if c.TOTPIssuer == "" {
				return fmt.Errorf("unset, it is %sWEBAUTHN_RP_NAME (%q), which has a colon: set one without", EnvPrefix, c.WebAuthnRPName)
			}
			return errors.New("must not contain a colon")
		}
		return nil
	},
}

// corsOrigins accepts "*" alone, or origins: http or https, a host, maybe a
// port, and nothing else. A path (a trailing slash included) is the common
// mistake: a browser's Origin never has one, so the origin would never
// match.
func corsOrigins(list []string) error {
	for _, o := range list {
		if o == "*" {
			if len(list) > 1 {
				return errors.New(`"*" admits every origin: give it alone, or list the origins`)
			}
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
			u.User != nil || u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" || strings.Contains(o, "*") {
			return fmt.Errorf("%q is not an origin like https://app.example.com or http://localhost:3000", o)
		}
		if u.Path != "" || u.ForceQuery {
			return fmt.Errorf("%q has a path: an origin is scheme://host[:port], without even a trailing slash", o)
		}
	}
	return nil
}

// The values of USERD_CLAIMS_HOOK_FAIL.
const (
	ClaimsHookFailClosed = "closed"
	ClaimsHookFailOpen   = "open"
)

// The values of USERD_RATE_LIMIT_FAIL.
const (
	RateLimitFailOpen   = "open"
	RateLimitFailClosed = "closed"
)

// MinRateLimitIPv6Prefix is the shortest USERD_RATE_LIMIT_IPV6_PREFIX: a
// /32 is a whole provider's allocation, and any shorter prefix would put
// unrelated networks in one allowance.
const MinRateLimitIPv6Prefix = 32

func positive(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s must be positive", d)
	}
	return nil
}

func atLeast[T int | time.Duration](v, minimum T) error {
	if v < minimum {
		return fmt.Errorf("%v is below the minimum of %v", v, minimum)
	}
	return nil
}

// zeroOrAtLeast accepts 0 (off) or a duration of at least minimum.
func zeroOrAtLeast(d, minimum time.Duration) error {
	if d == 0 {
		return nil
	}
	if d < minimum {
		return fmt.Errorf("%s must be 0 (off) or at least %s", d, minimum)
	}
	return nil
}

func within[T uint8 | uint32](v, lo, hi T) error {
	if v < lo || v > hi {
		return fmt.Errorf("%d is outside %d..%d", v, lo, hi)
	}
	return nil
}

func nonEmpty(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("must not be empty")
	}
	return nil
}

// baseURL accepts an absolute http(s) URL without a fragment, the base of
// a link; empty is accepted unless required. A base with a query keeps it:
// token=T is added to it.
func baseURL(v string, required bool) error {
	if v == "" {
		if required {
			return errors.New("must not be empty")
		}
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not an absolute http or https URL (without credentials or a fragment)", v)
	}
	return nil
}

// smtpURL accepts what adapters/mail will use, or empty (no server).
// mail.ParseSMTPURL's errors never show the password.
func smtpURL(v string) error {
	if v == "" {
		return nil
	}
	_, err := mail.ParseSMTPURL(v)
	return err
}

// mailAddress accepts an RFC 5322 address, with or without a name.
func mailAddress(v string) error {
	if _, err := netmail.ParseAddress(v); err != nil {
		return fmt.Errorf("%q is not an address like \"userd <no-reply@example.com>\"", v)
	}
	return nil
}

func hostPort(v string) error {
	if _, _, err := net.SplitHostPort(v); err != nil {
		return fmt.Errorf("%q is not host:port", v)
	}
	return nil
}

// rpID checks the relying party id of passkeys, given or taken from
// USERD_PUBLIC_URL, as adapters/webauthn will: a domain name, never an IP
// address (the start must fail on one, and say so).
func rpID(c *Config) error {
	if c.WebAuthnRPID != "" {
		return webauthn.CheckRPID(c.WebAuthnRPID)
	}
	if baseURL(c.PublicURL, true) != nil {
		return nil // USERD_PUBLIC_URL's own error says it
	}
	if err := webauthn.CheckRPID(c.WebAuthnRelyingPartyID()); err != nil {
		return fmt.Errorf("%w; unset, it is the host of %sPUBLIC_URL (%s): set it", err, EnvPrefix, c.WebAuthnRelyingPartyID())
	}
	return nil
}

// validate checks what involves more than one key.
func (c *Config) validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.MetricsAddr != "" && c.AdminAddr != "" && c.MetricsAddr != c.AdminAddr {
		add("%sADMIN_ADDR: the deprecated name of %sMETRICS_ADDR, which is set to another address (%s); unset %sADMIN_ADDR",
			EnvPrefix, EnvPrefix, c.MetricsAddr, EnvPrefix)
	}
	if addr, setting := c.ServeMetricsOn(); addr != "" && addr == c.HTTPAddr {
		add("%s: must differ from %sHTTP_ADDR (%s); leave it unset to serve /metrics there", setting, EnvPrefix, c.HTTPAddr)
	}
	if addr, _ := c.ServeMetricsOn(); c.Pprof && addr == "" {
		add("%sPPROF: needs %sMETRICS_ADDR: the profiles are served on the metrics listener only, never on %sHTTP_ADDR", EnvPrefix, EnvPrefix, EnvPrefix)
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
	switch {
	case c.WebhookURL != "" && c.WebhookSecret == "":
		add("%sWEBHOOK_SECRET: must be set when %sWEBHOOK_URL is (whsec_ and the base64 of 24 to 64 random bytes)", EnvPrefix, EnvPrefix)
	case c.WebhookURL == "" && c.WebhookSecret != "":
		add("%sWEBHOOK_URL: must be set when %sWEBHOOK_SECRET is", EnvPrefix, EnvPrefix)
	}
	switch {
	case c.ClaimsHookURL != "" && c.ClaimsHookSecret == "":
		add("%sCLAIMS_HOOK_SECRET: must be set when %sCLAIMS_HOOK_URL is (whsec_ and the base64 of 24 to 64 random bytes)", EnvPrefix, EnvPrefix)
	case c.ClaimsHookURL == "" && c.ClaimsHookSecret != "":
		add("%sCLAIMS_HOOK_URL: must be set when %sCLAIMS_HOOK_SECRET is", EnvPrefix, EnvPrefix)
	}
	errs = append(errs, c.validateSecretKey()...)
	if c.RefreshFamilyTTL < c.RefreshTTL {
		add("%sREFRESH_FAMILY_TTL: must be at least %sREFRESH_TTL (%s)", EnvPrefix, EnvPrefix, c.RefreshTTL)
	}
	if c.RefreshReuseGrace >= c.RefreshTTL {
		add("%sREFRESH_REUSE_GRACE: must be less than %sREFRESH_TTL (%s)", EnvPrefix, EnvPrefix, c.RefreshTTL)
	}
	if c.RefreshCookie && slices.Contains(c.CORSOrigins, "*") {
		add("%sCORS_ALLOWED_ORIGINS: \"*\" cannot go with %sREFRESH_COOKIE=true: credentials are only allowed for listed origins; list them",
			EnvPrefix, EnvPrefix)
	}
	if perLane := passwordhash.MinMemoryKiBPerLane * uint32(c.Argon2Parallelism); c.Argon2MemoryKiB < perLane {
		add("%sARGON2_MEMORY_KIB: must be at least %d per lane of %sARGON2_PARALLELISM (%d)",
			EnvPrefix, passwordhash.MinMemoryKiBPerLane, EnvPrefix, perLane)
	}
	return errs
}

// validateSecretKey checks USERD_SECRET_KEY, or reads and checks the file
// USERD_SECRET_KEY_FILE names, so that a bad key fails every command at
// once, `config print` included. Both are secrets: the errors name the
// variable and say what is wrong, never the key or the file's path.
func (c *Config) validateSecretKey() []error {
	switch {
	case c.SecretKey != "" && c.SecretKeyFile != "":
		return []error{fmt.Errorf("%sSECRET_KEY and %sSECRET_KEY_FILE: set one, not both", EnvPrefix, EnvPrefix)}
	case c.SecretKey != "":
		if _, err := secretbox.ParseKeys(c.SecretKey); err != nil {
			return []error{fmt.Errorf("%sSECRET_KEY: %w", EnvPrefix, err)}
		}
	case c.SecretKeyFile != "":
		if _, err := secretbox.ReadKeyFile(c.SecretKeyFile); err != nil {
			return []error{fmt.Errorf("%sSECRET_KEY_FILE: %w", EnvPrefix, err)}
		}
	}
	return nil
}
