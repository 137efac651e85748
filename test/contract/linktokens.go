package contract

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// newLinkToken returns a token of purpose for u, made at created and
// valid for ttl.
func newLinkToken(u domain.User, purpose domain.LinkPurpose, created time.Time, ttl time.Duration) domain.LinkToken {
	_, hash := domain.NewLinkToken()
	return domain.LinkToken{Hash: hash, Purpose: purpose, UserID: u.ID, Email: u.Email,
		CreatedAt: created, ExpiresAt: created.Add(ttl)}
}

func checkLinkToken(t *testing.T, got, want domain.LinkToken) {
	t.Helper()
	if got.Hash != want.Hash || got.Purpose != want.Purpose || got.UserID != want.UserID || got.Email != want.Email ||
		!sameTime(got.CreatedAt, want.CreatedAt) || !sameTime(got.ExpiresAt, want.ExpiresAt) ||
		got.Requested != want.Requested || !sameTimePtr(got.UsedAt, want.UsedAt) {
		t.Errorf("link token mismatch:\n got %+v (used %s)\nwant %+v (used %s)", got, fmtTimePtr(got.UsedAt), want, fmtTimePtr(want.UsedAt))
	}
}

// LinkTokenStore runs the contract of ports.LinkTokenStore. newStores
// returns a user repository and a link-token store sharing one empty
// storage, since tokens belong to users.
func LinkTokenStore(t *testing.T, newStores func(t *testing.T) (ports.UserRepository, ports.LinkTokenStore)) {
	setup := func(t *testing.T) (ports.UserRepository, ports.LinkTokenStore, domain.User) {
		t.Helper()
		users, links := newStores(t)
		u := newUser(at(0))
		mustCreate(t, users, u)
		return users, links, u
	}
	issue := func(t *testing.T, links ports.LinkTokenStore, tok domain.LinkToken) {
		t.Helper()
		if err := links.Issue(t.Context(), tok); err != nil {
			t.Fatalf("Issue: %v", err)
		}
	}
	invalid := func(t *testing.T, links ports.LinkTokenStore, hash string, purpose domain.LinkPurpose, now time.Time, why string) {
		t.Helper()
		if got, err := links.Use(t.Context(), hash, purpose, now); !errors.Is(err, domain.ErrInvalidLinkToken) {
			t.Errorf("Use(%s) = %+v, %v; want ErrInvalidLinkToken", why, got, err)
		}
	}

	t.Run("issue_and_use_once", func(t *testing.T) {
		t.Parallel()
		_, links, u := setup(t)
		tok := newLinkToken(u, domain.LinkResetPassword, at(time.Minute), 30*time.Minute)
		tok.Requested = true
		issue(t, links, tok)
		now := at(5*time.Minute + 7*time.Microsecond)
		got, err := links.Use(t.Context(), tok.Hash, domain.LinkResetPassword, now)
		if err != nil {
			t.Fatalf("Use: %v", err)
		}
		want := tok
		want.UsedAt = &now
		checkLinkToken(t, got, want)
		invalid(t, links, tok.Hash, domain.LinkResetPassword, now.Add(time.Second), "a used token")
	})

	t.Run("wrong_purpose_unknown_expired", func(t *testing.T) {
		t.Parallel()
		_, links, u := setup(t)
		tok := newLinkToken(u, domain.LinkVerifyEmail, at(0), time.Hour)
		issue(t, links, tok)
		invalid(t, links, tok.Hash, domain.LinkResetPassword, at(time.Minute), "another purpose")
		_, unknown := domain.NewLinkToken()
		invalid(t, links, unknown, domain.LinkVerifyEmail, at(time.Minute), "an unknown hash")
		invalid(t, links, tok.Hash, domain.LinkVerifyEmail, tok.ExpiresAt, "at its expiry")
		invalid(t, links, tok.Hash, domain.LinkVerifyEmail, tok.ExpiresAt.Add(time.Hour), "after its expiry")
		// None of these used it up.
		if _, err := links.Use(t.Context(), tok.Hash, domain.LinkVerifyEmail, tok.ExpiresAt.Add(-time.Microsecond)); err != nil {
			t.Errorf("Use(a microsecond before expiry): %v", err)
		}
	})

	t.Run("unknown_user", func(t *testing.T) {
		t.Parallel()
		_, links := newStores(t)
		tok := newLinkToken(newUser(at(0)), domain.LinkVerifyEmail, at(0), time.Hour)
		if err := links.Issue(t.Context(), tok); !errors.Is(err, domain.ErrUserNotFound) {
			t.Errorf("Issue(for an unknown user) = %v, want ErrUserNotFound", err)
		}
	})

	t.Run("void", func(t *testing.T) {
		t.Parallel()
		users, links, u := setup(t)
		other := newUser(at(time.Second))
		mustCreate(t, users, other)
		r1 := newLinkToken(u, domain.LinkResetPassword, at(0), time.Hour)
		r2 := newLinkToken(u, domain.LinkResetPassword, at(time.Minute), time.Hour)
		used := newLinkToken(u, domain.LinkResetPassword, at(2*time.Minute), time.Hour)
		verify := newLinkToken(u, domain.LinkVerifyEmail, at(0), time.Hour)
		theirs := newLinkToken(other, domain.LinkResetPassword, at(0), time.Hour)
		for _, tok := range []domain.LinkToken{r1, r2, used, verify, theirs} {
			issue(t, links, tok)
		}
		usedAt := at(3 * time.Minute)
		if _, err := links.Use(t.Context(), used.Hash, domain.LinkResetPassword, usedAt); err != nil {
			t.Fatalf("Use: %v", err)
		}
		if err := links.Void(t.Context(), u.ID, domain.LinkResetPassword, at(4*time.Minute)); err != nil {
			t.Fatalf("Void: %v", err)
		}
		invalid(t, links, r1.Hash, domain.LinkResetPassword, at(5*time.Minute), "a voided token")
		invalid(t, links, r2.Hash, domain.LinkResetPassword, at(5*time.Minute), "a voided token")
		for _, tok := range []domain.LinkToken{verify, theirs} {
			if _, err := links.Use(t.Context(), tok.Hash, tok.Purpose, at(5*time.Minute)); err != nil {
				t.Errorf("Use(%s token of %s) after voiding another purpose or user: %v", tok.Purpose, tok.UserID, err)
			}
		}
		if err := links.Void(t.Context(), other.ID, domain.LinkVerifyEmail, at(5*time.Minute)); err != nil {
			t.Errorf("Void(nothing to void): %v", err)
		}
	})

	t.Run("requested", func(t *testing.T) {
		t.Parallel()
		users, links, u := setup(t)
		other := newUser(at(time.Second))
		mustCreate(t, users, other)
		if n, last, err := links.Requested(t.Context(), u.ID, at(0)); err != nil || n != 0 || !last.IsZero() {
			t.Errorf("Requested(none) = %d, %v, %v; want 0 and the zero time", n, last, err)
		}
		var toks []domain.LinkToken
		for i, d := range []time.Duration{0, 10 * time.Minute, 30 * time.Minute, 50 * time.Minute} {
			tok := newLinkToken(u, domain.LinkResetPassword, at(d+time.Duration(i)*time.Microsecond), time.Hour)
			if i%2 == 1 {
				tok.Purpose = domain.LinkVerifyEmail
			}
			tok.Requested = true
			toks = append(toks, tok)
		}
		// Not requested (sent because of a change), or someone else's.
		change := newLinkToken(u, domain.LinkVerifyEmail, at(55*time.Minute), time.Hour)
		theirs := newLinkToken(other, domain.LinkResetPassword, at(56*time.Minute), time.Hour)
		theirs.Requested = true
		for _, tok := range append(toks, change, theirs) {
			issue(t, links, tok)
		}
		// Used or voided tokens were sent all the same.
		if _, err := links.Use(t.Context(), toks[0].Hash, domain.LinkResetPassword, at(time.Minute)); err != nil {
			t.Fatalf("Use: %v", err)
		}
		if err := links.Void(t.Context(), u.ID, domain.LinkVerifyEmail, at(51*time.Minute)); err != nil {
			t.Fatalf("Void: %v", err)
		}
		for _, c := range []struct {
			since time.Time
			n     int
			last  time.Time
		}{
			{at(-time.Hour), 4, toks[3].CreatedAt},
			{toks[0].CreatedAt, 4, toks[3].CreatedAt}, // since is inclusive
			{toks[0].CreatedAt.Add(time.Microsecond), 3, toks[3].CreatedAt},
			{at(20 * time.Minute), 2, toks[3].CreatedAt},
			{toks[3].CreatedAt.Add(time.Microsecond), 0, time.Time{}},
		} {
			n, last, err := links.Requested(t.Context(), u.ID, c.since)
			if err != nil || n != c.n || !last.Equal(c.last) {
				t.Errorf("Requested(since %s) = %d, %s, %v; want %d, %s", c.since.Format(time.RFC3339Nano), n,
					last.Format(time.RFC3339Nano), err, c.n, c.last.Format(time.RFC3339Nano))
			}
		}
	})

	t.Run("deleted_with_the_user", func(t *testing.T) {
		t.Parallel()
		users, links, u := setup(t)
		tok := newLinkToken(u, domain.LinkVerifyEmail, at(0), time.Hour)
		tok.Requested = true
		issue(t, links, tok)
		if err := users.Delete(t.Context(), u.ID); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		invalid(t, links, tok.Hash, domain.LinkVerifyEmail, at(time.Minute), "the token of a deleted user")
		if n, _, err := links.Requested(t.Context(), u.ID, at(-time.Hour)); err != nil || n != 0 {
			t.Errorf("Requested(deleted user) = %d, %v; want 0", n, err)
		}
	})

	t.Run("concurrent_use", func(t *testing.T) {
		t.Parallel()
		_, links, u := setup(t)
		tok := newLinkToken(u, domain.LinkResetPassword, at(0), time.Hour)
		issue(t, links, tok)
		const workers = 16
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
		)
		for i := range workers {
			wg.Go(func() {
				_, err := links.Use(t.Context(), tok.Hash, domain.LinkResetPassword, at(time.Duration(i+1)*time.Second))
				switch {
				case err == nil:
					mu.Lock()
					wins++
					mu.Unlock()
				case !errors.Is(err, domain.ErrInvalidLinkToken):
					t.Errorf("Use: %v", err)
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Errorf("%d of %d concurrent uses of one token succeeded, want 1", wins, workers)
		}
	})

	signInToken := func(u domain.User, created time.Time) (domain.LinkToken, string) {
		tok := newLinkToken(u, domain.LinkEmailSignIn, created, domain.DefaultEmailCodeTTL)
		code, codeHash := domain.NewEmailCode(u.Email)
		tok.CodeHash, tok.Requested = codeHash, true
		return tok, code
	}
	wrongCode := func(code string) string {
		if code == "000000" {
			return "000001"
		}
		return "000000"
	}
	useCode := func(t *testing.T, links ports.LinkTokenStore, u domain.User, code string, now time.Time) (domain.LinkToken, error) {
		t.Helper()
		return links.UseCode(t.Context(), u.Email, domain.HashEmailCode(u.Email, code), now)
	}

	t.Run("email_code_use_once", func(t *testing.T) {
		t.Parallel()
		users, links, u := setup(t)
		other := newUser(at(time.Second))
		mustCreate(t, users, other)
		tok, code := signInToken(u, at(0))
		issue(t, links, tok)
		// Another account's code is not this one's, even with the same digits.
		if _, err := links.UseCode(t.Context(), other.Email, tok.CodeHash, at(time.Minute)); !errors.Is(err, domain.ErrInvalidLinkToken) {
			t.Errorf("UseCode(another user) = %v, want ErrInvalidLinkToken", err)
		}
		now := at(2*time.Minute + 3*time.Microsecond)
		got, err := useCode(t, links, u, code, now)
		if err != nil {
			t.Fatalf("UseCode: %v", err)
		}
		want := tok
		want.UsedAt = &now
		checkLinkToken(t, got, want)
		if got.CodeHash != tok.CodeHash {
			t.Errorf("CodeHash = %q, want %q", got.CodeHash, tok.CodeHash)
		}
		if _, err := useCode(t, links, u, code, now.Add(time.Second)); !errors.Is(err, domain.ErrInvalidLinkToken) {
			t.Errorf("UseCode(a used code) = %v, want ErrInvalidLinkToken", err)
		}
		// Using the code used the link too: they are one token.
		invalid(t, links, tok.Hash, domain.LinkEmailSignIn, now.Add(time.Second), "the link of a used code")
	})

	t.Run("email_code_expired_and_link_uses_code", func(t *testing.T) {
		t.Parallel()
		_, links, u := setup(t)
		tok, code := signInToken(u, at(0))
		issue(t, links, tok)
		if _, err := useCode(t, links, u, code, tok.ExpiresAt); !errors.Is(err, domain.ErrInvalidLinkToken) {
			t.Errorf("UseCode(at its expiry) = %v, want ErrInvalidLinkToken", err)
		}
		tok2, code2 := signInToken(u, at(time.Hour))
		issue(t, links, tok2)
		if _, err := links.Use(t.Context(), tok2.Hash, domain.LinkEmailSignIn, at(time.Hour+time.Minute)); err != nil {
			t.Fatalf("Use(the link): %v", err)
		}
		if _, err := useCode(t, links, u, code2, at(time.Hour+2*time.Minute)); !errors.Is(err, domain.ErrInvalidLinkToken) {
			t.Errorf("UseCode(the code of a used link) = %v, want ErrInvalidLinkToken", err)
		}
	})

	t.Run("email_code_fifth_wrong_code_voids", func(t *testing.T) {
		t.Parallel()
		_, links, u := setup(t)
		tok, code := signInToken(u, at(0))
		issue(t, links, tok)
		for i := range domain.MaxEmailCodeFailures - 1 {
			if _, err := useCode(t, links, u, wrongCode(code), at(time.Duration(i+1)*time.Second)); !errors.Is(err, domain.ErrInvalidLinkToken) {
				t.Fatalf("UseCode(wrong code %d) = %v, want ErrInvalidLinkToken", i+1, err)
			}
		}
		got, err := links.Peek(t.Context(), tok.Hash, domain.LinkEmailSignIn, at(time.Minute))
		if err != nil {
			t.Fatalf("Peek after four wrong codes: %v", err)
		}
		if got.CodeFailures != domain.MaxEmailCodeFailures-1 {
			t.Errorf("CodeFailures = %d after four wrong codes, want 4", got.CodeFailures)
		}
		if _, err := useCode(t, links, u, wrongCode(code), at(time.Minute)); !errors.Is(err, domain.ErrInvalidLinkToken) {
			t.Fatalf("UseCode(fifth wrong code) = %v, want ErrInvalidLinkToken", err)
		}
		if _, err := useCode(t, links, u, code, at(2*time.Minute)); !errors.Is(err, domain.ErrInvalidLinkToken) {
			t.Errorf("UseCode(the right code after five wrong ones) = %v, want ErrInvalidLinkToken", err)
		}
		invalid(t, links, tok.Hash, domain.LinkEmailSignIn, at(2*time.Minute), "the link of a code voided by wrong codes")
	})

	t.Run("email_code_void_by_new_request", func(t *testing.T) {
		t.Parallel()
		_, links, u := setup(t)
		old, oldCode := signInToken(u, at(0))
		issue(t, links, old)
		if err := links.VoidTo(t.Context(), u.Email, domain.LinkEmailSignIn, at(time.Minute)); err != nil {
			t.Fatalf("VoidTo: %v", err)
		}
		tok, code := signInToken(u, at(time.Minute))
		issue(t, links, tok)
		if oldCode != code {
			if _, err := useCode(t, links, u, oldCode, at(2*time.Minute)); !errors.Is(err, domain.ErrInvalidLinkToken) {
				t.Errorf("UseCode(a voided code) = %v, want ErrInvalidLinkToken", err)
			}
		}
		if _, err := useCode(t, links, u, code, at(3*time.Minute)); err != nil {
			t.Errorf("UseCode(the new code, after a wrong one): %v", err)
		}
		if n, _, err := links.Requested(t.Context(), u.ID, at(-time.Hour)); err != nil || n != 2 {
			t.Errorf("Requested = %d, %v; want 2: sign-in messages count in the mail budget", n, err)
		}
	})

	t.Run("email_code_concurrent", func(t *testing.T) {
		t.Parallel()
		_, links, u := setup(t)
		tok, code := signInToken(u, at(0))
		issue(t, links, tok)
		const workers = 8
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
		)
		// Three wrong codes and eight right ones at once: one right one
		// wins, and the wrong ones are each counted.
		for i := range workers + 3 {
			wg.Go(func() {
				try := code
				if i >= workers {
					try = wrongCode(code)
				}
				_, err := useCode(t, links, u, try, at(time.Second))
				switch {
				case err == nil:
					mu.Lock()
					wins++
					mu.Unlock()
				case !errors.Is(err, domain.ErrInvalidLinkToken):
					t.Errorf("UseCode: %v", err)
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Errorf("%d of %d concurrent uses of one code succeeded, want 1", wins, workers)
		}
	})

	t.Run("sign_up_token_without_a_user", func(t *testing.T) {
		t.Parallel()
		_, links, u := setup(t)
		stranger := domain.User{Email: "stranger@example.com"}
		tok, code := signInToken(stranger, at(0))
		issue(t, links, tok)
		// Another address's budget and tokens are apart: the account's
		// own count is none of these.
		if n, last, err := links.RequestedTo(t.Context(), stranger.Email, at(-time.Hour)); err != nil || n != 1 || !sameTime(last, tok.CreatedAt) {
			t.Errorf("RequestedTo = %d, %s, %v; want 1 at %s", n, last, err, tok.CreatedAt)
		}
		if n, _, err := links.RequestedTo(t.Context(), u.Email, at(-time.Hour)); err != nil || n != 0 {
			t.Errorf("RequestedTo(an account's email) = %d, %v; want 0 (its tokens have a user)", n, err)
		}
		got, err := useCode(t, links, stranger, code, at(time.Minute))
		if err != nil {
			t.Fatalf("UseCode(a sign-up's code): %v", err)
		}
		if got.UserID != "" || got.Email != stranger.Email {
			t.Errorf("UseCode = %+v, want no user and the stranger's email", got)
		}
		// A second one, voided by the next request to the address.
		tok2, _ := signInToken(stranger, at(2*time.Minute))
		issue(t, links, tok2)
		if err := links.VoidTo(t.Context(), stranger.Email, domain.LinkEmailSignIn, at(3*time.Minute)); err != nil {
			t.Fatalf("VoidTo: %v", err)
		}
		invalid(t, links, tok2.Hash, domain.LinkEmailSignIn, at(4*time.Minute), "a voided sign-up token")
	})
}
