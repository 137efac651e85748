package config

import (
	"encoding/base64"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	envlib "github.com/caarlos0/env/v11"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/adapters/jwtissuer"
	"github.com/userd/userd/adapters/passwordhash"
	"github.com/userd/userd/adapters/secretbox"
)

// TestSettingsAreTheLibrarys: the settings this package reads from the tags
// (for the file, the messages, the docs) are the keys and defaults
// caarlos0/env reads from them.
func TestSettingsAreTheLibrarys(t *testing.T) {
	t.Parallel()
	params, err := envlib.GetFieldParamsWithOptions(&Config{}, envlib.Options{Prefix: EnvPrefix})
	if err != nil {
		t.Fatal(err)
	}
	if len(params) != len(settings) || len(settings) != reflect.TypeFor[Config]().NumField() {
		t.Fatalf("%d library keys, %d settings, %d fields", len(params), len(settings), reflect.TypeFor[Config]().NumField())
	}
	for i, p := range params {
		s := settings[i]
		if p.Key != s.envName() || p.DefaultValue != s.def || !p.HasDefaultValue {
			t.Errorf("library reads %s default %q, this package %s default %q", p.Key, p.DefaultValue, s.envName(), s.def)
		}
	}
	for key := range rules {
		if !slices.ContainsFunc(settings, func(s setting) bool { return s.key == key }) {
			t.Errorf("rule for %s, which is not a setting", key)
		}
	}
}

// TestDefaultsAreTheOwners: where an adapter has a default of its own, the
// setting's default is the same, and allowed values are what the adapters
// accept.
func TestDefaultsAreTheOwners(t *testing.T) {
	t.Parallel()
	c := Default()
	hash := passwordhash.DefaultParams()
	for _, ck := range []struct {
		name      string
		got, want any
	}{
		{"MaxInFlight", c.MaxInFlight, httpapi.DefaultMaxInFlight},
		{"RequestTimeout", c.RequestTimeout, httpapi.DefaultRequestTimeout},
		{"DBMaxOpenConns", c.DBMaxOpenConns, gormstore.DefaultMaxOpenConns},
		{"DBMaxIdleConns", c.DBMaxIdleConns, gormstore.DefaultMaxIdleConns},
		{"DBConnMaxLifetime", c.DBConnMaxLifetime, gormstore.DefaultConnMaxLifetime},
		{"AccessTTL", c.AccessTTL, jwtissuer.DefaultTTL},
		{"JWTAlgorithm", c.JWTAlgorithm, jwtissuer.DefaultAlgorithm},
		{"Argon2MemoryKiB", c.Argon2MemoryKiB, hash.Memory},
		{"Argon2Iterations", c.Argon2Iterations, hash.Iterations},
		{"Argon2Parallelism", c.Argon2Parallelism, hash.Parallelism},
		{"DriverSQLite", DriverSQLite, gormstore.DriverSQLite},
		{"DriverPostgres", DriverPostgres, gormstore.DriverPostgres},
	} {
		if ck.got != ck.want {
			t.Errorf("%s = %v, its owner's is %v", ck.name, ck.got, ck.want)
		}
	}
	oneOf := func(key string) []string {
		i := slices.IndexFunc(settings, func(s setting) bool { return s.key == key })
		return settings[i].oneOf
	}
	for key, want := range map[string][]string{
		"DB_DRIVER":     {DriverSQLite, DriverPostgres, DriverMySQL, DriverMemory},
		"JWT_ALGORITHM": {JWTAlgorithmEdDSA, JWTAlgorithmES256, JWTAlgorithmHS256},
		"LOG_FORMAT":    {LogFormatJSON, LogFormatText},
	} {
		if got := oneOf(key); !slices.Equal(got, want) {
			t.Errorf("%s allows %v, want %v", key, got, want)
		}
	}
}

// TestBoundsAreTheOwners: the argon2 parameters stop where passwordhash
// stops, and the HMAC secret where jwtissuer does.
func TestBoundsAreTheOwners(t *testing.T) {
	t.Parallel()
	itoa := func(n int) string { return strconv.Itoa(n) }
	accepted := []map[string]string{
		{"USERD_ARGON2_MEMORY_KIB": itoa(passwordhash.MaxMemoryKiB)},
		{"USERD_ARGON2_ITERATIONS": itoa(passwordhash.MaxIterations)},
		{"USERD_ARGON2_PARALLELISM": itoa(passwordhash.MaxParallelism), "USERD_ARGON2_MEMORY_KIB": itoa(passwordhash.MinMemoryKiBPerLane * passwordhash.MaxParallelism)},
		{"USERD_ARGON2_MEMORY_KIB": itoa(passwordhash.MinMemoryKiBPerLane), "USERD_ARGON2_ITERATIONS": "1"},
		{"USERD_JWT_ALGORITHM": "HS256", "USERD_JWT_HMAC_SECRET": strings.Repeat("k", jwtissuer.MinHMACKeyLen)},
		{"USERD_SECRET_KEY": base64.StdEncoding.EncodeToString(make([]byte, secretbox.KeyLen))},
	}
	for _, e := range accepted {
		c, err := LoadFrom(env(e))
		if err != nil {
			t.Errorf("%v: %v", e, err)
			continue
		}
		p := passwordhash.DefaultParams()
		p.Memory, p.Iterations, p.Parallelism = c.Argon2MemoryKiB, c.Argon2Iterations, c.Argon2Parallelism
		if err := p.Validate(); err != nil {
			t.Errorf("%v is accepted, but passwordhash refuses it: %v", e, err)
		}
	}
	refused := []map[string]string{
		{"USERD_ARGON2_MEMORY_KIB": itoa(passwordhash.MaxMemoryKiB + 1)},
		{"USERD_ARGON2_MEMORY_KIB": itoa(passwordhash.MinMemoryKiBPerLane - 1)},
		{"USERD_ARGON2_ITERATIONS": itoa(passwordhash.MaxIterations + 1)},
		{"USERD_ARGON2_PARALLELISM": itoa(passwordhash.MaxParallelism + 1), "USERD_ARGON2_MEMORY_KIB": "65536"},
		{"USERD_ARGON2_PARALLELISM": "2", "USERD_ARGON2_MEMORY_KIB": itoa(2*passwordhash.MinMemoryKiBPerLane - 1)},
		{"USERD_JWT_ALGORITHM": "HS256", "USERD_JWT_HMAC_SECRET": strings.Repeat("k", jwtissuer.MinHMACKeyLen-1)},
		{"USERD_SECRET_KEY": base64.StdEncoding.EncodeToString(make([]byte, secretbox.KeyLen-1))},
		{"USERD_SECRET_KEY": base64.StdEncoding.EncodeToString(make([]byte, secretbox.KeyLen+1))},
	}
	for _, e := range refused {
		if _, err := LoadFrom(env(e)); err == nil {
			t.Errorf("%v accepted", e)
		}
	}
}

// TestProcessEnvironmentUnread: LoadFrom reads only through getenv, never
// the process environment behind it. Not parallel: it sets a variable.
func TestProcessEnvironmentUnread(t *testing.T) {
	t.Setenv("USERD_HTTP_ADDR", "127.0.0.1:1")
	t.Setenv("USERD_OPEN_REGISTRATION", "yes")
	c, err := LoadFrom(env(nil))
	if err != nil || c.HTTPAddr != ":8080" {
		t.Errorf("LoadFrom read the process environment: %q, %v", c.HTTPAddr, err)
	}
	if c, err := Load(); err == nil || c.HTTPAddr != "" {
		t.Errorf("Load ignored the process environment: %q, %v", c.HTTPAddr, err)
	}
}

// TestEmptyValues: an empty variable is unset; an empty string in the file
// is the empty value, which strings and lists accept and other types refuse.
func TestEmptyValues(t *testing.T) {
	t.Parallel()
	c, err := LoadFrom(env(map[string]string{"USERD_ISSUER": "", "USERD_ACCESS_TTL": "", "USERD_DB_DRIVER": ""}))
	if err != nil || c.Issuer != "userd" || c.AccessTTL != 15*time.Minute || c.DBDriver != DriverSQLite {
		t.Errorf("empty variables are not unset: %v, %v", c, err)
	}

	path := writeYAML(t, "bootstrap_admin_name: Root\nadmin_addr: ''\ntrusted_proxies: ''\n")
	c, err = LoadFrom(env(map[string]string{EnvConfigFile: path, "USERD_TRUSTED_PROXIES": ""}))
	if err != nil || c.AdminAddr != "" || c.TrustedProxies != nil || c.BootstrapAdminName != "Root" {
		t.Errorf("empty strings in the file: %v, %v", c, err)
	}
	path = writeYAML(t, "trusted_proxies: []\n")
	if c, err := LoadFrom(env(map[string]string{EnvConfigFile: path})); err != nil || c.TrustedProxies != nil {
		t.Errorf("empty list in the file: %v, %v", c.TrustedProxies, err)
	}

	for content, want := range map[string]string{
		"issuer: ''\n":                     "line 1: issuer: must not be empty",
		"log_level: info\nhttp_addr: ''\n": "line 2: http_addr",
		"access_ttl: ''\n":                 "line 1: access_ttl: must not be empty",
		"open_registration: ''\n":          "line 1: open_registration: must not be empty",
		"auth_ip_limit: ''\n":              "line 1: auth_ip_limit: must not be empty",
		"db_driver: ''\n":                  "line 1: db_driver",
		"log_level: ''\n":                  "line 1: log_level",
		"bootstrap_admin_email: a@b.c\nbootstrap_admin_password: pw\nbootstrap_admin_name: ''\n": "USERD_BOOTSTRAP_ADMIN_NAME: must not be empty",
	} {
		_, err := LoadFrom(env(map[string]string{EnvConfigFile: writeYAML(t, content)}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("file %q: error %v, want one containing %q", content, err, want)
		}
	}
}

// TestAllowedValuesExact: allowed values are matched exactly, the log level
// too, whose parser would take more.
func TestAllowedValuesExact(t *testing.T) {
	t.Parallel()
	for _, level := range []string{"debug", "info", "warn", "error"} {
		c, err := LoadFrom(env(map[string]string{"USERD_LOG_LEVEL": level}))
		if err != nil || c.Redacted()["USERD_LOG_LEVEL"] != level {
			t.Errorf("USERD_LOG_LEVEL=%s: %v, %v", level, c.LogLevel, err)
		}
	}
	for key, values := range map[string][]string{
		"USERD_LOG_LEVEL":  {"INFO", "Info", "warn+1", "DEBUG-4", "warning", " info"},
		"USERD_LOG_FORMAT": {"JSON", "json "},
		"USERD_DB_DRIVER":  {"SQLite", "postgresql"},
	} {
		for _, v := range values {
			_, err := LoadFrom(env(map[string]string{key: v}))
			if err == nil || !strings.Contains(err.Error(), key+": ") || !strings.Contains(err.Error(), "is not one of") {
				t.Errorf("%s=%q: error %v", key, v, err)
			}
		}
	}
}

// TestNeverNegative: every duration and count refuses a negative value,
// naming the key.
func TestNeverNegative(t *testing.T) {
	t.Parallel()
	for _, s := range settings {
		var v string
		switch s.field.Type {
		case reflect.TypeFor[time.Duration]():
			v = "-1s"
		case reflect.TypeFor[int](), reflect.TypeFor[uint32](), reflect.TypeFor[uint8]():
			v = "-1"
		default:
			continue
		}
		_, err := LoadFrom(env(map[string]string{s.envName(): v}))
		if err == nil || !strings.Contains(err.Error(), s.envName()+": ") {
			t.Errorf("%s=%s: error %v", s.envName(), v, err)
		}
	}
}

func TestLoadFromWithSources(t *testing.T) {
	t.Parallel()
	path := writeYAML(t, "http_addr: ':9090'\naccess_ttl: 10m\nissuer: ~\nadmin_addr: ''\ntrusted_proxies: [10.0.0.1]\n")
	c, sources, err := LoadFromWithSources(env(map[string]string{
		EnvConfigFile:           path,
		"USERD_ACCESS_TTL":      "20m", // the environment wins
		"USERD_LOG_LEVEL":       "warn",
		"USERD_TRUSTED_PROXIES": "", // unset: the file's value stands
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTPAddr != ":9090" || c.AccessTTL != 20*time.Minute ||
		!slices.Equal(c.TrustedProxies, []netip.Prefix{netip.MustParsePrefix("10.0.0.1/32")}) {
		t.Errorf("config: %v", c)
	}
	want := map[string]Source{}
	for name := range c.Redacted() {
		want[name] = SourceDefault
	}
	want["USERD_HTTP_ADDR"] = SourceFile
	want["USERD_ADMIN_ADDR"] = SourceFile // '' is a value
	want["USERD_TRUSTED_PROXIES"] = SourceFile
	want["USERD_ACCESS_TTL"] = SourceEnv
	want["USERD_LOG_LEVEL"] = SourceEnv
	if !reflect.DeepEqual(sources, want) {
		t.Errorf("sources:\n got %v\nwant %v", sources, want)
	}

	if _, sources, err := LoadFromWithSources(env(map[string]string{"USERD_LOG_LEVEL": "loud"})); err == nil || sources != nil {
		t.Errorf("invalid configuration: sources %v, error %v", sources, err)
	}
}
