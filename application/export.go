package application

import (
	"context"
	"fmt"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// exportPageSize is the number of users ExportUsers reads at a time: the
// export never holds more of them in memory.
const exportPageSize = 500

// ExportReport counts what ExportUsers went through, for the operator.
type ExportReport struct {
	// Users is the number of users given to each.
	Users int
	// WithSecondFactor counts the users with a TOTP factor or a passkey:
	// neither is exported, nor are recovery codes or sessions, so they
	// sign in with their password alone after an import.
	WithSecondFactor int
	// WithoutPassword counts the users with no password hash (made by a
	// sign-in through another provider or by email): an import refuses
	// them, their identities at other providers not being exported.
	WithoutPassword int
}

// ExportUsers gives each user, in id order, to each, reading the store
// in pages of exportPageSize (keyset by id, so an export of a store being
// written neither skips nor repeats a user that stays). It stops at the
// first error of each, the store or ctx. Only the account is given: its
// second factors, sessions and identities at other providers stay behind.
// It serves `userd users export`, whose lines `userd users import` reads.
func (s *ImportService) ExportUsers(ctx context.Context, each func(domain.User) error) (ExportReport, error) {
	var report ExportReport
	var after domain.UserID
	for {
		if err := ctx.Err(); err != nil {
			return report, err
		}
		page, err := s.users.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: exportPageSize, After: after}})
		if err != nil {
			return report, fmt.Errorf("export users after %q: %w", after, err)
		}
		for _, u := range page {
			if err := each(u); err != nil {
				return report, err
			}
			report.Users++
			if u.MFAEnabled {
				report.WithSecondFactor++
			}
			if u.PasswordHash == "" {
				report.WithoutPassword++
			}
		}
		if len(page) < exportPageSize {
			return report, nil
		}
		after = page[len(page)-1].ID
	}
}
