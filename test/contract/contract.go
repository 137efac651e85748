// Package contract is the behaviour every storage adapter must show, as
// one test suite per port. Each adapter's tests run it with a factory for
// its own stores (memory; SQLite; PostgreSQL when available), so the
// in-memory store used by application tests cannot drift from the SQL
// one.
//
// Factories must return an empty store, isolated from every other store
// the factory returns: the suites run their cases in parallel. They should
// register their own cleanup with t.Cleanup.
//
// Times handed to the stores are whole microseconds in UTC, the precision
// the SQL store keeps; results are compared with time.Time.Equal.
package contract

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

// epoch is the suites' "now": a fixed time with a sub-second part, so that
// a store truncating to seconds (or shifting time zones) is caught.
var epoch = time.Date(2026, 11, 21, 10, 0, 0, 123456000, time.UTC)

// at returns epoch plus d.
func at(d time.Duration) time.Time { return epoch.Add(d) }

// randomHex returns n random bytes in hex, for unique ids and hashes.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newUser returns a valid user created at created, with an email unique to
// it.
func newUser(created time.Time) domain.User {
	id := domain.NewUserID(created)
	return domain.User{
		ID:           id,
		Name:         "User " + string(id[len(id)-6:]),
		Email:        domain.Email("user-" + string(id) + "@example.com"),
		PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$" + randomHex(16),
		Profiles:     domain.Profiles{domain.ProfileCustomer},
		CreatedAt:    created,
		UpdatedAt:    created,
	}
}

func sameTime(a, b time.Time) bool { return a.Equal(b) }

func sameTimePtr(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "<nil>"
	}
	return t.Format(time.RFC3339Nano)
}

func checkUser(t *testing.T, got, want domain.User) {
	t.Helper()
	if got.ID != want.ID || got.Name != want.Name || got.Email != want.Email ||
		got.PasswordHash != want.PasswordHash || !got.Profiles.Equal(want.Profiles) ||
		got.EmailVerified != want.EmailVerified || got.Disabled != want.Disabled || got.MFAEnabled != want.MFAEnabled ||
		!got.Metadata.Equal(want.Metadata) || !got.AppMetadata.Equal(want.AppMetadata) ||
		!sameTime(got.CreatedAt, want.CreatedAt) || !sameTime(got.UpdatedAt, want.UpdatedAt) {
		t.Errorf("user mismatch:\n got %s\nwant %s", fmtUser(got), fmtUser(want))
	}
}

func fmtUser(u domain.User) string {
	return fmt.Sprintf("{ID:%s Name:%q Email:%s Hash:%q Profiles:%v Verified:%v Disabled:%v MFA:%v Metadata:%s AppMetadata:%s Created:%s Updated:%s}",
		u.ID, u.Name, u.Email, u.PasswordHash, u.Profiles, u.EmailVerified, u.Disabled, u.MFAEnabled, u.Metadata, u.AppMetadata,
		u.CreatedAt.Format(time.RFC3339Nano), u.UpdatedAt.Format(time.RFC3339Nano))
}

// checkFamily checks that got is want as stored: a family stored
// without an AMR reads back as domain.AMRPassword (ports.RefreshTokenStore);
// nil Scopes (userd's own sessions) read back nil, empty ones empty.
func checkFamily(t *testing.T, got, want domain.RefreshFamily) {
	t.Helper()
	wantAMR, _ := domain.ParseAMR(want.AMR)
	if got.ID != want.ID || got.UserID != want.UserID || !sameTime(got.CreatedAt, want.CreatedAt) ||
		!sameTime(got.ExpiresAt, want.ExpiresAt) || !sameTimePtr(got.RevokedAt, want.RevokedAt) || !slices.Equal(got.AMR, wantAMR) ||
		got.IdleTimeout != want.IdleTimeout {
		t.Errorf("family mismatch:\n got {ID:%s User:%s Created:%s Expires:%s Revoked:%s AMR:%v Idle:%s}\nwant {ID:%s User:%s Created:%s Expires:%s Revoked:%s AMR:%v Idle:%s}",
			got.ID, got.UserID, got.CreatedAt.Format(time.RFC3339Nano), got.ExpiresAt.Format(time.RFC3339Nano), fmtTimePtr(got.RevokedAt), got.AMR, got.IdleTimeout,
			want.ID, want.UserID, want.CreatedAt.Format(time.RFC3339Nano), want.ExpiresAt.Format(time.RFC3339Nano), fmtTimePtr(want.RevokedAt), wantAMR, want.IdleTimeout)
	}
	if got.ClientID != want.ClientID || !slices.Equal(got.Scopes, want.Scopes) || (got.Scopes == nil) != (want.Scopes == nil) ||
		!sameTime(got.AuthTime, want.AuthTime) {
		t.Errorf("family %s's grant mismatch:\n got {Client:%q Scopes:%#v AuthTime:%s}\nwant {Client:%q Scopes:%#v AuthTime:%s}",
			got.ID, got.ClientID, got.Scopes, got.AuthTime.Format(time.RFC3339Nano),
			want.ClientID, want.Scopes, want.AuthTime.Format(time.RFC3339Nano))
	}
}

func checkToken(t *testing.T, got, want domain.RefreshToken) {
	t.Helper()
	if got.Hash != want.Hash || got.FamilyID != want.FamilyID || got.UserID != want.UserID ||
		!sameTime(got.IssuedAt, want.IssuedAt) || !sameTime(got.ExpiresAt, want.ExpiresAt) ||
		!sameTimePtr(got.UsedAt, want.UsedAt) || got.SuccessorHash != want.SuccessorHash {
		t.Errorf("token mismatch:\n got {Hash:%s Family:%s User:%s Issued:%s Expires:%s Used:%s Successor:%q}\nwant {Hash:%s Family:%s User:%s Issued:%s Expires:%s Used:%s Successor:%q}",
			got.Hash, got.FamilyID, got.UserID, got.IssuedAt.Format(time.RFC3339Nano), got.ExpiresAt.Format(time.RFC3339Nano), fmtTimePtr(got.UsedAt), got.SuccessorHash,
			want.Hash, want.FamilyID, want.UserID, want.IssuedAt.Format(time.RFC3339Nano), want.ExpiresAt.Format(time.RFC3339Nano), fmtTimePtr(want.UsedAt), want.SuccessorHash)
	}
}

func ids(users []domain.User) []domain.UserID {
	out := make([]domain.UserID, len(users))
	for i, u := range users {
		out[i] = u.ID
	}
	return out
}

func isSortedUnique(list []domain.UserID) bool {
	return slices.IsSorted(list) && len(slices.Compact(slices.Clone(list))) == len(list)
}

// updateConcurrently runs update(i) for i in [0, workers) at once, and
// reports each error it returns as a failure of what: the atomic updates
// of the stores (no concurrent update is lost) are checked by what each
// suite reads afterwards.
func updateConcurrently(t *testing.T, workers int, what string, update func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() { errs <- update(i) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
}
