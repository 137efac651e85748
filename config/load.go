package config

// Loading: the file and the environment read, each setting parsed and
// checked by its tags and the rules, and where each value came from.

import (
	"errors"
	"fmt"
	"os"
	"reflect"

	envlib "github.com/caarlos0/env/v11"
)

// Source tells where the value of a setting came from.
type Source string

// Sources, from the weakest to the strongest.
const (
	SourceDefault Source = "default"
	SourceFile    Source = "file"
	SourceEnv     Source = "env"
)

// Load reads the configuration from the process environment and the file
// named by USERD_CONFIG, if any.
func Load() (Config, error) {
	return LoadFrom(os.Getenv)
}

// LoadFrom is Load with the environment given by getenv. An empty variable
// counts as unset.
func LoadFrom(getenv func(string) string) (Config, error) {
	c, _, err := LoadFromWithSources(getenv)
	return c, err
}

// LoadFromWithSources is LoadFrom that also tells where the value of each
// setting came from, by environment variable name as in Redacted.
func LoadFromWithSources(getenv func(string) string) (Config, map[string]Source, error) {
	in := input{values: make(map[string]given, len(settings))}
	var errs []error
	if path := getenv(EnvConfigFile); path != "" {
		errs = in.readFile(path)
	}
	for _, s := range settings {
		if v := getenv(s.envName()); v != "" {
			in.values[s.key] = given{text: v, source: SourceEnv}
		}
	}
	c, keyErrs, err := in.parse()
	if err != nil {
		errs = append(errs, err)
	}
	for _, s := range settings {
		if err := keyErrs[s.key]; err != nil {
			errs = append(errs, in.locate(s, err))
		}
	}
	if len(errs) == 0 {
		errs = c.validate()
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, nil, err
	}
	return c, in.sources(), nil
}

// Default returns the configuration with every key at its default.
func Default() Config {
	c, keyErrs, err := input{}.parse()
	if err == nil && len(keyErrs) > 0 {
		err = fmt.Errorf("defaults: %v", keyErrs)
	}
	if err != nil {
		panic(err) // the defaults are constants; TestDefaults keeps them valid
	}
	return c
}

// given is the text of one setting as the file or the environment gave it.
type given struct {
	text   string
	source Source
	line   int // in the file
}

// input is what the file and the environment set, by key.
type input struct {
	file   string // the YAML file's path, if any
	values map[string]given
}

// parse turns the given texts into a Config: caarlos0/env reads every key
// (its default when not given) and parses it, then the rules of rules.go
// check what it cannot. Problems come back by key; err is one that belongs
// to no key, a mistake in the tags.
func (in input) parse() (c Config, keyErrs map[string]error, err error) {
	keyErrs = make(map[string]error)
	// Never nil: with a nil Environment, env would read the process's.
	environ := make(map[string]string, len(in.values))
	var emptyInFile []setting
	for _, s := range settings {
		g, ok := in.values[s.key]
		if !ok {
			continue
		}
		if err := s.allows(g.text); err != nil {
			keyErrs[s.key] = err
			continue
		}
		if g.text == "" {
			// Only the file can give an empty value (an empty variable is
			// unset), and env would take it for unset too.
			emptyInFile = append(emptyInFile, s)
			continue
		}
		environ[s.envName()] = g.text
	}

	err = envlib.ParseWithOptions(&c, envlib.Options{Environment: environ, Prefix: EnvPrefix, FuncMap: parsers})
	var agg envlib.AggregateError
	if errors.As(err, &agg) {
		var other []error
		for _, e := range agg.Errors {
			if pe, ok := e.(envlib.ParseError); ok {
				if s, ok := settingOfField[pe.Name]; ok {
					keyErrs[s.key] = pe.Err
					continue
				}
			}
			other = append(other, e)
		}
		err = errors.Join(other...)
	}
	if err != nil {
		return Config{}, nil, fmt.Errorf("config: %w", err)
	}

	// An empty string or list in the file is a value: the empty one.
	// Other types have no empty value.
	fields := reflect.ValueOf(&c).Elem()
	for _, s := range emptyInFile {
		switch s.field.Type.Kind() {
		case reflect.String, reflect.Slice:
			fields.FieldByIndex(s.field.Index).SetZero()
		default:
			keyErrs[s.key] = errors.New("must not be empty")
		}
	}

	for _, s := range settings {
		if check := rules[s.key]; check != nil && keyErrs[s.key] == nil {
			if err := check(&c); err != nil {
				keyErrs[s.key] = err
			}
		}
	}
	return c, keyErrs, nil
}

// locate says where the bad value of s came from: the file, its line and the
// key there, or the environment variable. The reason given for a secret is
// hidden, since parse errors tend to quote their input.
func (in input) locate(s setting, err error) error {
	if s.redact == maskAll {
		err = errors.New("invalid value")
	}
	if g, ok := in.values[s.key]; ok && g.source == SourceFile {
		return fmt.Errorf("config file %s: line %d: %s: %w", in.file, g.line, s.yamlName(), err)
	}
	return fmt.Errorf("%s: %w", s.envName(), err)
}

// sources returns where each setting's value came from, by variable name.
func (in input) sources() map[string]Source {
	m := make(map[string]Source, len(settings))
	for _, s := range settings {
		src := SourceDefault
		if g, ok := in.values[s.key]; ok {
			src = g.source
		}
		m[s.envName()] = src
	}
	return m
}
