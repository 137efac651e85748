package config

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/adapters/mail"
)

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// writeYAML writes content to a temporary file and returns its path.
func writeYAML(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "userd.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := LoadFrom(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		HTTPAddr:             ":8080",
		ReadHeaderTimeout:    5 * time.Second,
		ReadTimeout:          15 * time.Second,
		WriteTimeout:         30 * time.Second,
		IdleTimeout:          120 * time.Second,
		ShutdownTimeout:      15 * time.Second,
		RequestTimeout:       10 * time.Second,
		MaxInFlight:          256,
		DBDriver:             DriverSQLite,
		DBDSN:                "userd.db",
		DBMaxOpenConns:       20,
		DBMaxIdleConns:       20,
		DBConnMaxLifetime:    30 * time.Minute,
		DBAutoMigrate:        true,
		AccountCacheSize:     10_000,
		PurgeInterval:        10 * time.Minute,
		AuditRetention:       365 * 24 * time.Hour,
		BootstrapAdminName:   "Administrator",
		OpenRegistration:     true,
		AccessTTL:            15 * time.Minute,
		RefreshTTL:           720 * time.Hour,
		RefreshFamilyTTL:     2160 * time.Hour,
		RefreshReuseGrace:    10 * time.Second,
		PublicURL:            "http://localhost:8080",
		EmailVerificationTTL: 24 * time.Hour,
		PasswordResetTTL:     30 * time.Minute,
		EmailSignIn:          true,
		EmailCodeTTL:         10 * time.Minute,
		MailMinInterval:      time.Minute,
		MailMaxPerHour:       5,
		MailFrom:             "userd <no-reply@localhost>",
		MailDir:              "./mail",
		WebAuthnRPName:       "userd",
		AdminConsole:         true,
		AuthIPLimit:          120,
		RegisterIPLimit:      20,
		RateLimitIPv6Prefix:  64,
		RateLimitFail:        "open",
		ClaimsHookTimeout:    2 * time.Second,
		ClaimsHookFail:       "closed",
		MetricsAllow: []netip.Prefix{
			netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"),
			netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"),
			netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("fc00::/7"),
		},
		Issuer:            "userd",
		Audience:          "userd",
		JWTAlgorithm:      JWTAlgorithmEdDSA,
		OIDCProvider:      true,
		LogLevel:          slog.LevelInfo,
		LogFormat:         LogFormatJSON,
		Argon2MemoryKiB:   19456,
		Argon2Iterations:  2,
		Argon2Parallelism: 1,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults:\n got %#v\nwant %#v", c.Redacted(), want.Redacted())
	}
	if !reflect.DeepEqual(Default(), want) {
		t.Error("Default() differs from LoadFrom with an empty environment")
	}
}

func TestEnvOverrides(t *testing.T) {
	t.Parallel()
	c, err := LoadFrom(env(map[string]string{
		"USERD_HTTP_ADDR":                "127.0.0.1:9000",
		"USERD_DB_DRIVER":                "postgres",
		"USERD_DB_DSN":                   "postgres://userd:pw@db/userd",
		"USERD_DB_MAX_OPEN_CONNS":        "5",
		"USERD_BOOTSTRAP_ADMIN_EMAIL":    "admin@example.com",
		"USERD_BOOTSTRAP_ADMIN_PASSWORD": "s3cret-admin-pw",
		"USERD_OPEN_REGISTRATION":        "false",
		"USERD_REQUIRE_CURRENT_PASSWORD": "true",
		"USERD_ACCESS_TTL":               "5m",
		"USERD_REFRESH_REUSE_GRACE":      "0s",
		"USERD_AUTH_IP_LIMIT":            "0",
		"USERD_TRUSTED_PROXIES":          "10.0.0.0/8, 192.168.1.7",
		"USERD_ISSUER":                   "https://auth.example.com",
		"USERD_LOG_LEVEL":                "debug",
		"USERD_LOG_FORMAT":               "text",
		"USERD_ARGON2_MEMORY_KIB":        "65536",
		"USERD_ARGON2_PARALLELISM":       "4",
		"USERD_WRITE_TIMEOUT":            "0",
	}))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"HTTPAddr", c.HTTPAddr, "127.0.0.1:9000"},
		{"DBDriver", c.DBDriver, DriverPostgres},
		{"DBDSN", c.DBDSN, "postgres://userd:pw@db/userd"},
		{"DBMaxOpenConns", c.DBMaxOpenConns, 5},
		{"BootstrapAdminEmail", c.BootstrapAdminEmail, "admin@example.com"},
		{"BootstrapAdminPassword", c.BootstrapAdminPassword, "s3cret-admin-pw"},
		{"OpenRegistration", c.OpenRegistration, false},
		{"RequireCurrentPassword", c.RequireCurrentPassword, true},
		{"AccessTTL", c.AccessTTL, 5 * time.Minute},
		{"RefreshReuseGrace", c.RefreshReuseGrace, time.Duration(0)},
		{"AuthIPLimit", c.AuthIPLimit, 0},
		{"Issuer", c.Issuer, "https://auth.example.com"},
		{"LogLevel", c.LogLevel, slog.LevelDebug},
		{"LogFormat", c.LogFormat, LogFormatText},
		{"Argon2MemoryKiB", c.Argon2MemoryKiB, uint32(65536)},
		{"Argon2Parallelism", c.Argon2Parallelism, uint8(4)},
		{"WriteTimeout", c.WriteTimeout, time.Duration(0)},
		{"Audience (default)", c.Audience, "userd"},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	wantProxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32")}
	if !slices.Equal(c.TrustedProxies, wantProxies) {
		t.Errorf("TrustedProxies = %v, want %v", c.TrustedProxies, wantProxies)
	}
}

func TestYAMLFile(t *testing.T) {
	t.Parallel()
	path := writeYAML(t, `
# comments are fine
http_addr: ":9090"
db_driver: memory
open_registration: false
access_ttl: 10m
auth_ip_limit: 60
trusted_proxies:
  - 10.1.2.3
  - fd00::/8
bootstrap_admin_email: root@example.com
bootstrap_admin_password: "from-the-file"
issuer: ~
`)
	c, err := LoadFrom(env(map[string]string{"USERD_CONFIG": path}))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != ":9090" || c.DBDriver != DriverMemory || c.OpenRegistration ||
		c.AccessTTL != 10*time.Minute || c.AuthIPLimit != 60 ||
		c.BootstrapAdminEmail != "root@example.com" || c.BootstrapAdminPassword != "from-the-file" {
		t.Errorf("file values not applied: %v", c)
	}
	if c.Issuer != "userd" {
		t.Errorf("null issuer = %q, want the default", c.Issuer)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.1.2.3/32"), netip.MustParsePrefix("fd00::/8")}
	if !slices.Equal(c.TrustedProxies, want) {
		t.Errorf("TrustedProxies = %v, want %v", c.TrustedProxies, want)
	}

	// An empty file is no configuration at all.
	if _, err := LoadFrom(env(map[string]string{"USERD_CONFIG": writeYAML(t, "")})); err != nil {
		t.Errorf("empty file: %v", err)
	}
}

func TestEnvBeatsYAML(t *testing.T) {
	t.Parallel()
	path := writeYAML(t, "access_ttl: 10m\nlog_level: warn\ntrusted_proxies: 10.0.0.1\n")
	c, err := LoadFrom(env(map[string]string{
		"USERD_CONFIG":     path,
		"USERD_ACCESS_TTL": "20m",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.AccessTTL != 20*time.Minute {
		t.Errorf("AccessTTL = %v, want the environment's 20m", c.AccessTTL)
	}
	if c.LogLevel != slog.LevelWarn {
		t.Errorf("LogLevel = %v, want the file's warn", c.LogLevel)
	}
	if !slices.Equal(c.TrustedProxies, []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}) {
		t.Errorf("TrustedProxies = %v", c.TrustedProxies)
	}
}

func TestInvalidValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string // a substring of the error: the key at least
	}{
		{"bool_yes", map[string]string{"USERD_OPEN_REGISTRATION": "yes"}, "USERD_OPEN_REGISTRATION"},
		{"bool_one", map[string]string{"USERD_REQUIRE_CURRENT_PASSWORD": "1"}, "USERD_REQUIRE_CURRENT_PASSWORD"},
		{"bool_upper", map[string]string{"USERD_OPEN_REGISTRATION": "TRUE"}, "USERD_OPEN_REGISTRATION"},
		{"duration_no_unit", map[string]string{"USERD_ACCESS_TTL": "900"}, "USERD_ACCESS_TTL"},
		{"duration_garbage", map[string]string{"USERD_REFRESH_TTL": "30 days"}, "USERD_REFRESH_TTL"},
		{"duration_negative", map[string]string{"USERD_REFRESH_REUSE_GRACE": "-1s"}, "USERD_REFRESH_REUSE_GRACE"},
		{"access_ttl_too_short", map[string]string{"USERD_ACCESS_TTL": "30s"}, "USERD_ACCESS_TTL"},
		{"zero_read_header_timeout", map[string]string{"USERD_READ_HEADER_TIMEOUT": "0s"}, "USERD_READ_HEADER_TIMEOUT"},
		{"zero_shutdown_timeout", map[string]string{"USERD_SHUTDOWN_TIMEOUT": "0"}, "USERD_SHUTDOWN_TIMEOUT"},
		{"driver", map[string]string{"USERD_DB_DRIVER": "oracle"}, "USERD_DB_DRIVER"},
		{"int_garbage", map[string]string{"USERD_AUTH_IP_LIMIT": "lots"}, "USERD_AUTH_IP_LIMIT"},
		{"int_negative", map[string]string{"USERD_AUTH_IP_LIMIT": "-1"}, "USERD_AUTH_IP_LIMIT"},
		{"conns_negative", map[string]string{"USERD_DB_MAX_OPEN_CONNS": "-5"}, "USERD_DB_MAX_OPEN_CONNS"},
		{"account_cache_negative", map[string]string{"USERD_ACCOUNT_CACHE_SIZE": "-1"}, "USERD_ACCOUNT_CACHE_SIZE"},
		{"log_level", map[string]string{"USERD_LOG_LEVEL": "verbose"}, "USERD_LOG_LEVEL"},
		{"log_format", map[string]string{"USERD_LOG_FORMAT": "xml"}, "USERD_LOG_FORMAT"},
		{"argon2_memory_low", map[string]string{"USERD_ARGON2_MEMORY_KIB": "4"}, "USERD_ARGON2_MEMORY_KIB"},
		{"argon2_memory_high", map[string]string{"USERD_ARGON2_MEMORY_KIB": "2097152"}, "USERD_ARGON2_MEMORY_KIB"},
		{"argon2_memory_per_lane", map[string]string{"USERD_ARGON2_MEMORY_KIB": "16", "USERD_ARGON2_PARALLELISM": "4"}, "USERD_ARGON2_MEMORY_KIB"},
		{"argon2_iterations_zero", map[string]string{"USERD_ARGON2_ITERATIONS": "0"}, "USERD_ARGON2_ITERATIONS"},
		{"argon2_parallelism_wraps", map[string]string{"USERD_ARGON2_PARALLELISM": "257"}, "USERD_ARGON2_PARALLELISM"},
		{"http_addr", map[string]string{"USERD_HTTP_ADDR": "8080"}, "USERD_HTTP_ADDR"},
		{"issuer_blank", map[string]string{"USERD_ISSUER": " "}, "USERD_ISSUER"},
		{"jwt_algorithm_none", map[string]string{"USERD_JWT_ALGORITHM": "none"}, "USERD_JWT_ALGORITHM"},
		{"jwt_algorithm_rs256", map[string]string{"USERD_JWT_ALGORITHM": "RS256"}, "USERD_JWT_ALGORITHM"},
		{"jwt_algorithm_lower_case", map[string]string{"USERD_JWT_ALGORITHM": "eddsa"}, "USERD_JWT_ALGORITHM"},
		{"jwt_hmac_secret_short", map[string]string{"USERD_JWT_ALGORITHM": "HS256", "USERD_JWT_HMAC_SECRET": strings.Repeat("k", 31)}, "USERD_JWT_HMAC_SECRET: must be at least 32 bytes"},
		{"jwt_hmac_secret_without_hs256", map[string]string{"USERD_JWT_HMAC_SECRET": strings.Repeat("k", 32)}, "USERD_JWT_HMAC_SECRET: only used with USERD_JWT_ALGORITHM=HS256"},
		{"proxy_garbage", map[string]string{"USERD_TRUSTED_PROXIES": "10.0.0.1,proxy.local"}, "USERD_TRUSTED_PROXIES"},
		{"proxy_bad_cidr", map[string]string{"USERD_TRUSTED_PROXIES": "10.0.0.0/33"}, "USERD_TRUSTED_PROXIES"},
		{"family_shorter_than_token", map[string]string{"USERD_REFRESH_TTL": "2400h"}, "USERD_REFRESH_FAMILY_TTL"},
		{"grace_not_below_ttl", map[string]string{"USERD_REFRESH_TTL": "1m", "USERD_REFRESH_REUSE_GRACE": "1m"}, "USERD_REFRESH_REUSE_GRACE"},
		{"missing_file", map[string]string{"USERD_CONFIG": "/nonexistent/userd.yaml"}, "USERD_CONFIG"},
		{"smtp_url_scheme", map[string]string{"USERD_SMTP_URL": "http://mail.example.com"}, "USERD_SMTP_URL: the scheme must be smtp or smtps"},
		{"redis_url_scheme", map[string]string{"USERD_RATE_LIMIT_REDIS_URL": "http://:hunter2@cache:6379"}, "USERD_RATE_LIMIT_REDIS_URL: the scheme must be redis or rediss"},
		{"redis_url_db", map[string]string{"USERD_RATE_LIMIT_REDIS_URL": "redis://cache:6379/x"}, "USERD_RATE_LIMIT_REDIS_URL: not a Redis URL"},
		{"rate_limit_fail", map[string]string{"USERD_RATE_LIMIT_FAIL": "maybe"}, "USERD_RATE_LIMIT_FAIL"},
		{"claims_hook_http_not_loopback", hookEnv("http://hooks.example.com/claims"), "USERD_CLAIMS_HOOK_URL: must be https:// unless its host is loopback"},
		{"claims_hook_link_local", hookEnv("https://169.254.169.254/claims"), "USERD_CLAIMS_HOOK_URL: must not point at 169.254.169.254"},
		{"claims_hook_without_secret", map[string]string{"USERD_CLAIMS_HOOK_URL": "https://hooks.example.com/claims"}, "USERD_CLAIMS_HOOK_SECRET: must be set when USERD_CLAIMS_HOOK_URL is"},
		{"claims_hook_secret_without_url", map[string]string{"USERD_CLAIMS_HOOK_SECRET": hookEnv("")["USERD_CLAIMS_HOOK_SECRET"]}, "USERD_CLAIMS_HOOK_URL: must be set when USERD_CLAIMS_HOOK_SECRET is"},
		{"claims_hook_secret_bad", map[string]string{"USERD_CLAIMS_HOOK_URL": "https://hooks.example.com/claims", "USERD_CLAIMS_HOOK_SECRET": "secret"}, "USERD_CLAIMS_HOOK_SECRET"},
		{"claims_hook_timeout_short", map[string]string{"USERD_CLAIMS_HOOK_TIMEOUT": "10ms"}, "USERD_CLAIMS_HOOK_TIMEOUT: 10ms is outside 100ms..30s"},
		{"claims_hook_timeout_long", map[string]string{"USERD_CLAIMS_HOOK_TIMEOUT": "1m"}, "USERD_CLAIMS_HOOK_TIMEOUT"},
		{"claims_hook_fail", map[string]string{"USERD_CLAIMS_HOOK_FAIL": "maybe"}, "USERD_CLAIMS_HOOK_FAIL"},
		{"smtp_url_garbage", map[string]string{"USERD_SMTP_URL": "mail.example.com:25"}, "USERD_SMTP_URL"},
		{"smtp_url_tls", map[string]string{"USERD_SMTP_URL": "smtp://mail.example.com?tls=off"}, "USERD_SMTP_URL"},
		{"mail_from", map[string]string{"USERD_MAIL_FROM": "userd at example.com"}, "USERD_MAIL_FROM"},
		{"mail_dir_blank", map[string]string{"USERD_MAIL_DIR": " "}, "USERD_MAIL_DIR"},
		// Where cloud metadata services answer, or this host: never a
		// receiver (adapters/webhook has every form).
		{"webhook_url_link_local", webhookEnv("http://169.254.169.254/latest/"), "USERD_WEBHOOK_URL: must not point at 169.254.169.254"},
		{"webhook_url_link_local_v6", webhookEnv("http://[fe80::1]/hook"), "USERD_WEBHOOK_URL: must not point at fe80::1"},
		{"webhook_url_mapped", webhookEnv("http://[::ffff:169.254.169.254]/hook"), "USERD_WEBHOOK_URL: must not point at ::ffff:169.254.169.254, that is 169.254.169.254, a link-local"},
		{"webhook_url_unspecified", webhookEnv("http://0.0.0.0:8080/hook"), "USERD_WEBHOOK_URL: must not point at 0.0.0.0"},
		{"webhook_url_unspecified_v6", webhookEnv("http://[::]/hook"), "USERD_WEBHOOK_URL: must not point at ::"},
		{"webhook_url_decimal", webhookEnv("http://2852039166/hook"), "USERD_WEBHOOK_URL: host \"2852039166\" is a number"},
		{"webhook_url_zero", webhookEnv("http://0/hook"), "USERD_WEBHOOK_URL: host \"0\" is a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := LoadFrom(env(tt.env))
			if err == nil {
				t.Fatal("LoadFrom succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name %s", err, tt.want)
			}
		})
	}
}

// webhookEnv is a webhook receiver at url with a good secret.
func hookEnv(url string) map[string]string {
	return map[string]string{"USERD_CLAIMS_HOOK_URL": url,
		"USERD_CLAIMS_HOOK_SECRET": "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 32))}
}

func webhookEnv(url string) map[string]string {
	return map[string]string{"USERD_WEBHOOK_URL": url,
		"USERD_WEBHOOK_SECRET": "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 32))}
}

func TestWebhookURL_loopback_and_private_receivers_are_allowed(t *testing.T) {
	t.Parallel()
	for _, url := range []string{"http://127.0.0.1:9000/hook", "http://[::1]/hook", "http://10.0.0.7/hook",
		"http://192.168.1.20/hook", "https://hooks.example.com/userd"} {
		if _, err := LoadFrom(env(webhookEnv(url))); err != nil {
			t.Errorf("USERD_WEBHOOK_URL=%s: %v", url, err)
		}
	}
}

func TestErrorsAreCollected(t *testing.T) {
	t.Parallel()
	_, err := LoadFrom(env(map[string]string{
		"USERD_OPEN_REGISTRATION": "yes",
		"USERD_ACCESS_TTL":        "soon",
	}))
	if err == nil || !strings.Contains(err.Error(), "USERD_OPEN_REGISTRATION") || !strings.Contains(err.Error(), "USERD_ACCESS_TTL") {
		t.Errorf("error %v should name both keys", err)
	}
}

func TestYAMLErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, content, want string
	}{
		{"unknown_key", "http_adr: ':80'\n", `unknown key "http_adr"`},
		{"upper_case_key", "HTTP_ADDR: ':80'\n", `unknown key "HTTP_ADDR"`},
		{"prefixed_key", "userd_http_addr: ':80'\n", "unknown key"},
		{"repeated_key", "access_ttl: 5m\naccess_ttl: 6m\n", "repeated key"},
		{"bad_bool", "open_registration: yes\n", "line 1: open_registration"},
		{"bad_duration", "log_level: info\naccess_ttl: 15\n", "line 2: access_ttl"},
		{"list_for_scalar", "issuer: [a, b]\n", "issuer: must be a single value"},
		{"map_value", "trusted_proxies: {a: b}\n", "trusted_proxies"},
		{"not_a_mapping", "- http_addr\n", "want a mapping"},
		{"syntax", "http_addr: [\n", "config file"},
		{"empty_dsn_for_postgres", "db_driver: postgres\ndb_dsn: ''\n", "USERD_DB_DSN: must be set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := writeYAML(t, tt.content)
			_, err := LoadFrom(env(map[string]string{"USERD_CONFIG": path}))
			if err == nil {
				t.Fatal("LoadFrom succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestSecretsNeverShown(t *testing.T) {
	t.Parallel()
	const secret = "Tr0ub4dor&3-very-secret"

	// Errors about the password name the key, never the value.
	cases := []struct {
		name string
		env  map[string]string
		file string
	}{
		{name: "password_without_email", env: map[string]string{"USERD_BOOTSTRAP_ADMIN_PASSWORD": secret}},
		{name: "password_as_list_in_file", file: "bootstrap_admin_password: [" + secret + "]\n"},
		{name: "password_without_email_in_file", file: "bootstrap_admin_password: " + secret + "\n"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := map[string]string{}
			for k, v := range tt.env {
				e[k] = v
			}
			if tt.file != "" {
				e["USERD_CONFIG"] = writeYAML(t, tt.file)
			}
			_, err := LoadFrom(env(e))
			if err == nil {
				t.Fatal("LoadFrom succeeded")
			}
			if !strings.Contains(err.Error(), "BOOTSTRAP_") && !strings.Contains(err.Error(), "bootstrap_") {
				t.Errorf("error %q does not name the key", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q shows the password", err)
			}
		})
	}

	// Printing the configuration in any way masks it.
	c, err := LoadFrom(env(map[string]string{
		"USERD_BOOTSTRAP_ADMIN_EMAIL":    "admin@example.com",
		"USERD_BOOTSTRAP_ADMIN_PASSWORD": secret,
		"USERD_DB_DRIVER":                "postgres",
		"USERD_DB_DSN":                   "postgres://userd:" + secret + "@db:5432/userd?sslmode=require",
	}))
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "config", c)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "config", c)
	outputs := map[string]string{
		"String":   c.String(),
		"%v":       fmt.Sprintf("%v", c),
		"%+v":      fmt.Sprintf("%+v", c),
		"%#v":      fmt.Sprintf("%#v", c),
		"slog":     logged.String(),
		"Redacted": fmt.Sprint(c.Redacted()),
	}
	for how, out := range outputs {
		if strings.Contains(out, secret) {
			t.Errorf("%s shows the secret: %s", how, out)
		}
	}
	r := c.Redacted()
	if r["USERD_BOOTSTRAP_ADMIN_PASSWORD"] != "********" {
		t.Errorf("password shown as %q", r["USERD_BOOTSTRAP_ADMIN_PASSWORD"])
	}
	if want := "postgres://userd:********@db:5432/userd?sslmode=require"; r["USERD_DB_DSN"] != want {
		t.Errorf("DSN shown as %q, want %q", r["USERD_DB_DSN"], want)
	}
	if r["USERD_BOOTSTRAP_ADMIN_EMAIL"] != "admin@example.com" {
		t.Errorf("email shown as %q", r["USERD_BOOTSTRAP_ADMIN_EMAIL"])
	}
	if got := Default().Redacted()["USERD_BOOTSTRAP_ADMIN_PASSWORD"]; got != "" {
		t.Errorf("unset password shown as %q, want empty", got)
	}
}

func TestRedactDSN(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"userd.db", "userd.db"},
		{"file:userd.db?_pragma=busy_timeout(5000)", "file:userd.db?_pragma=busy_timeout(5000)"},
		{"postgres://u:p@h/db", "postgres://u:********@h/db"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"postgres://h/db?user=u&password=p", "postgres://h/db?password=********&user=u"},
		{"host=h user=u password=p dbname=d", "host=h user=u password=******** dbname=d"},
		{"host=h password='p q\\' r' dbname=d", "host=h password=******** dbname=d"},
		{"postgres://u:p%zz@h/db", "********"},
		{"u:p@tcp(127.0.0.1:3306)/db?parseTime=false", "u:********@tcp(127.0.0.1:3306)/db?parseTime=false"},
		{"u:p@q:r@/s@tcp(h:3306)/db", "u:********@tcp(h:3306)/db"},
		{"u@tcp(h)/db", "u@tcp(h)/db"},
		{"u:p@unix(/run/mysqld/mysqld.sock)/db", "u:********@unix(/run/mysqld/mysqld.sock)/db"},
		{"u:p@/db", "u:********@/db"},
	}
	for _, tt := range tests {
		if got := redactDSN(tt.in); got != tt.want {
			t.Errorf("redactDSN(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	got, err := parsePrefixes(" 10.0.0.1 , 172.16.5.4/12,, 2001:db8::1, 2001:db8::/32, ::ffff:192.0.2.1 ,")
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.1/32"),
		netip.MustParsePrefix("172.16.0.0/12"), // host bits cleared
		netip.MustParsePrefix("2001:db8::1/128"),
		netip.MustParsePrefix("2001:db8::/32"),
		netip.MustParsePrefix("192.0.2.1/32"), // unmapped
	}
	if !slices.Equal(got, want) {
		t.Errorf("parsePrefixes = %v, want %v", got, want)
	}
	if got, err := parsePrefixes(""); err != nil || got != nil {
		t.Errorf("empty list = %v, %v", got, err)
	}
	for _, bad := range []string{"10.0.0", "fe80::1%eth0", "10.0.0.0/8/8", "example.com"} {
		if _, err := parsePrefixes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestRedactedRoundTrip: what Redacted prints, Load reads back to the same
// configuration (secrets aside), so `userd config print` output is usable.
func TestRedactedRoundTrip(t *testing.T) {
	t.Parallel()
	c, err := LoadFrom(env(map[string]string{
		"USERD_TRUSTED_PROXIES": "10.0.0.0/8,::1",
		"USERD_LOG_LEVEL":       "error",
	}))
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadFrom(env(c.Redacted()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, again) {
		t.Errorf("round trip changed the configuration:\n%v\n---\n%v", c, again)
	}
	if len(c.Redacted()) != len(settings) || strings.Count(c.String(), "\n") != len(settings)-1 {
		t.Error("Redacted or String misses keys")
	}
}

func TestJWTSettings(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{JWTAlgorithmEdDSA, JWTAlgorithmES256, JWTAlgorithmHS256} {
		c, err := LoadFrom(env(map[string]string{"USERD_JWT_ALGORITHM": alg}))
		if err != nil || c.JWTAlgorithm != alg || c.JWTHMACSecret != "" {
			t.Errorf("USERD_JWT_ALGORITHM=%s: %q, %v", alg, c.JWTAlgorithm, err)
		}
	}

	const secret = "0123456789abcdef0123456789abcdef" // exactly 32 bytes
	c, err := LoadFrom(env(map[string]string{"USERD_JWT_ALGORITHM": "HS256", "USERD_JWT_HMAC_SECRET": secret}))
	if err != nil {
		t.Fatal(err)
	}
	if c.JWTAlgorithm != JWTAlgorithmHS256 || c.JWTHMACSecret != secret {
		t.Errorf("got %q and a secret of %d bytes", c.JWTAlgorithm, len(c.JWTHMACSecret))
	}

	path := writeYAML(t, "jwt_algorithm: ES256\n")
	if c, err := LoadFrom(env(map[string]string{"USERD_CONFIG": path})); err != nil || c.JWTAlgorithm != JWTAlgorithmES256 {
		t.Errorf("jwt_algorithm in the file: %q, %v", c.JWTAlgorithm, err)
	}
}

// The HMAC secret is a secret: errors name the key and never show the value,
// and every way of printing the configuration masks it.
func TestJWTHMACSecretNeverShown(t *testing.T) {
	t.Parallel()
	const short = "Tr0ub4dor&3-short-hmac-secret" // 29 bytes
	const long = "Tr0ub4dor&3-a-long-enough-hmac-secret-value"
	cases := []struct {
		name string
		env  map[string]string
		file string
	}{
		{name: "short", env: map[string]string{"USERD_JWT_ALGORITHM": "HS256", "USERD_JWT_HMAC_SECRET": short}},
		{name: "short_in_file", file: "jwt_algorithm: HS256\njwt_hmac_secret: " + short + "\n"},
		{name: "list_in_file", file: "jwt_algorithm: HS256\njwt_hmac_secret: [" + short + "]\n"},
		{name: "without_hs256", env: map[string]string{"USERD_JWT_HMAC_SECRET": long}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := map[string]string{}
			for k, v := range tt.env {
				e[k] = v
			}
			if tt.file != "" {
				e["USERD_CONFIG"] = writeYAML(t, tt.file)
			}
			_, err := LoadFrom(env(e))
			if err == nil {
				t.Fatal("LoadFrom succeeded")
			}
			if !strings.Contains(strings.ToUpper(err.Error()), "JWT_HMAC_SECRET") {
				t.Errorf("error %q does not name the key", err)
			}
			if strings.Contains(err.Error(), short) || strings.Contains(err.Error(), long) || strings.Contains(err.Error(), "Tr0ub4dor") {
				t.Errorf("error %q shows the secret", err)
			}
		})
	}

	c, err := LoadFrom(env(map[string]string{"USERD_JWT_ALGORITHM": "HS256", "USERD_JWT_HMAC_SECRET": long}))
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "config", c)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "config", c)
	for how, out := range map[string]string{
		"String": c.String(), "%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c),
		"slog": logged.String(), "Redacted": fmt.Sprint(c.Redacted()),
	} {
		if strings.Contains(out, long) {
			t.Errorf("%s shows the secret: %s", how, out)
		}
	}
	if got := c.Redacted()["USERD_JWT_HMAC_SECRET"]; got != "********" {
		t.Errorf("secret shown as %q", got)
	}
	if got := Default().Redacted()["USERD_JWT_HMAC_SECRET"]; got != "" {
		t.Errorf("unset secret shown as %q, want empty", got)
	}
}

// USERD_METRICS_ADDR moves /metrics to a listener of its own;
// USERD_ADMIN_ADDR, its former name, still does, and says so.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env                       map[string]string
		addr, setting, deprecated string
	}{
		{nil, "", "", ""},
		{map[string]string{"USERD_METRICS_ADDR": "127.0.0.1:9100"}, "127.0.0.1:9100", "USERD_METRICS_ADDR", ""},
		{map[string]string{"USERD_ADMIN_ADDR": "127.0.0.1:9100"}, "127.0.0.1:9100", "USERD_ADMIN_ADDR", "USERD_ADMIN_ADDR is deprecated"},
		{map[string]string{"USERD_METRICS_ADDR": ":9100", "USERD_ADMIN_ADDR": ":9100"}, ":9100", "USERD_METRICS_ADDR", "USERD_ADMIN_ADDR is deprecated"},
	} {
		c, err := LoadFrom(env(tc.env))
		if err != nil {
			t.Fatalf("%v: %v", tc.env, err)
		}
		addr, setting := c.ServeMetricsOn()
		deprecations := strings.Join(c.Deprecations(), "; ")
		if addr != tc.addr || setting != tc.setting || (tc.deprecated == "") != (deprecations == "") ||
			!strings.Contains(deprecations, tc.deprecated) {
			t.Errorf("%v: ServeMetricsOn = %q, %q; Deprecations %q", tc.env, addr, setting, deprecations)
		}
	}
	for bad, named := range map[string]map[string]string{
		"USERD_METRICS_ADDR: ":                                   {"USERD_METRICS_ADDR": "9100"},
		"USERD_METRICS_ADDR: must differ from USERD_HTTP_ADDR":   {"USERD_METRICS_ADDR": ":8080"},
		"USERD_ADMIN_ADDR: the deprecated name of USERD_METRICS": {"USERD_METRICS_ADDR": ":9100", "USERD_ADMIN_ADDR": ":9200"},
		"USERD_PPROF: needs USERD_METRICS_ADDR":                  {"USERD_PPROF": "true"},
	} {
		if _, err := LoadFrom(env(named)); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("LoadFrom(%v) error = %v, want %q", named, err, bad)
		}
	}
}

// USERD_PPROF is off by default and, on, needs the metrics listener
// (checked in TestMetricsAddr).
func TestPprof(t *testing.T) {
	t.Parallel()
	if Default().Pprof {
		t.Error("USERD_PPROF is on by default")
	}
	c, err := LoadFrom(env(map[string]string{"USERD_PPROF": "true", "USERD_METRICS_ADDR": "127.0.0.1:9100"}))
	if err != nil || !c.Pprof {
		t.Errorf("USERD_PPROF=true with USERD_METRICS_ADDR: Pprof %v, %v", c.Pprof, err)
	}
}

func TestMetricsAllow(t *testing.T) {
	t.Parallel()
	c, err := LoadFrom(env(map[string]string{"USERD_METRICS_ALLOW": "0.0.0.0/0, ::/0"}))
	if err != nil || len(c.MetricsAllow) != 2 || !c.MetricsAllow[0].Contains(netip.MustParseAddr("203.0.113.9")) {
		t.Errorf("METRICS_ALLOW = %v, %v", c.MetricsAllow, err)
	}
	// The default is the HTTP adapter's own.
	if got, want := Default().MetricsAllow, httpapi.DefaultMetricsAllow(); !slices.Equal(got, want) {
		t.Errorf("default METRICS_ALLOW %v, httpapi.DefaultMetricsAllow %v", got, want)
	}
	for _, bad := range []string{"metrics_allow: ''\n", "metrics_allow: []\n"} {
		if _, err := LoadFrom(env(map[string]string{EnvConfigFile: writeYAML(t, bad)})); err == nil || !strings.Contains(err.Error(), "must not be empty") {
			t.Errorf("%q: error %v", bad, err)
		}
	}
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	c, err := LoadFrom(env(map[string]string{"USERD_REGISTER_IP_LIMIT": "0", "USERD_RATE_LIMIT_IPV6_PREFIX": "128"}))
	if err != nil || c.RegisterIPLimit != 0 || c.RateLimitIPv6Prefix != 128 {
		t.Errorf("limits: %d, %d, %v", c.RegisterIPLimit, c.RateLimitIPv6Prefix, err)
	}
	for _, bad := range []string{"31", "129", "0", "-1"} {
		if _, err := LoadFrom(env(map[string]string{"USERD_RATE_LIMIT_IPV6_PREFIX": bad})); err == nil ||
			!strings.Contains(err.Error(), "USERD_RATE_LIMIT_IPV6_PREFIX") {
			t.Errorf("RATE_LIMIT_IPV6_PREFIX=%s: error %v", bad, err)
		}
	}
}

func TestAdminAddr(t *testing.T) {
	t.Parallel()
	c, err := LoadFrom(env(map[string]string{"USERD_ADMIN_ADDR": "127.0.0.1:9100"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.AdminAddr != "127.0.0.1:9100" || c.Redacted()["USERD_ADMIN_ADDR"] != "127.0.0.1:9100" {
		t.Errorf("AdminAddr = %q", c.AdminAddr)
	}
	c, err = LoadFrom(env(map[string]string{EnvConfigFile: writeYAML(t, "admin_addr: ':9100'\n")}))
	if err != nil || c.AdminAddr != ":9100" {
		t.Errorf("admin_addr from the file: %q, %v", c.AdminAddr, err)
	}
	if Default().AdminAddr != "" {
		t.Errorf("AdminAddr defaults to %q, want unset", Default().AdminAddr)
	}
	for _, bad := range []map[string]string{
		{"USERD_ADMIN_ADDR": "9100"},
		{"USERD_ADMIN_ADDR": ":8080"},
		{"USERD_ADMIN_ADDR": "127.0.0.1:9000", "USERD_HTTP_ADDR": "127.0.0.1:9000"},
		{"USERD_ADMIN_ADDR": "127.0.0.1:9001", "USERD_METRICS_ADDR": "127.0.0.1:9002"},
	} {
		if _, err := LoadFrom(env(bad)); err == nil || !strings.Contains(err.Error(), "USERD_ADMIN_ADDR") {
			t.Errorf("LoadFrom(%v) error = %v, want one naming USERD_ADMIN_ADDR", bad, err)
		}
	}
}

// TestMailSettings: the mail settings reach Config as given, their
// defaults are adapters/mail's, and the SMTP password is never shown,
// not even in the error about a URL that does not parse.
func TestMailSettings(t *testing.T) {
	t.Parallel()
	if d := Default(); d.MailFrom != mail.DefaultFrom || d.MailDir != mail.DefaultDir {
		t.Errorf("defaults %q, %q differ from adapters/mail's %q, %q", d.MailFrom, d.MailDir, mail.DefaultFrom, mail.DefaultDir)
	}
	const secret = "sm7p-s3cret"
	c, err := LoadFrom(env(map[string]string{
		"USERD_SMTP_URL":       "smtps://apikey:" + secret + "@smtp.example.com:465",
		"USERD_MAIL_FROM":      "Acme <accounts@acme.test>",
		"USERD_MAIL_DIR":       "/var/spool/userd",
		"USERD_MAIL_TEMPLATES": "/etc/userd/mail",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.SMTPURL != "smtps://apikey:"+secret+"@smtp.example.com:465" || c.MailFrom != "Acme <accounts@acme.test>" ||
		c.MailDir != "/var/spool/userd" || c.MailTemplates != "/etc/userd/mail" {
		t.Errorf("mail settings: %+v", c.Redacted())
	}
	if got, want := c.Redacted()["USERD_SMTP_URL"], "smtps://apikey:********@smtp.example.com:465"; got != want {
		t.Errorf("USERD_SMTP_URL shown as %q, want %q", got, want)
	}
	if strings.Contains(c.String(), secret) {
		t.Error("String shows the SMTP password")
	}
	for _, bad := range []string{
		"smtp://apikey:" + secret + "%zz@smtp.example.com",
		"smtp://apikey:" + secret + "@smtp.example.com:99999",
		"ftp://apikey:" + secret + "@smtp.example.com",
	} {
		_, err := LoadFrom(env(map[string]string{"USERD_SMTP_URL": bad}))
		if err == nil || !strings.Contains(err.Error(), "USERD_SMTP_URL") || strings.Contains(err.Error(), secret) {
			t.Errorf("%v: want an error naming USERD_SMTP_URL without the password", err)
		}
	}
}

func TestLinks_default_to_userd_pages_under_the_public_url(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		public, verify, reset string
		wantVerify, wantReset string
	}{
		{"http://localhost:8080", "", "", "http://localhost:8080/account/verify-email", "http://localhost:8080/account/reset-password"},
		{"https://id.example.com/userd/", "", "", "https://id.example.com/userd/account/verify-email", "https://id.example.com/userd/account/reset-password"},
		{"https://id.example.com", "https://app.example.com/verify", "https://app.example.com/reset?src=mail",
			"https://app.example.com/verify", "https://app.example.com/reset?src=mail"},
	} {
		cfg := Config{PublicURL: c.public, VerifyEmailURL: c.verify, ResetPasswordURL: c.reset}
		if got := cfg.VerifyEmailLink(); got != c.wantVerify {
			t.Errorf("VerifyEmailLink() = %q, want %q", got, c.wantVerify)
		}
		if got := cfg.ResetPasswordLink(); got != c.wantReset {
			t.Errorf("ResetPasswordLink() = %q, want %q", got, c.wantReset)
		}
	}
	for _, c := range []struct{ public, magic, want string }{
		{"https://id.example.com/userd/", "", "https://id.example.com/userd/account/magic"},
		{"https://id.example.com", "https://app.example.com/magic?src=mail", "https://app.example.com/magic?src=mail"},
	} {
		cfg := Config{PublicURL: c.public, MagicLinkURL: c.magic}
		if got := cfg.MagicLinkLink(); got != c.want {
			t.Errorf("MagicLinkLink() = %q, want %q", got, c.want)
		}
	}
}
