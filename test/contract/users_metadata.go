package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// mustMetadata parses s as metadata within the larger limit.
func mustMetadata(t *testing.T, s string) domain.Metadata {
	t.Helper()
	m, msg := domain.ParseMetadata([]byte(s), domain.AppMetadataMaxBytes)
	if msg != "" {
		t.Fatalf("metadata %s: %s", s, msg)
	}
	return m
}

// UserMetadata runs the contract of the metadata of ports.UserRepository
// against repositories made by newRepo: Metadata and AppMetadata are
// stored and read back as they were written by every method, an account
// created without them has the empty objects, and an update that changes
// one keeps the other.
func UserMetadata(t *testing.T, newRepo func(t *testing.T) ports.UserRepository) {
	t.Run("round_trip", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		// The largest of each, with text that a store could mangle: non-ASCII,
		// escapes, HTML, a key order that only the canonical form fixes.
		big := `{"k":"` + strings.Repeat("é", (domain.AppMetadataMaxBytes-8)/2) + `"}`
		var users []domain.User
		for i, md := range []struct{ metadata, app string }{
			{`{"theme":"dark","tags":["a","<b>"],"n":1.50}`, `{"plan":"pro","quota":{"seats":3}}`},
			{`{}`, big},
			{`{"q":"\"\\\n\u2028"}`, `{}`},
		} {
			u := newUser(at(time.Duration(i) * time.Second))
			u.Metadata, u.AppMetadata = mustMetadata(t, md.metadata), mustMetadata(t, md.app)
			users = append(users, u)
		}
		mustCreate(t, repo, users[0])
		if err := repo.CreateMany(ctx, users[1:]); err != nil {
			t.Fatalf("CreateMany: %v", err)
		}
		for _, u := range users {
			checkStored(t, repo, u)
			got, err := repo.ByEmail(ctx, u.Email)
			if err != nil {
				t.Fatalf("ByEmail: %v", err)
			}
			checkUser(t, got, u)
		}
		listed, err := repo.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 10}})
		if err != nil || len(listed) != len(users) {
			t.Fatalf("List = %d users, %v; want %d", len(listed), err, len(users))
		}
		for i, got := range listed {
			checkUser(t, got, users[i])
		}
	})

	t.Run("default_is_the_empty_object", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		u := newUser(at(0))
		mustCreate(t, repo, u)
		got, err := repo.ByID(t.Context(), u.ID)
		if err != nil {
			t.Fatalf("ByID: %v", err)
		}
		if got.Metadata.String() != "{}" || got.AppMetadata.String() != "{}" {
			t.Fatalf("metadata %s, appMetadata %s; want {} and {}", got.Metadata, got.AppMetadata)
		}
	})

	t.Run("update_of_one_keeps_the_other", func(t *testing.T) {
		t.Parallel()
		ctx, repo := t.Context(), newRepo(t)
		u := newUser(at(0))
		u.Metadata, u.AppMetadata = mustMetadata(t, `{"a":1}`), mustMetadata(t, `{"b":2}`)
		mustCreate(t, repo, u)
		want := u
		want.Metadata = mustMetadata(t, `{"a":[1,2]}`)
		got, err := repo.Update(ctx, u.ID, func(v *domain.User) error {
			checkUser(t, *v, u)
			v.Metadata = want.Metadata
			return nil
		})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		checkUser(t, got, want)
		checkStored(t, repo, want)
		want.AppMetadata = domain.Metadata{}
		if _, err := repo.Update(ctx, u.ID, func(v *domain.User) error { v.AppMetadata = want.AppMetadata; return nil }); err != nil {
			t.Fatalf("Update: %v", err)
		}
		checkStored(t, repo, want)
	})
}
