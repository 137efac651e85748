package contract

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// TxStores are the stores of one empty storage and its Transactor.
type TxStores struct {
	Tx       ports.Transactor
	Users    ports.UserRepository
	Tokens   ports.RefreshTokenStore
	Attempts ports.LoginAttemptStore
	Keys     ports.KeyStore
	Audit    ports.AuditLog
	Outbox   ports.Outbox
	Links    ports.LinkTokenStore
	// The stores of second factors; MFA seals with a box of its own.
	MFA        ports.MFAStore
	Challenges ports.MFAChallengeStore
	Passkeys   ports.PasskeyStore
}

// errRollback is what the suite's failing transactions return.
var errRollback = errors.New("roll back")

// txTimeout bounds each transaction of the suite: a store method that
// does not join the context's transaction may wait for it forever (on
// SQLite, for the one writer connection the transaction holds).
const txTimeout = 20 * time.Second

// within runs WithinTx, failing the test if it does not return in time.
func within(t *testing.T, s TxStores, fn func(ctx context.Context) error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Tx.WithinTx(t.Context(), fn) }()
	select {
	case err := <-done:
		return err
	case <-time.After(txTimeout):
		t.Fatal("WithinTx did not return: a store method called inside it waits for the transaction")
		return nil
	}
}

// Transactor runs the contract of ports.Transactor: the store methods
// called with the context of WithinTx join its transaction, which commits
// all of their writes or none.
func Transactor(t *testing.T, newStores func(t *testing.T) TxStores) {
	// write makes u, one message and one link token of u in ctx.
	write := func(ctx context.Context, s TxStores, u domain.User, m domain.OutboxMessage, tok domain.LinkToken) error {
		if err := s.Users.Create(ctx, u); err != nil {
			return err
		}
		if err := s.Outbox.Enqueue(ctx, m); err != nil {
			return err
		}
		return s.Links.Issue(ctx, tok)
	}
	// checkWritten checks whether u, m and tok are stored.
	checkWritten := func(t *testing.T, s TxStores, written bool, u domain.User, m domain.OutboxMessage, tok domain.LinkToken) {
		t.Helper()
		ctx := t.Context()
		_, err := s.Users.ByID(ctx, u.ID)
		if written && err != nil || !written && !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("ByID after the transaction: %v; want the user written: %v", err, written)
		}
		n, oldest, err := s.Outbox.Backlog(ctx)
		if err != nil {
			t.Fatalf("Backlog: %v", err)
		}
		if written && (n != 1 || !oldest.Equal(m.CreatedAt)) || !written && n != 0 {
			t.Errorf("Backlog after the transaction = %d, oldest %s; want the message written: %v", n, oldest, written)
		}
		_, err = s.Links.Use(ctx, tok.Hash, tok.Purpose, tok.CreatedAt)
		if written && err != nil || !written && !errors.Is(err, domain.ErrInvalidLinkToken) {
			t.Errorf("Use after the transaction: %v; want the token written: %v", err, written)
		}
	}
	fixture := func() (domain.User, domain.OutboxMessage, domain.LinkToken) {
		u := newUser(at(0))
		m := newMessage(at(0))
		m.Secret = true
		return u, m, newLinkToken(u, domain.LinkVerifyEmail, at(0), time.Hour)
	}

	t.Run("commit", func(t *testing.T) {
		t.Parallel()
		s := newStores(t)
		u, m, tok := fixture()
		err := within(t, s, func(ctx context.Context) error {
			if err := write(ctx, s, u, m, tok); err != nil {
				return err
			}
			// Reads inside see the transaction's writes.
			if got, err := s.Users.ByEmail(ctx, u.Email); err != nil || got.ID != u.ID {
				t.Errorf("ByEmail inside the transaction = %s, %v; want %s", got.ID, err, u.ID)
			}
			if n, _, err := s.Outbox.Backlog(ctx); err != nil || n != 1 {
				t.Errorf("Backlog inside the transaction = %d, %v; want 1", n, err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("WithinTx: %v", err)
		}
		checkWritten(t, s, true, u, m, tok)
	})

	t.Run("rollback", func(t *testing.T) {
		t.Parallel()
		s := newStores(t)
		u, m, tok := fixture()
		err := within(t, s, func(ctx context.Context) error {
			if err := write(ctx, s, u, m, tok); err != nil {
				t.Errorf("write: %v", err)
			}
			return errRollback
		})
		if err != errRollback { //nolint:errorlint // fn's error must come back unchanged, not wrapped
			t.Errorf("WithinTx = %v, want fn's error unchanged", err)
		}
		checkWritten(t, s, false, u, m, tok)
	})

	// Changes to existing rows roll back too: an update, a used token, a
	// claimed message, a deletion.
	t.Run("rollback_changes", func(t *testing.T) {
		t.Parallel()
		s := newStores(t)
		ctx := t.Context()
		u, m, tok := fixture()
		if err := write(ctx, s, u, m, tok); err != nil {
			t.Fatalf("write: %v", err)
		}
		other := newUser(at(time.Second))
		mustCreate(t, s.Users, other)
		err := within(t, s, func(ctx context.Context) error {
			if _, err := s.Links.Use(ctx, tok.Hash, tok.Purpose, at(time.Second)); err != nil {
				t.Errorf("Use: %v", err)
			}
			if _, err := s.Users.Update(ctx, u.ID, func(v *domain.User) error { v.EmailVerified = true; return nil }); err != nil {
				t.Errorf("Update: %v", err)
			}
			if got, err := s.Outbox.Claim(ctx, at(time.Minute), time.Hour, 10); err != nil || len(got) != 1 {
				t.Errorf("Claim = %d messages, %v; want 1", len(got), err)
			}
			if err := s.Users.Delete(ctx, other.ID); err != nil {
				t.Errorf("Delete: %v", err)
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("WithinTx = %v, want fn's error", err)
		}
		checkStored(t, s.Users, u)
		checkStored(t, s.Users, other)
		if got, err := s.Outbox.Claim(ctx, at(time.Minute), time.Hour, 10); err != nil || len(got) != 1 {
			t.Errorf("Claim after the rollback = %d messages, %v; want the message, not claimed", len(got), err)
		}
		checkWritten(t, s, true, u, m, tok)
	})

	// A WithinTx inside another joins it: the outer one decides.
	t.Run("nested_joins", func(t *testing.T) {
		t.Parallel()
		s := newStores(t)
		u, m, tok := fixture()
		err := within(t, s, func(ctx context.Context) error {
			if err := s.Tx.WithinTx(ctx, func(ctx context.Context) error { return write(ctx, s, u, m, tok) }); err != nil {
				t.Errorf("inner WithinTx: %v", err)
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("WithinTx = %v, want fn's error", err)
		}
		checkWritten(t, s, false, u, m, tok)

		u2, m2, tok2 := fixture()
		err = within(t, s, func(ctx context.Context) error {
			return s.Tx.WithinTx(ctx, func(ctx context.Context) error { return write(ctx, s, u2, m2, tok2) })
		})
		if err != nil {
			t.Fatalf("WithinTx: %v", err)
		}
		checkWritten(t, s, true, u2, m2, tok2)
	})

	// A store error inside (a taken email, the last admin) is returned to
	// fn, and the transaction goes on: fn decides whether to commit.
	t.Run("store_errors_leave_it_usable", func(t *testing.T) {
		t.Parallel()
		s := newStores(t)
		admin := newAdmin(at(0))
		mustCreate(t, s.Users, admin)
		u, m, tok := fixture()
		err := within(t, s, func(ctx context.Context) error {
			taken := newUser(at(time.Second))
			taken.Email = admin.Email
			if err := s.Users.Create(ctx, taken); !errors.Is(err, domain.ErrEmailTaken) {
				t.Errorf("Create(taken email) = %v, want ErrEmailTaken", err)
			}
			if _, err := s.Users.Update(ctx, admin.ID, demote); !errors.Is(err, domain.ErrLastAdmin) {
				t.Errorf("Update(demote the last admin) = %v, want ErrLastAdmin", err)
			}
			if _, err := s.Users.Update(ctx, admin.ID, func(*domain.User) error { return errRollback }); !errors.Is(err, errRollback) {
				t.Errorf("Update(fn fails) = %v, want fn's error", err)
			}
			return write(ctx, s, u, m, tok)
		})
		if err != nil {
			t.Fatalf("WithinTx: %v", err)
		}
		checkWritten(t, s, true, u, m, tok)
		checkStored(t, s.Users, admin)
	})

	// The last-admin rule holds for the changes of one transaction taken
	// together.
	t.Run("last_admin_inside", func(t *testing.T) {
		t.Parallel()
		s := newStores(t)
		a, b := newAdmin(at(0)), newAdmin(at(time.Second))
		mustCreate(t, s.Users, a)
		mustCreate(t, s.Users, b)
		err := within(t, s, func(ctx context.Context) error {
			if _, err := s.Users.Update(ctx, a.ID, disable); err != nil {
				t.Errorf("Update(disable a): %v", err)
			}
			if err := s.Users.Delete(ctx, b.ID); !errors.Is(err, domain.ErrLastAdmin) {
				t.Errorf("Delete(b after a was disabled in the same transaction) = %v, want ErrLastAdmin", err)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("WithinTx: %v", err)
		}
		checkEnabledAdmins(t, s.Users, 1)
	})

	// Every store joins: none waits for the transaction, and each one's
	// writes roll back with it.
	t.Run("every_store_joins", func(t *testing.T) {
		t.Parallel()
		s := newStores(t)
		u := newUser(at(0))
		mustCreate(t, s.Users, u)
		fam, first := newFamily(u.ID, at(0))
		key := newKey("k-tx", domain.KeyPurposeAccessToken, at(0))
		err := within(t, s, func(ctx context.Context) error {
			if err := s.Tokens.CreateFamily(ctx, fam, first); err != nil {
				t.Errorf("CreateFamily: %v", err)
			}
			if _, _, err := s.Tokens.Lookup(ctx, first.Hash); err != nil {
				t.Errorf("Lookup inside: %v", err)
			}
			next := successorOf(first, at(time.Second))
			if ok, err := s.Tokens.Rotate(ctx, first.Hash, at(time.Second), next); err != nil || !ok {
				t.Errorf("Rotate: %v, %v; want true, nil", ok, err)
			}
			// Refused, and the transaction goes on.
			if ok, err := s.Tokens.Rotate(ctx, first.Hash, at(time.Second), successorOf(first, at(time.Second))); err != nil || ok {
				t.Errorf("Rotate(used) = %v, %v; want false, nil", ok, err)
			}
			if _, _, err := s.Tokens.Lookup(ctx, next.Hash); err != nil {
				t.Errorf("Lookup(successor) inside: %v", err)
			}
			if _, err := s.Tokens.RevokeUser(ctx, u.ID, at(time.Second)); err != nil {
				t.Errorf("RevokeUser: %v", err)
			}
			if _, err := s.Attempts.Reserve(ctx, u.Email, at(0)); err != nil {
				t.Errorf("Reserve: %v", err)
			}
			if err := s.Attempts.Reset(ctx, u.Email); err != nil {
				t.Errorf("Reset: %v", err)
			}
			if err := s.Keys.AddKey(ctx, key); err != nil {
				t.Errorf("AddKey: %v", err)
			}
			if got, err := s.Keys.Keys(ctx, domain.KeyPurposeAccessToken); err != nil || len(got) != 1 {
				t.Errorf("Keys inside = %d, %v; want the key added", len(got), err)
			}
			if err := s.Audit.Record(ctx, newAuditEvent(at(0))); err != nil {
				t.Errorf("Record: %v", err)
			}
			if _, err := s.Audit.List(ctx, ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 10}}); err != nil {
				t.Errorf("List audit: %v", err)
			}
			if _, _, err := s.Links.Requested(ctx, u.ID, at(0)); err != nil {
				t.Errorf("Requested: %v", err)
			}
			if err := s.Links.Void(ctx, u.ID, domain.LinkVerifyEmail, at(0)); err != nil {
				t.Errorf("Void: %v", err)
			}
			if _, err := s.Users.List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 10}}); err != nil {
				t.Errorf("List users: %v", err)
			}
			if err := s.Users.CreateMany(ctx, []domain.User{newUser(at(time.Second))}); err != nil {
				t.Errorf("CreateMany: %v", err)
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("WithinTx = %v, want fn's error", err)
		}
		if _, _, err := s.Tokens.Lookup(t.Context(), first.Hash); !errors.Is(err, domain.ErrRefreshTokenInvalid) {
			t.Errorf("Lookup after the rollback = %v, want ErrRefreshTokenInvalid", err)
		}
		if got, err := s.Keys.Keys(t.Context(), domain.KeyPurposeAccessToken); err != nil || len(got) != 0 {
			t.Errorf("Keys after the rollback = %d, %v; want none", len(got), err)
		}
	})

	txSecondFactors(t, newStores)

	// A panic in fn rolls back and goes on up.
	t.Run("panic", func(t *testing.T) {
		t.Parallel()
		s := newStores(t)
		u, m, tok := fixture()
		func() {
			defer func() {
				if r := recover(); r != errRollback { //nolint:errorlint // the value panicked with, compared as is
					t.Errorf("recovered %v, want fn's panic", r)
				}
			}()
			_ = s.Tx.WithinTx(t.Context(), func(ctx context.Context) error {
				if err := write(ctx, s, u, m, tok); err != nil {
					t.Errorf("write: %v", err)
				}
				panic(errRollback)
			})
		}()
		checkWritten(t, s, false, u, m, tok)
		// The store still serves.
		u2, m2, tok2 := fixture()
		if err := within(t, s, func(ctx context.Context) error { return write(ctx, s, u2, m2, tok2) }); err != nil {
			t.Fatalf("WithinTx after a panic: %v", err)
		}
	})

	// Transactions and lone calls at once: none deadlocks, each
	// transaction commits whole.
	t.Run("concurrent", func(t *testing.T) {
		t.Parallel()
		s := newStores(t)
		const workers = 8
		var wg sync.WaitGroup
		type written struct {
			u   domain.User
			m   domain.OutboxMessage
			tok domain.LinkToken
		}
		results := make([]written, workers)
		for i := range workers {
			wg.Go(func() {
				u, m, tok := fixture()
				results[i] = written{u, m, tok}
				err := within(t, s, func(ctx context.Context) error {
					if err := write(ctx, s, u, m, tok); err != nil {
						return err
					}
					_, err := s.Users.Update(ctx, u.ID, rename)
					return err
				})
				if err != nil {
					t.Errorf("WithinTx: %v", err)
				}
			})
			wg.Go(func() {
				if err := s.Users.Create(t.Context(), newUser(at(time.Hour))); err != nil {
					t.Errorf("Create: %v", err)
				}
				if _, err := s.Outbox.Claim(t.Context(), at(-time.Hour), time.Minute, 1); err != nil {
					t.Errorf("Claim: %v", err)
				}
			})
		}
		wg.Wait()
		n, _, err := s.Outbox.Backlog(t.Context())
		if err != nil || n != workers {
			t.Errorf("Backlog = %d, %v; want %d", n, err, workers)
		}
		for _, r := range results {
			want := r.u
			want.Name = "Renamed"
			checkStored(t, s.Users, want)
		}
	})
}
