package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (r *root) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print version, commit and Go version",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(r.stdout, versionLine())
			return err
		},
	}
}
