package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// readFile records the keys set in the YAML file at path, each as the text
// its environment variable would hold, with its line for the messages.
func (in *input) readFile(path string) []error {
	in.file = path
	data, err := os.ReadFile(path) //nolint:gosec // G304: the operator names the configuration file in USERD_CONFIG; reading it is the point
	if err != nil {
		return []error{fmt.Errorf("%s: %w", EnvConfigFile, err)}
	}
	// Decoding into a node rather than a struct keeps one parser per key for
	// file and environment alike. A struct decoder's KnownFields(true) would
	// catch unknown keys; the loop below does, and also repeated ones.
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return []error{fmt.Errorf("config file %s: %w", path, err)}
	}
	if len(doc.Content) == 0 {
		return nil // empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return []error{fmt.Errorf("config file %s: line %d: want a mapping of keys to values", path, root.Line)}
	}

	byName := make(map[string]setting, len(settings))
	for _, s := range settings {
		byName[s.yamlName()] = s
	}
	seen := make(map[string]bool)
	var errs []error
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		where := fmt.Sprintf("config file %s: line %d", path, k.Line)
		s, ok := byName[k.Value]
		if k.Kind != yaml.ScalarNode || !ok {
			errs = append(errs, fmt.Errorf("%s: unknown key %q", where, k.Value))
			continue
		}
		if seen[k.Value] {
			errs = append(errs, fmt.Errorf("%s: %s: repeated key", where, k.Value))
			continue
		}
		seen[k.Value] = true
		text, set, err := scalarValue(s, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", where, k.Value, err))
			continue
		}
		if set {
			in.values[s.key] = given{text: text, source: SourceFile, line: k.Line}
		}
	}
	return errs
}

// scalarValue returns the text of a YAML value; set is false for null, which
// leaves the key at its default. The errors never quote the value.
func scalarValue(s setting, v *yaml.Node) (text string, set bool, err error) {
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return "", false, nil
	case v.Kind == yaml.ScalarNode:
		return v.Value, true, nil
	case v.Kind == yaml.SequenceNode && s.list():
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
