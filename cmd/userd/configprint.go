package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

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
// its source as the configuration reports it.
func configPrint(stdout io.Writer, getenv func(string) string) error {
	cfg, sources, err := config.LoadFromWithSources(getenv)
	if err != nil {
		return err
	}
	values := cfg.Redacted()
	names := slices.Sorted(maps.Keys(values))

	var b strings.Builder
	if file := getenv(config.EnvConfigFile); file == "" {
		fmt.Fprintf(&b, "# %s is unset: no configuration file\n", config.EnvConfigFile)
	} else {
		fmt.Fprintf(&b, "# %s=%s\n", config.EnvConfigFile, file)
	}
	var table strings.Builder
	table.WriteString("VARIABLE\tVALUE\tSOURCE\n")
	for _, name := range names {
		value := values[name]
		if value == "" {
			value = "(unset)"
		}
		fmt.Fprintf(&table, "%s\t%s\t%s\n", name, value, sources[name])
	}
	b.WriteString(columns(table.String(), 2))
	_, err = io.WriteString(stdout, b.String())
	return err
}
