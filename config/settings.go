package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// How a setting is masked wherever the configuration is shown: the value
// of a secret entirely, the password inside a DSN.
const (
	maskAll = "secret"
	maskDSN = "dsn"
)

// setting is one key of the configuration, as the tags of its Config field
// declare it.
type setting struct {
	// key is the name without prefix in upper case, e.g. HTTP_ADDR; the YAML
	// key is its lower-case form.
	key    string
	field  reflect.StructField
	def    string
	oneOf  []string // allowed values, if limited
	redact string   // maskAll, maskDSN or ""
}

func (s setting) envName() string  { return EnvPrefix + s.key }
func (s setting) yamlName() string { return strings.ToLower(s.key) }

// list settings may be a YAML sequence as well as a comma-separated string.
func (s setting) list() bool { return s.field.Type.Kind() == reflect.Slice }

// allows checks v against the oneof tag. It runs on the text before
// caarlos0/env parses it: slog.Level's own parser would also take "INFO"
// or "warn+2", and allowed values are exact.
func (s setting) allows(v string) error {
	if s.oneOf != nil && !slices.Contains(s.oneOf, v) {
		return fmt.Errorf("%q is not one of %s", v, strings.Join(s.oneOf, ", "))
	}
	return nil
}

// settings lists every key in the order of Config's fields, which is the
// order they are shown in; settingOfField finds one by field name.
var settings, settingOfField = readSettings()

func readSettings() ([]setting, map[string]setting) {
	t := reflect.TypeFor[Config]()
	list := make([]setting, 0, t.NumField())
	byField := make(map[string]setting, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		key, options, _ := strings.Cut(f.Tag.Get("env"), ",")
		def, hasDef := f.Tag.Lookup("envDefault")
		// Every field is a setting with a default: docs/configuration.md
		// lists them all, with their defaults.
		if key == "" || options != "" || !hasDef {
			panic(fmt.Sprintf("config: field %s needs env (without options) and envDefault tags", f.Name))
		}
		s := setting{key: key, field: f, def: def, redact: f.Tag.Get("redact")}
		if o := f.Tag.Get("oneof"); o != "" {
			s.oneOf = strings.Split(o, ",")
		}
		list = append(list, s)
		byField[f.Name] = s
	}
	return list, byField
}
