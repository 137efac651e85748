package config

import (
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// mask replaces the value of a secret wherever the configuration is shown.
const mask = "********"

// Redacted returns the effective value of every key by its environment
// variable name, in the syntax Load reads, with secrets masked: the
// bootstrap password and the JWT HMAC secret entirely, a database password
// inside the DSN.
func (c Config) Redacted() map[string]string {
	m := make(map[string]string, len(settings))
	for _, s := range settings {
		m[s.envName()] = c.shown(s)
	}
	return m
}

// String returns the redacted configuration, one KEY=value per line, so that
// printing a Config by accident never shows a secret.
func (c Config) String() string {
	var b strings.Builder
	for i, s := range settings {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s.envName())
		b.WriteByte('=')
		b.WriteString(c.shown(s))
	}
	return b.String()
}

// GoString is String, so that %#v masks secrets too.
func (c Config) GoString() string { return c.String() }

// LogValue makes log/slog print the redacted configuration.
func (c Config) LogValue() slog.Value {
	attrs := make([]slog.Attr, len(settings))
	for i, s := range settings {
		attrs[i] = slog.String(s.yamlName(), c.shown(s))
	}
	return slog.GroupValue(attrs...)
}

// shown is the value of s in c as Load reads it, masked as its redact tag
// says.
func (c *Config) shown(s setting) string {
	var text string
	switch v := reflect.ValueOf(c).Elem().FieldByIndex(s.field.Index).Interface().(type) {
	case string:
		text = v
	case bool:
		text = strconv.FormatBool(v)
	case time.Duration:
		text = v.String()
	case slog.Level:
		text = strings.ToLower(v.String())
	case []string:
		text = strings.Join(v, ",")
	case []netip.Prefix:
		items := make([]string, len(v))
		for i, p := range v {
			items[i] = p.String()
		}
		text = strings.Join(items, ",")
	default: // the integers
		text = fmt.Sprint(v)
	}
	switch s.redact {
	case maskAll:
		return maskSecret(text)
	case maskDSN:
		return redactDSN(text)
	}
	return text
}

func maskSecret(s string) string {
	if s == "" {
		return ""
	}
	return mask
}

// dsnPassword finds password=… in a key=value PostgreSQL DSN, quoted or not.
var dsnPassword = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]*)`)

// mysqlDSN tells a MySQL DSN (user:password@tcp(host:port)/database,
// user@unix(/path)/database, user:password@/database) from the others: an
// @ followed by a protocol and its address, or by the / of the database.
// url.Parse would take "user" for a URL's scheme.
var mysqlDSN = regexp.MustCompile(`@(?:[a-z0-9]+\(.*\))?/`)

// redactMySQLDSN masks the password of a MySQL DSN, which runs from the
// first colon to the last @ before the last / (as the driver reads it).
func redactMySQLDSN(dsn string) string {
	slash := strings.LastIndex(dsn, "/")
	at := strings.LastIndex(dsn[:max(slash, 0)], "@")
	if at < 0 {
		return dsn
	}
	user, _, hasPassword := strings.Cut(dsn[:at], ":")
	if !hasPassword {
		return dsn
	}
	return user + ":" + mask + dsn[at:]
}

// redactDSN masks the password of a URL, key=value or MySQL DSN. A SQLite
// path comes back unchanged.
func redactDSN(dsn string) string {
	if !strings.Contains(dsn, "://") && mysqlDSN.MatchString(dsn) {
		return redactMySQLDSN(dsn)
	}
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
