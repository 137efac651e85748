package contract

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// newPasskey returns a passkey of the user made at created, with a
// credential id and record holding zero bytes and high bits.
func newPasskey(user domain.UserID, created time.Time) domain.Passkey {
	return domain.Passkey{
		ID:           domain.NewPasskeyID(created),
		UserID:       user,
		Name:         "Key " + randomHex(3),
		CredentialID: append([]byte{0x00, 0xff}, []byte(randomHex(16))...),
		Credential:   append([]byte{0x80, 0x00}, []byte(randomHex(40))...),
		SignCount:    7,
		CreatedAt:    created,
	}
}

func checkPasskey(t *testing.T, got, want domain.Passkey) {
	t.Helper()
	if got.ID != want.ID || got.UserID != want.UserID || got.Name != want.Name ||
		!bytes.Equal(got.CredentialID, want.CredentialID) || !bytes.Equal(got.Credential, want.Credential) ||
		got.SignCount != want.SignCount || !sameTime(got.CreatedAt, want.CreatedAt) || !sameTimePtr(got.LastUsedAt, want.LastUsedAt) {
		t.Errorf("passkey mismatch:\n got %+v (last used %s)\nwant %+v (last used %s)", got, fmtTimePtr(got.LastUsedAt), want, fmtTimePtr(want.LastUsedAt))
	}
}

// checkPasskeys checks that the user's passkeys are want, in order.
func checkPasskeys(t *testing.T, store ports.PasskeyStore, user domain.UserID, want ...domain.Passkey) {
	t.Helper()
	got, err := store.Passkeys(t.Context(), user)
	if err != nil {
		t.Fatalf("Passkeys: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("Passkeys(%s) = %d passkeys, want %d", user, len(got), len(want))
	}
	for i := range want {
		checkPasskey(t, got[i], want[i])
	}
}

func newCeremony(user domain.UserID, purpose domain.CeremonyPurpose, created time.Time) domain.PasskeyCeremony {
	return domain.PasskeyCeremony{ID: domain.NewCeremonyID(), Purpose: purpose, UserID: user,
		State: append([]byte{0x00, 0xff}, []byte(randomHex(24))...), CreatedAt: created, ExpiresAt: created.Add(domain.CeremonyTTL)}
}

func checkCeremony(t *testing.T, got, want domain.PasskeyCeremony) {
	t.Helper()
	if got.ID != want.ID || got.Purpose != want.Purpose || got.UserID != want.UserID || !bytes.Equal(got.State, want.State) ||
		!sameTime(got.CreatedAt, want.CreatedAt) || !sameTime(got.ExpiresAt, want.ExpiresAt) {
		t.Errorf("ceremony mismatch:\n got %+v\nwant %+v", got, want)
	}
}

func mustCreatePasskey(t *testing.T, store ports.PasskeyStore, p domain.Passkey) {
	t.Helper()
	if err := store.CreatePasskey(t.Context(), p); err != nil {
		t.Fatalf("CreatePasskey: %v", err)
	}
}

// PasskeyStore runs the contract of ports.PasskeyStore. newStores returns
// a user repository and a passkey store sharing one empty storage, since
// passkeys belong to users.
func PasskeyStore(t *testing.T, newStores func(t *testing.T) (ports.UserRepository, ports.PasskeyStore)) {
	setup := func(t *testing.T) (ports.UserRepository, ports.PasskeyStore, domain.User) {
		t.Helper()
		users, store := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		return users, store, u
	}
	create := func(t *testing.T, store ports.PasskeyStore, p domain.Passkey) {
		t.Helper()
		if err := store.CreatePasskey(t.Context(), p); err != nil {
			t.Fatalf("CreatePasskey: %v", err)
		}
	}
	notFound := func(t *testing.T, store ports.PasskeyStore, credentialID []byte, why string) {
		t.Helper()
		if got, err := store.PasskeyByCredentialID(t.Context(), credentialID); !errors.Is(err, domain.ErrPasskeyNotFound) {
			t.Errorf("PasskeyByCredentialID(%s) = %+v, %v; want ErrPasskeyNotFound", why, got, err)
		}
	}

	t.Run("create_and_read", func(t *testing.T) {
		t.Parallel()
		users, store, u := setup(t)
		other := newUser(at(time.Second))
		mustCreate(t, users, other)
		checkPasskeys(t, store, u.ID)
		// Made out of order; two share a creation time, so the id breaks
		// the tie.
		late := newPasskey(u.ID, at(2*time.Hour))
		a, b := newPasskey(u.ID, at(time.Hour+time.Microsecond)), newPasskey(u.ID, at(time.Hour+time.Microsecond))
		if b.ID < a.ID {
			a, b = b, a
		}
		used := at(3 * time.Hour)
		b.LastUsedAt = &used
		theirs := newPasskey(other.ID, at(0))
		for _, p := range []domain.Passkey{late, b, theirs, a} {
			create(t, store, p)
		}
		checkPasskeys(t, store, u.ID, a, b, late)
		checkPasskeys(t, store, other.ID, theirs)
		got, err := store.PasskeyByCredentialID(t.Context(), b.CredentialID)
		if err != nil {
			t.Fatalf("PasskeyByCredentialID: %v", err)
		}
		checkPasskey(t, got, b)
		notFound(t, store, []byte("no such credential"), "unknown")
		notFound(t, store, b.CredentialID[:len(b.CredentialID)-1], "a prefix")
	})

	t.Run("values_are_copies", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		p := newPasskey(u.ID, at(0))
		want := p
		want.CredentialID, want.Credential = bytes.Clone(p.CredentialID), bytes.Clone(p.Credential)
		create(t, store, p)
		p.Credential[0] ^= 0xff
		got, err := store.Passkeys(t.Context(), u.ID)
		if err != nil || len(got) != 1 {
			t.Fatalf("Passkeys = %d, %v", len(got), err)
		}
		got[0].Credential[1] ^= 0xff
		got[0].CredentialID[1] ^= 0xff
		checkPasskeys(t, store, u.ID, want)
	})

	t.Run("duplicate_credential_id", func(t *testing.T) {
		t.Parallel()
		users, store, u := setup(t)
		other := newUser(at(time.Second))
		mustCreate(t, users, other)
		p := newPasskey(u.ID, at(0))
		create(t, store, p)
		for _, owner := range []domain.UserID{u.ID, other.ID} {
			dup := newPasskey(owner, at(time.Minute))
			dup.CredentialID = bytes.Clone(p.CredentialID)
			if err := store.CreatePasskey(t.Context(), dup); !errors.Is(err, domain.ErrPasskeyExists) {
				t.Errorf("CreatePasskey(a credential id of %s's passkey, for %s) = %v, want ErrPasskeyExists", u.ID, owner, err)
			}
		}
		checkPasskeys(t, store, u.ID, p)
		checkPasskeys(t, store, other.ID)
	})

	t.Run("unknown_user", func(t *testing.T) {
		t.Parallel()
		_, store := newStores(t)
		p := newPasskey(domain.NewUserID(at(0)), at(0))
		if err := store.CreatePasskey(t.Context(), p); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("CreatePasskey(for an unknown user) = %v, want ErrUserNotFound", err)
		}
		notFound(t, store, p.CredentialID, "a refused passkey")
		c := newCeremony(p.UserID, domain.CeremonyRegistration, at(0))
		if err := store.CreateCeremony(t.Context(), c); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("CreateCeremony(for an unknown user) = %v, want ErrUserNotFound", err)
		}
	})

	t.Run("record_use", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		p := newPasskey(u.ID, at(0))
		create(t, store, p)
		record := func(count uint32, credential []byte, when time.Time, want bool) {
			t.Helper()
			if ok, err := store.RecordPasskeyUse(t.Context(), p.ID, count, credential, when); err != nil || ok != want {
				t.Errorf("RecordPasskeyUse(count %d over %d) = %v, %v; want %v", count, p.SignCount, ok, err, want)
			}
		}
		record(p.SignCount, []byte("same count"), at(time.Minute), false)
		record(p.SignCount-1, []byte("lower count"), at(time.Minute), false)
		record(0, []byte("zero over seven"), at(time.Minute), false)
		checkPasskeys(t, store, u.ID, p)
		when := at(time.Hour + 5*time.Microsecond)
		record(p.SignCount+1, []byte{0x00, 0x01, 0xfe}, when, true)
		p.SignCount, p.Credential, p.LastUsedAt = p.SignCount+1, []byte{0x00, 0x01, 0xfe}, &when
		checkPasskeys(t, store, u.ID, p)
		record(1<<32-1, []byte("max"), when, true)
		p.SignCount, p.Credential = 1<<32-1, []byte("max")
		checkPasskeys(t, store, u.ID, p)
		if ok, err := store.RecordPasskeyUse(t.Context(), domain.NewPasskeyID(at(0)), 9, nil, when); err != nil || ok {
			t.Errorf("RecordPasskeyUse(unknown passkey) = %v, %v; want false", ok, err)
		}
	})

	// An authenticator that keeps no counter says 0 every time.
	t.Run("record_use_without_counter", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		p := newPasskey(u.ID, at(0))
		p.SignCount = 0
		create(t, store, p)
		for i := range 2 {
			when := at(time.Duration(i+1) * time.Minute)
			if ok, err := store.RecordPasskeyUse(t.Context(), p.ID, 0, p.Credential, when); err != nil || !ok {
				t.Errorf("RecordPasskeyUse(0 over 0, use %d) = %v, %v; want true", i, ok, err)
			}
			p.LastUsedAt = &when
		}
		checkPasskeys(t, store, u.ID, p)
		// Once it counts, it never goes back to 0.
		if ok, err := store.RecordPasskeyUse(t.Context(), p.ID, 3, p.Credential, at(time.Hour)); err != nil || !ok {
			t.Errorf("RecordPasskeyUse(3 over 0) = %v, %v; want true", ok, err)
		}
		if ok, err := store.RecordPasskeyUse(t.Context(), p.ID, 0, p.Credential, at(time.Hour)); err != nil || ok {
			t.Errorf("RecordPasskeyUse(0 over 3) = %v, %v; want false", ok, err)
		}
	})

	t.Run("concurrent_use", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		p := newPasskey(u.ID, at(0))
		create(t, store, p)
		const workers = 16
		if wins := countTrue(t, workers, func(i int) (bool, error) {
			return store.RecordPasskeyUse(t.Context(), p.ID, p.SignCount+1, p.Credential, at(time.Duration(i)*time.Second))
		}); wins != 1 {
			t.Errorf("%d of %d concurrent assertions with one counter were recorded, want 1", wins, workers)
		}
	})

	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		users, store, u := setup(t)
		other := newUser(at(time.Second))
		mustCreate(t, users, other)
		p, q := newPasskey(u.ID, at(0)), newPasskey(u.ID, at(time.Minute))
		theirs := newPasskey(other.ID, at(0))
		for _, k := range []domain.Passkey{p, q, theirs} {
			create(t, store, k)
		}
		ctx := t.Context()
		if err := store.DeletePasskey(ctx, other.ID, p.ID); !errors.Is(err, domain.ErrPasskeyNotFound) {
			t.Errorf("DeletePasskey(another user's) = %v, want ErrPasskeyNotFound", err)
		}
		if err := store.DeletePasskey(ctx, u.ID, p.ID); err != nil {
			t.Errorf("DeletePasskey: %v", err)
		}
		if err := store.DeletePasskey(ctx, u.ID, p.ID); !errors.Is(err, domain.ErrPasskeyNotFound) {
			t.Errorf("DeletePasskey(again) = %v, want ErrPasskeyNotFound", err)
		}
		notFound(t, store, p.CredentialID, "a deleted passkey")
		checkPasskeys(t, store, u.ID, q)
		// Its credential may be registered again.
		again := newPasskey(u.ID, at(time.Hour))
		again.CredentialID = p.CredentialID
		create(t, store, again)
		if n, err := store.DeletePasskeys(ctx, u.ID); err != nil || n != 2 {
			t.Errorf("DeletePasskeys = %d, %v; want 2", n, err)
		}
		if n, err := store.DeletePasskeys(ctx, u.ID); err != nil || n != 0 {
			t.Errorf("DeletePasskeys(none left) = %d, %v; want 0", n, err)
		}
		checkPasskeys(t, store, u.ID)
		checkPasskeys(t, store, other.ID, theirs)
	})

	t.Run("rename", func(t *testing.T) {
		t.Parallel()
		users, store, u := setup(t)
		other := newUser(at(time.Second))
		mustCreate(t, users, other)
		p, q := newPasskey(u.ID, at(0)), newPasskey(u.ID, at(time.Minute))
		used := at(time.Hour)
		p.LastUsedAt = &used
		theirs := newPasskey(other.ID, at(0))
		for _, k := range []domain.Passkey{p, q, theirs} {
			create(t, store, k)
		}
		ctx := t.Context()
		rename := func(user domain.UserID, id domain.PasskeyID, name, why string) {
			t.Helper()
			if got, err := store.RenamePasskey(ctx, user, id, name); !errors.Is(err, domain.ErrPasskeyNotFound) {
				t.Errorf("RenamePasskey(%s) = %+v, %v; want ErrPasskeyNotFound", why, got, err)
			}
		}
		rename(other.ID, p.ID, "Stolen", "another user's passkey")
		rename(u.ID, domain.NewPasskeyID(at(0)), "Nobody's", "an unknown passkey")
		// Every other column stays as it was, and the answer is the row
		// as stored now.
		const name = "Clé de Zoë ✓"
		got, err := store.RenamePasskey(ctx, u.ID, p.ID, name)
		if err != nil {
			t.Fatalf("RenamePasskey: %v", err)
		}
		p.Name = name
		checkPasskey(t, got, p)
		checkPasskeys(t, store, u.ID, p, q)
		checkPasskeys(t, store, other.ID, theirs)
		// The same name again is no error: the passkey exists.
		if _, err := store.RenamePasskey(ctx, u.ID, p.ID, name); err != nil {
			t.Errorf("RenamePasskey(to its own name): %v", err)
		}
		if err := store.DeletePasskey(ctx, u.ID, q.ID); err != nil {
			t.Fatalf("DeletePasskey: %v", err)
		}
		rename(u.ID, q.ID, "Gone", "a deleted passkey")
	})

	t.Run("ceremonies", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		ctx := t.Context()
		take := func(id string, purpose domain.CeremonyPurpose, now time.Time, why string) {
			t.Helper()
			if got, err := store.TakeCeremony(ctx, id, purpose, now); !errors.Is(err, domain.ErrInvalidPasskey) {
				t.Errorf("TakeCeremony(%s) = %+v, %v; want ErrInvalidPasskey", why, got, err)
			}
		}
		reg := newCeremony(u.ID, domain.CeremonyRegistration, at(time.Minute))
		login := newCeremony("", domain.CeremonyLogin, at(time.Minute+time.Microsecond))
		mfa := newCeremony(u.ID, domain.CeremonySecondFactor, at(time.Minute))
		for _, c := range []domain.PasskeyCeremony{reg, login, mfa} {
			if err := store.CreateCeremony(ctx, c); err != nil {
				t.Fatalf("CreateCeremony(%s): %v", c.Purpose, err)
			}
		}
		take(reg.ID, domain.CeremonyLogin, at(2*time.Minute), "another purpose")
		take(domain.NewCeremonyID(), domain.CeremonyLogin, at(2*time.Minute), "unknown")
		take(mfa.ID, domain.CeremonySecondFactor, mfa.ExpiresAt, "at its expiry")
		for _, c := range []domain.PasskeyCeremony{reg, login} {
			got, err := store.TakeCeremony(ctx, c.ID, c.Purpose, c.ExpiresAt.Add(-time.Microsecond))
			if err != nil {
				t.Fatalf("TakeCeremony(%s): %v", c.Purpose, err)
			}
			checkCeremony(t, got, c)
			take(c.ID, c.Purpose, c.CreatedAt, "taken already")
		}
	})

	t.Run("concurrent_take", func(t *testing.T) {
		t.Parallel()
		_, store, u := setup(t)
		c := newCeremony(u.ID, domain.CeremonySecondFactor, at(0))
		if err := store.CreateCeremony(t.Context(), c); err != nil {
			t.Fatalf("CreateCeremony: %v", err)
		}
		const workers = 16
		if wins := countTrue(t, workers, func(int) (bool, error) {
			_, err := store.TakeCeremony(t.Context(), c.ID, c.Purpose, at(time.Minute))
			if errors.Is(err, domain.ErrInvalidPasskey) {
				return false, nil
			}
			return err == nil, err
		}); wins != 1 {
			t.Errorf("%d of %d concurrent takes of one ceremony succeeded, want 1", wins, workers)
		}
	})

	t.Run("deleted_with_the_user", func(t *testing.T) {
		t.Parallel()
		users, store, u := setup(t)
		ctx := t.Context()
		p := newPasskey(u.ID, at(0))
		create(t, store, p)
		c := newCeremony(u.ID, domain.CeremonyRegistration, at(0))
		login := newCeremony("", domain.CeremonyLogin, at(0))
		for _, c := range []domain.PasskeyCeremony{c, login} {
			if err := store.CreateCeremony(ctx, c); err != nil {
				t.Fatalf("CreateCeremony: %v", err)
			}
		}
		if err := users.Delete(ctx, u.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		checkPasskeys(t, store, u.ID)
		notFound(t, store, p.CredentialID, "the passkey of a deleted user")
		if got, err := store.TakeCeremony(ctx, c.ID, c.Purpose, at(time.Minute)); !errors.Is(err, domain.ErrInvalidPasskey) {
			t.Errorf("TakeCeremony(of a deleted user) = %+v, %v; want ErrInvalidPasskey", got, err)
		}
		// A ceremony of no user is nobody's to lose.
		if _, err := store.TakeCeremony(ctx, login.ID, login.Purpose, at(time.Minute)); err != nil {
			t.Errorf("TakeCeremony(a discoverable login, after another user's deletion): %v", err)
		}
	})
}
