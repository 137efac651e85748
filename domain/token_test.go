package domain_test

import (
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

// RotatableOwn is what the stores' RotateOwn checks before rotating: each
// condition alone refuses, and each limit is exclusive.
func TestRefreshToken_RotatableOwn(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	used := now.Add(-time.Minute)
	revoked := now.Add(-time.Minute)
	family := domain.RefreshFamily{ID: "f", UserID: "u", CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour),
		LastUsedAt: now.Add(-10 * time.Minute)}
	token := domain.RefreshToken{Hash: "h", FamilyID: "f", UserID: "u", IssuedAt: now.Add(-time.Hour), ExpiresAt: now.Add(time.Minute)}
	with := func(change func(*domain.RefreshToken, *domain.RefreshFamily)) (domain.RefreshToken, domain.RefreshFamily) {
		tok, fam := token, family
		change(&tok, &fam)
		return tok, fam
	}
	for _, c := range []struct {
		name   string
		change func(*domain.RefreshToken, *domain.RefreshFamily)
		want   bool
	}{
		{"unused, unexpired, own and active", func(*domain.RefreshToken, *domain.RefreshFamily) {}, true},
		{"used", func(tok *domain.RefreshToken, _ *domain.RefreshFamily) { tok.UsedAt = &used }, false},
		{"token ends now", func(tok *domain.RefreshToken, _ *domain.RefreshFamily) { tok.ExpiresAt = now }, false},
		{"token ends in a nanosecond", func(tok *domain.RefreshToken, _ *domain.RefreshFamily) { tok.ExpiresAt = now.Add(1) }, true},
		{"a client's", func(_ *domain.RefreshToken, f *domain.RefreshFamily) { f.ClientID = "app" }, false},
		{"revoked", func(_ *domain.RefreshToken, f *domain.RefreshFamily) { f.RevokedAt = &revoked }, false},
		{"family ends now", func(_ *domain.RefreshToken, f *domain.RefreshFamily) { f.ExpiresAt = now }, false},
		{"idle to the limit", func(_ *domain.RefreshToken, f *domain.RefreshFamily) { f.IdleTimeout = 10 * time.Minute }, false},
		{"idle within the limit", func(_ *domain.RefreshToken, f *domain.RefreshFamily) { f.IdleTimeout = 11 * time.Minute }, true},
	} {
		tok, fam := with(c.change)
		if got := tok.RotatableOwn(fam, now); got != c.want {
			t.Errorf("%s: RotatableOwn = %v, want %v", c.name, got, c.want)
		}
	}
}
