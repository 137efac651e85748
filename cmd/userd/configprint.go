package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/userd/userd/config"
)

func (r *root) configPrintCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "print",
		Short: "print the effective configuration, secrets masked",
		Long: withConfigNote(`Print every configuration key by its environment variable, sorted, with
its effective value and where it came from: default, file (USERD_CONFIG)
or env. Secrets (USERD_BOOTSTRAP_ADMIN_PASSWORD, USERD_JWT_HMAC_SECRET, a
password inside USERD_DB_DSN) are masked. An invalid configuration is
reported as 'serve' would report it, with exit code 1.`),
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return configPrint(r.stdout, os.Getenv) },
	}
}

// configPrint runs `userd config print`: every key by its environment
// variable, sorted, with its value (secrets masked by config.Redacted) and
// its source.
func configPrint(stdout io.Writer, getenv func(string) string) error {
	cfg, err := config.LoadFrom(getenv)
	if err != nil {
		return err
	}
	file := getenv(config.EnvConfigFile)
	inFile, err := fileKeys(file)
	if err != nil {
		return err
	}
	values := cfg.Redacted()
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	slices.Sort(names)

	if file == "" {
		fmt.Fprintf(stdout, "# %s is unset: no configuration file\n", config.EnvConfigFile)
	} else {
		fmt.Fprintf(stdout, "# %s=%s\n", config.EnvConfigFile, file)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tVALUE\tSOURCE")
	for _, name := range names {
		source := "default"
		switch {
		case getenv(name) != "": // config.LoadFrom takes an empty variable as unset
			source = "env"
		case inFile[strings.ToLower(strings.TrimPrefix(name, config.EnvPrefix))]:
			source = "file"
		}
		value := values[name]
		if value == "" {
			value = "(unset)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, value, source)
	}
	return tw.Flush()
}

// fileKeys returns the keys that the YAML configuration file sets to a
// value (null leaves a key at its default). config.LoadFrom has read and
// checked the file already; this only tells which keys it holds.
func fileKeys(path string) (map[string]bool, error) {
	keys := map[string]bool{}
	if path == "" {
		return keys, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.EnvConfigFile, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return keys, nil
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if v := root.Content[i+1]; !(v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
			keys[root.Content[i].Value] = true
		}
	}
	return keys, nil
}
