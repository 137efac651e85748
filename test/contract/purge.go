package contract

import (
	"errors"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// PurgeStores are the stores of one empty storage, and its purger.
type PurgeStores struct {
	Users      ports.UserRepository
	Tokens     ports.RefreshTokenStore
	Attempts   ports.LoginAttemptStore
	Outbox     ports.Outbox
	Links      ports.LinkTokenStore
	Challenges ports.MFAChallengeStore
	Passkeys   ports.PasskeyStore
	Audit      ports.AuditLog
	Purger     ports.Purger
	// Clients and AuthRequests hold the OpenID provider's flows.
	Clients      ports.OAuthClientStore
	AuthRequests ports.AuthRequestStore
	// PersonalTokens holds the users' personal access tokens.
	PersonalTokens ports.PersonalTokenStore
}

// purgeCutoff is the cutoff of every case; rows stale a microsecond
// before it go, rows at it stay.
var purgeCutoff = at(30 * 24 * time.Hour)

// remaining counts every row of kind: all are stale before the end of
// time.
func remaining(t *testing.T, p ports.Purger, kind domain.PurgeKind) int {
	t.Helper()
	n, err := p.CountPurgeable(t.Context(), kind, at(100*365*24*time.Hour))
	if err != nil {
		t.Fatalf("CountPurgeable(%s, the end of time): %v", kind, err)
	}
	return n
}

// purgeAll purges kind at purgeCutoff with limit, checks that it purged
// want rows, and that CountPurgeable said so before.
func purgeAll(t *testing.T, p ports.Purger, kind domain.PurgeKind, want int) {
	t.Helper()
	if n, err := p.CountPurgeable(t.Context(), kind, purgeCutoff); err != nil || n != want {
		t.Errorf("CountPurgeable(%s) = %d, %v; want %d", kind, n, err, want)
	}
	if n, err := p.Purge(t.Context(), kind, purgeCutoff, 1000); err != nil || n != want {
		t.Errorf("Purge(%s) = %d, %v; want %d", kind, n, err, want)
	}
	if n, err := p.CountPurgeable(t.Context(), kind, purgeCutoff); err != nil || n != 0 {
		t.Errorf("CountPurgeable(%s) after Purge = %d, %v; want 0", kind, n, err)
	}
}

// Purger runs the contract of ports.Purger: for each kind, rows stale
// just before the cutoff go, rows at it stay (and stay usable), and a
// batch deletes no more than its limit.
func Purger(t *testing.T, newStores func(t *testing.T) PurgeStores) {
	step := time.Microsecond
	setup := func(t *testing.T) (PurgeStores, domain.User) {
		t.Helper()
		s := newStores(t)
		u := newUser(at(0))
		mustCreate(t, s.Users, u)
		return s, u
	}

	t.Run("refresh_families_past_expiry_go_with_their_tokens", func(t *testing.T) {
		t.Parallel()
		s, u := setup(t)
		stale, first := newFamily(u.ID, at(0))
		stale.ExpiresAt = purgeCutoff.Add(-step)
		mustCreateFamily(t, s.Tokens, stale, first)
		// A rotated family: its used token and its successor go too.
		next := domain.RefreshToken{Hash: randomHex(32), FamilyID: stale.ID, UserID: u.ID,
			IssuedAt: at(time.Hour), ExpiresAt: stale.ExpiresAt}
		if ok, err := s.Tokens.Rotate(t.Context(), first.Hash, at(time.Hour), next); err != nil || !ok {
			t.Fatalf("Rotate = %v, %v", ok, err)
		}
		kept, keptFirst := newFamily(u.ID, at(0))
		kept.ExpiresAt = purgeCutoff
		mustCreateFamily(t, s.Tokens, kept, keptFirst)
		// Revoked, but not expired: it stays until it expires.
		revoked, revokedFirst := newFamily(u.ID, at(0))
		mustCreateFamily(t, s.Tokens, revoked, revokedFirst)
		if err := s.Tokens.RevokeFamily(t.Context(), revoked.ID, at(time.Minute)); err != nil {
			t.Fatal(err)
		}

		purgeAll(t, s.Purger, domain.PurgeRefreshFamilies, 1)
		for _, h := range []string{first.Hash, next.Hash} {
			if _, _, err := s.Tokens.Lookup(t.Context(), h); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
				t.Errorf("Lookup(token of the purged family) = %v; want ErrRefreshTokenInvalid", err)
			}
		}
		for _, h := range []string{keptFirst.Hash, revokedFirst.Hash} {
			if _, _, err := s.Tokens.Lookup(t.Context(), h); err != nil {
				t.Errorf("Lookup(token of a family kept) = %v", err)
			}
		}
		if n := remaining(t, s.Purger, domain.PurgeRefreshFamilies); n != 2 {
			t.Errorf("families left = %d; want 2", n)
		}
	})

	t.Run("link_tokens_used_or_expired_and_out_of_the_budget_window_go", func(t *testing.T) {
		t.Parallel()
		s, u := setup(t)
		before := purgeCutoff.Add(-step)
		issue := func(created, expires time.Time, use bool) domain.LinkToken {
			t.Helper()
			tok := newLinkToken(u, domain.LinkVerifyEmail, created, expires.Sub(created))
			tok.Requested = true
			if err := s.Links.Issue(t.Context(), tok); err != nil {
				t.Fatalf("Issue: %v", err)
			}
			if use {
				if _, err := s.Links.Use(t.Context(), tok.Hash, tok.Purpose, created.Add(step)); err != nil {
					t.Fatalf("Use: %v", err)
				}
			}
			return tok
		}
		issue(before.Add(-time.Hour), before.Add(time.Hour), true) // used
		issue(before.Add(-time.Hour), before, false)               // expired
		usable := issue(before, purgeCutoff, false)                // expires at the cutoff
		issue(purgeCutoff, purgeCutoff.Add(time.Hour), true)       // used, but in the budget window
		issue(purgeCutoff.Add(-time.Hour), before, false)          // expired, made an hour before
		purgeAll(t, s.Purger, domain.PurgeLinkTokens, 3)
		if n, _, err := s.Links.Requested(t.Context(), u.ID, at(0)); err != nil || n != 2 {
			t.Errorf("Requested after the purge = %d, %v; want the 2 kept", n, err)
		}
		if _, err := s.Links.Peek(t.Context(), usable.Hash, usable.Purpose, before); err != nil {
			t.Errorf("Peek(the token kept) = %v", err)
		}
	})

	t.Run("mfa_challenges_past_expiry_go", func(t *testing.T) {
		t.Parallel()
		s, u := setup(t)
		stale := newChallenge(u, purgeCutoff.Add(-step-domain.MFAChallengeTTL))
		kept := newChallenge(u, purgeCutoff.Add(-domain.MFAChallengeTTL))
		for _, c := range []domain.MFAChallenge{stale, kept} {
			if err := s.Challenges.CreateChallenge(t.Context(), c); err != nil {
				t.Fatal(err)
			}
		}
		purgeAll(t, s.Purger, domain.PurgeMFAChallenges, 1)
		if _, err := s.Challenges.Challenge(t.Context(), kept.Hash, purgeCutoff.Add(-step)); err != nil {
			t.Errorf("Challenge(the one kept) = %v", err)
		}
		if n := remaining(t, s.Purger, domain.PurgeMFAChallenges); n != 1 {
			t.Errorf("challenges left = %d; want 1", n)
		}
	})

	t.Run("passkey_ceremonies_past_expiry_go", func(t *testing.T) {
		t.Parallel()
		s, u := setup(t)
		stale := newCeremony(u.ID, domain.CeremonyRegistration, purgeCutoff.Add(-step-domain.CeremonyTTL))
		kept := newCeremony("", domain.CeremonyLogin, purgeCutoff.Add(-domain.CeremonyTTL))
		for _, c := range []domain.PasskeyCeremony{stale, kept} {
			if err := s.Passkeys.CreateCeremony(t.Context(), c); err != nil {
				t.Fatal(err)
			}
		}
		purgeAll(t, s.Purger, domain.PurgePasskeyCeremonies, 1)
		if _, err := s.Passkeys.TakeCeremony(t.Context(), kept.ID, kept.Purpose, purgeCutoff.Add(-step)); err != nil {
			t.Errorf("TakeCeremony(the one kept) = %v", err)
		}
	})

	t.Run("auth_requests_past_expiry_and_past_their_codes_go", func(t *testing.T) {
		t.Parallel()
		s, u := setup(t)
		c := newOAuthClient(at(0))
		mustCreateClient(t, s.Clients, c)
		made := purgeCutoff.Add(-step - domain.AuthRequestTTL)
		stale := newAuthRequest(c.ID, made)
		// Its code, got at the request's end, outlives it: it goes once
		// both are past.
		late := newAuthRequest(c.ID, made)
		lateSigned, _ := signedIn(late, u.ID, late.ExpiresAt.Add(-step))
		staleCoded := newAuthRequest(c.ID, made.Add(-domain.AuthCodeTTL))
		staleSigned, _ := signedIn(staleCoded, u.ID, staleCoded.ExpiresAt.Add(-domain.AuthCodeTTL-step))
		kept := newAuthRequest(c.ID, purgeCutoff.Add(-domain.AuthRequestTTL))
		for _, r := range []domain.AuthRequest{stale, late, staleCoded, kept} {
			mustCreateAuthRequest(t, s.AuthRequests, r)
		}
		mustAttachCode(t, s.AuthRequests, late.ID, lateSigned, late.ExpiresAt.Add(-step))
		mustAttachCode(t, s.AuthRequests, staleCoded.ID, staleSigned, staleCoded.ExpiresAt.Add(-domain.AuthCodeTTL-step))
		purgeAll(t, s.Purger, domain.PurgeAuthRequests, 2)
		if _, err := s.AuthRequests.AuthRequest(t.Context(), kept.ID, purgeCutoff.Add(-step)); err != nil {
			t.Errorf("AuthRequest(the one kept) = %v", err)
		}
		if _, err := s.AuthRequests.TakeCode(t.Context(), lateSigned.CodeHash, randomHex(16), purgeCutoff.Add(-step)); err != nil {
			t.Errorf("TakeCode(the code kept) = %v", err)
		}
		if n := remaining(t, s.Purger, domain.PurgeAuthRequests); n != 2 {
			t.Errorf("requests left = %d; want 2", n)
		}
	})

	t.Run("login_attempts_past_the_cutoff_go", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		for _, last := range []time.Time{purgeCutoff.Add(-step), purgeCutoff.Add(-time.Hour), purgeCutoff} {
			email := domain.Email("a-" + randomHex(4) + "@example.com")
			if _, err := s.Attempts.Reserve(t.Context(), email, last); err != nil {
				t.Fatal(err)
			}
		}
		purgeAll(t, s.Purger, domain.PurgeLoginAttempts, 2)
		if n := remaining(t, s.Purger, domain.PurgeLoginAttempts); n != 1 {
			t.Errorf("counters left = %d; want 1", n)
		}
	})

	t.Run("outbox_messages_made_before_the_cutoff_go", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		for _, created := range []time.Time{purgeCutoff.Add(-step), purgeCutoff, purgeCutoff.Add(time.Hour)} {
			if err := s.Outbox.Enqueue(t.Context(), newMessage(created)); err != nil {
				t.Fatal(err)
			}
		}
		purgeAll(t, s.Purger, domain.PurgeOutboxMessages, 1)
		if n, _, err := s.Outbox.Backlog(t.Context()); err != nil || n != 2 {
			t.Errorf("Backlog after the purge = %d, %v; want 2", n, err)
		}
	})

	t.Run("personal_tokens_expired_or_revoked_before_the_cutoff_go", func(t *testing.T) {
		t.Parallel()
		s, u := setup(t)
		before := purgeCutoff.Add(-step)
		create := func(expires time.Time, revoked *time.Time) domain.PersonalToken {
			t.Helper()
			tok := newPersonalToken(u.ID, at(0))
			tok.ExpiresAt = expires
			mustCreateToken(t, s.PersonalTokens, tok)
			if revoked != nil {
				mustRevokeToken(t, s.PersonalTokens, &tok, *revoked)
			}
			return tok
		}
		later := purgeCutoff.Add(time.Hour)
		gone := []domain.PersonalToken{
			create(before, nil),                      // expired
			create(later, &before),                   // revoked
			create(before, ptrTo(before.Add(-step))), // revoked, then expired
		}
		kept := []domain.PersonalToken{
			create(purgeCutoff, nil),          // expires at the cutoff
			create(later, ptrTo(purgeCutoff)), // revoked at the cutoff
			create(later, nil),                // live
		}
		purgeAll(t, s.Purger, domain.PurgePersonalTokens, len(gone))
		for _, tok := range gone {
			if _, _, err := s.PersonalTokens.TokenByHash(t.Context(), tok.Hash); !errors.Is(err, domain.ErrPersonalTokenNotFound) {
				t.Errorf("TokenByHash(a purged token) = %v, want ErrPersonalTokenNotFound", err)
			}
		}
		for _, tok := range kept {
			tokenByHash(t, s.PersonalTokens, tok, u)
		}
	})

	t.Run("audit_events_before_the_cutoff_go", func(t *testing.T) {
		t.Parallel()
		s, u := setup(t)
		var keptIDs []domain.AuditID
		for _, when := range []time.Time{purgeCutoff.Add(-time.Hour), purgeCutoff.Add(-step), purgeCutoff, purgeCutoff.Add(time.Hour)} {
			e := domain.AuditEvent{ID: domain.NewAuditID(when), Time: when, Type: domain.AuditLoginSucceeded, SubjectID: u.ID}
			if err := s.Audit.Record(t.Context(), e); err != nil {
				t.Fatal(err)
			}
			if !when.Before(purgeCutoff) {
				keptIDs = append(keptIDs, e.ID)
			}
		}
		purgeAll(t, s.Purger, domain.PurgeAuditEvents, 2)
		got, err := s.Audit.List(t.Context(), ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 10}})
		if err != nil || len(got) != 2 || got[0].ID != keptIDs[0] || got[1].ID != keptIDs[1] {
			t.Errorf("List after the purge = %+v, %v; want the events %v", got, err, keptIDs)
		}
	})

	t.Run("a_batch_deletes_at_most_its_limit", func(t *testing.T) {
		t.Parallel()
		s, u := setup(t)
		for range 5 {
			f, first := newFamily(u.ID, at(0))
			f.ExpiresAt = at(time.Hour)
			mustCreateFamily(t, s.Tokens, f, first)
		}
		for _, want := range []int{2, 2, 1, 0} {
			if n, err := s.Purger.Purge(t.Context(), domain.PurgeRefreshFamilies, purgeCutoff, 2); err != nil || n != want {
				t.Errorf("Purge(limit 2) = %d, %v; want %d", n, err, want)
			}
		}
		if n, err := s.Purger.Purge(t.Context(), domain.PurgeRefreshFamilies, purgeCutoff, 0); err != nil || n != 0 {
			t.Errorf("Purge(limit 0) = %d, %v; want 0, nil", n, err)
		}
	})

	t.Run("an_unknown_kind_is_an_error", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		if _, err := s.Purger.Purge(t.Context(), "users", purgeCutoff, 10); err == nil {
			t.Error("Purge(users) succeeded; want an error")
		}
		if _, err := s.Purger.CountPurgeable(t.Context(), "users", purgeCutoff); err == nil {
			t.Error("CountPurgeable(users) succeeded; want an error")
		}
	})
}

// Lock runs the contract of ports.Lock over one handle of a store.
func Lock(t *testing.T, newLock func(t *testing.T) ports.Lock) {
	t.Run("one_holder_at_a_time", func(t *testing.T) {
		t.Parallel()
		l := newLock(t)
		release, ok, err := l.TryLock(t.Context(), "purge")
		if err != nil || !ok {
			t.Fatalf("TryLock = %v, %v; want it taken", ok, err)
		}
		if r, ok, err := l.TryLock(t.Context(), "purge"); err != nil || ok || r != nil {
			t.Fatalf("TryLock while held = %v, %v; want refused", ok, err)
		}
		other, ok, err := l.TryLock(t.Context(), "another")
		if err != nil || !ok {
			t.Fatalf("TryLock(another name) = %v, %v; want it taken", ok, err)
		}
		other()
		release()
		release() // twice is harmless
		again, ok, err := l.TryLock(t.Context(), "purge")
		if err != nil || !ok {
			t.Fatalf("TryLock after release = %v, %v; want it taken", ok, err)
		}
		again()
	})
}
