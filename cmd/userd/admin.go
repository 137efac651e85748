package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

func (r *root) adminCreateCommand() *cobra.Command {
	var email, name string
	cmd := &cobra.Command{
		Use:   "create",
		Short: "create an admin; the password is read from stdin",
		Long: withConfigNote(`Create a user with ROLE_ADMIN on the configured database. The password is
the first line of standard input, never a flag, where other users and the
shell history could see it:

  printf '%s\n' "$PASSWORD" | userd admin create --email admin@example.com`),
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			password, err := readPassword(r.stdin)
			if err != nil {
				return err
			}
			return r.createAdmin(cmd.Context(), name, email, password)
		},
	}
	cmd.Flags().StringVar(&email, "email", "", "email `ADDRESS` of the new admin (required)")
	cmd.Flags().StringVar(&name, "name", "Administrator", "the new admin's display `NAME`")
	_ = cmd.MarkFlagRequired("email")
	return cmd
}

// createAdmin runs `userd admin create` over the configured store.
func (r *root) createAdmin(ctx context.Context, name, email, password string) error {
	cfg, err := loadConfig("admin create: USERD_DB_DRIVER=memory keeps nothing; use USERD_BOOTSTRAP_ADMIN_* instead")
	if err != nil {
		return err
	}
	var svc *application.Services
	return withApp(ctx, cfg, commandOptions(cfg, r.stderr, &svc), func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		u, created, err := svc.Users.EnsureAdmin(ctx, name, email, password)
		if errors.Is(err, application.ErrEmailHeldByNonAdmin) {
			return fmt.Errorf("admin create: %s is already registered to account %s, which is not an admin", u.Email, u.ID)
		}
		if err != nil {
			var verr *domain.ValidationError
			if errors.As(err, &verr) {
				return fmt.Errorf("admin create: %s", verr.Error())
			}
			return err
		}
		if !created {
			return fmt.Errorf("admin create: %s is already registered (user %s)", u.Email, u.ID)
		}
		_, err = fmt.Fprintf(r.stdout, "created admin %s (%s)\n", u.ID, u.Email)
		return err
	})
}

// readPassword reads the first line of r, without its line ending.
func readPassword(r io.Reader) (string, error) {
	if r == nil {
		r = strings.NewReader("")
	}
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read password: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("admin create: no password on stdin (pipe it in, e.g. `printf %s \"$PW\" | userd admin create ...`)")
	}
	return line, nil
}
