package config

import (
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/userd/userd/adapters/passwordhash"
)

// docPath is the operator's reference of every setting.
const docPath = "../docs/configuration.md"

// docRow is one setting's row in a table of docPath.
type docRow struct {
	line                         int
	variable, yaml, def, allowed string
}

// docRows reads the rows of docPath's tables that document a variable.
func docRows(t *testing.T) (map[string]docRow, string) {
	t.Helper()
	data, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]docRow{}
	for i, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "| `"+EnvPrefix) {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 5 {
			t.Errorf("%s:%d: want 5 cells (variable, YAML key, default, allowed, meaning), got %d", docPath, i+1, len(cells))
			continue
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		r := docRow{line: i + 1, variable: strings.Trim(cells[0], "`"), yaml: cells[1], def: cells[2], allowed: cells[3]}
		if _, dup := rows[r.variable]; dup {
			t.Errorf("%s:%d: %s documented twice", docPath, r.line, r.variable)
		}
		rows[r.variable] = r
	}
	return rows, string(data)
}

// TestDocsListEverySetting: docs/configuration.md has one row for each
// setting of Config, with its YAML key, its real default and, where they
// are limited, its allowed values; and it names no variable that does not
// exist.
func TestDocsListEverySetting(t *testing.T) {
	t.Parallel()
	rows, doc := docRows(t)
	defaults := reflect.ValueOf(Default())
	known := map[string]bool{EnvConfigFile: true}
	for _, s := range settings {
		known[s.envName()] = true
		r, ok := rows[s.envName()]
		if !ok {
			t.Errorf("%s is missing from %s", s.envName(), docPath)
			continue
		}
		if want := "`" + s.yamlName() + "`"; r.yaml != want {
			t.Errorf("%s:%d: YAML key of %s is %s, want %s", docPath, r.line, s.envName(), r.yaml, want)
		}

		// The documented default, read back, is the real one.
		want := defaults.FieldByIndex(s.field.Index)
		if r.def == "unset" {
			if !want.IsZero() {
				t.Errorf("%s:%d: %s documented unset, but defaults to %q", docPath, r.line, s.envName(), Default().Redacted()[s.envName()])
			}
		} else if text, ok := strings.CutPrefix(r.def, "`"); !ok || !strings.HasSuffix(text, "`") {
			t.Errorf("%s:%d: default of %s is %q, want `value` or unset", docPath, r.line, s.envName(), r.def)
		} else {
			c, err := LoadFrom(env(map[string]string{s.envName(): strings.TrimSuffix(text, "`")}))
			if err != nil {
				t.Errorf("%s:%d: documented default of %s: %v", docPath, r.line, s.envName(), err)
			} else if got := reflect.ValueOf(c).FieldByIndex(s.field.Index); !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Errorf("%s:%d: %s documented default %s, but it is %q", docPath, r.line, s.envName(), r.def, Default().Redacted()[s.envName()])
			}
		}

		for _, v := range s.oneOf {
			if !strings.Contains(r.allowed, "`"+v+"`") {
				t.Errorf("%s:%d: allowed values of %s do not list `%s`", docPath, r.line, s.envName(), v)
			}
		}
		if s.redact == maskAll && !strings.Contains(r.allowed, "secret") {
			t.Errorf("%s:%d: %s is a secret; say so in the allowed column", docPath, r.line, s.envName())
		}
	}
	for name, r := range rows {
		if !known[name] {
			t.Errorf("%s:%d: %s is not a setting", docPath, r.line, name)
		}
	}
	// Prose too: every USERD_ name is a setting or USERD_CONFIG.
	for _, name := range regexp.MustCompile(EnvPrefix+`[A-Z0-9_]*[A-Z0-9]`).FindAllString(doc, -1) {
		if !known[name] {
			t.Errorf("%s names %s, which is not a setting", docPath, name)
		}
	}
}

// TestDocsBoundsAreTheOwners: the bounds the docs give for the settings
// that an adapter bounds are that adapter's.
func TestDocsBoundsAreTheOwners(t *testing.T) {
	t.Parallel()
	rows, _ := docRows(t)
	for name, want := range map[string][]int{
		"USERD_ARGON2_MEMORY_KIB":  {passwordhash.MinMemoryKiBPerLane, passwordhash.MaxMemoryKiB},
		"USERD_ARGON2_ITERATIONS":  {1, passwordhash.MaxIterations},
		"USERD_ARGON2_PARALLELISM": {1, passwordhash.MaxParallelism},
		"USERD_JWT_HMAC_SECRET":    {MinJWTHMACSecretLen},
		"USERD_SECRET_KEY":         {SecretKeyLen},
	} {
		for _, n := range want {
			if !regexp.MustCompile(`\b` + strconv.Itoa(n) + `\b`).MatchString(rows[name].allowed) {
				t.Errorf("%s:%d: allowed values of %s %q do not mention %d", docPath, rows[name].line, name, rows[name].allowed, n)
			}
		}
	}
}
