package jwtissuer

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// refreshTokenForm is the form of the contract: a lowercase version 4 UUID
// with the RFC 4122 variant.
var refreshTokenForm = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// startCodec returns a started RefreshCodec over store.
func startCodec(t testing.TB, store ports.KeyStore) *RefreshCodec {
	t.Helper()
	c := NewRefreshCodec(store, clock.NewManual(t0))
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

// storeWithRefreshKey returns a store holding key as the refresh HMAC key.
func storeWithRefreshKey(t testing.TB, key []byte) *fakeKeyStore {
	t.Helper()
	store := newFakeKeyStore()
	if err := store.AddKey(context.Background(), domain.SigningKey{
		ID: refreshKeyID, Purpose: domain.KeyPurposeRefreshHMAC, Algorithm: HS256, Secret: key, CreatedAt: t0,
	}); err != nil {
		t.Fatal(err)
	}
	return store
}

// Tokens already issued must keep rotating to the same successors, and
// their stored hashes must keep matching, across this move of the code
// from the application to the adapter. The expected values were computed
// by the application's successorOf and hashRefreshToken before the move
// (and the first one checked by hand with Python's hmac and hashlib).
func TestRefreshCodec_golden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key   string
		chain []string // a token, then each successor of the one before
		hash  []string // the hash of each token of chain but the last
	}{
		{
			key: "0123456789abcdef0123456789abcdef",
			chain: []string{
				"3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70",
				"a87ad7b2-525c-4bb4-ae7f-58a7de4ff457",
				"e61378be-b52c-4e20-a863-53a7d90e2ae0",
				"9ea057cb-763f-4b09-a6fe-957b29775826",
			},
			hash: []string{
				"6a40ad6c7697042f225a9f082dd241e98fc893ff2850e6c3d062e89a37dd6a55",
				"1ede6ac14061e59098bc3a83c5f575e22d2236850e735d9dd225b07cd4b7b315",
				"ca1b289efc1b824effe54a6268a7f44660994bdb423976429c0259a4893b6a28",
			},
		},
		{
			// Keys longer than 32 bytes are accepted and used whole.
			key: "a longer refresh key of forty bytes!!!!!",
			chain: []string{
				"3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70",
				"ac019416-e751-4ff3-ac93-832de8a1bb37",
				"1a3e0618-3ff0-4a77-85d8-a24462a45030",
				"af6d0509-bab4-4ec4-bcc4-93e8e89bf048",
			},
			hash: []string{
				"6a40ad6c7697042f225a9f082dd241e98fc893ff2850e6c3d062e89a37dd6a55",
				"a7bfd43b3035ce54970d48675c6e3725475c2a27c233c381ea435478e6353d28",
				"8325a54ec16154450960fc97707d9b258d634b4679c070941db8593fc87ef078",
			},
		},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d_byte_key", len(tt.key)), func(t *testing.T) {
			t.Parallel()
			c := startCodec(t, storeWithRefreshKey(t, []byte(tt.key)))
			for n, token := range tt.chain[:len(tt.chain)-1] {
				if got := c.Successor(token); got != tt.chain[n+1] {
					t.Errorf("Successor(%s) = %s, want %s", token, got, tt.chain[n+1])
				}
				if got := c.Hash(token); got != tt.hash[n] {
					t.Errorf("Hash(%s) = %s, want %s", token, got, tt.hash[n])
				}
			}
		})
	}
	if got, want := formatUUIDv4([16]byte{}), "00000000-0000-4000-8000-000000000000"; got != want {
		t.Errorf("formatUUIDv4(zeros) = %s, want %s", got, want)
	}
	ones := [16]byte{}
	for i := range ones {
		ones[i] = 0xff
	}
	if got, want := formatUUIDv4(ones), "ffffffff-ffff-4fff-bfff-ffffffffffff"; got != want {
		t.Errorf("formatUUIDv4(ones) = %s, want %s", got, want)
	}
}

func TestRefreshCodec_new_tokens_are_random_and_well_formed(t *testing.T) {
	t.Parallel()
	c := NewRefreshCodec(newFakeKeyStore(), clock.NewManual(t0)) // New needs no key
	seen := map[string]bool{}
	for range 1000 {
		tok := c.New()
		if !refreshTokenForm.MatchString(tok) || !c.WellFormed(tok) {
			t.Fatalf("New() = %q, not a lowercase version 4 UUID", tok)
		}
		if seen[tok] {
			t.Fatalf("New() repeated %s", tok)
		}
		seen[tok] = true
	}
}

// A successor is well formed, differs from its token, is the same at every
// call and on every node sharing the store, and depends on the key.
func TestRefreshCodec_successor(t *testing.T) {
	t.Parallel()
	store := newFakeKeyStore()
	a, b := startCodec(t, store), startCodec(t, store)
	other := startCodec(t, newFakeKeyStore())
	tok := a.New()
	next := a.Successor(tok)
	if !a.WellFormed(next) || next == tok {
		t.Fatalf("Successor(%s) = %s", tok, next)
	}
	if a.Successor(tok) != next || b.Successor(tok) != next {
		t.Error("two calls or two nodes derived different successors")
	}
	if other.Successor(tok) == next {
		t.Error("two keys derived the same successor")
	}
	if a.Hash(tok) == a.Hash(next) || len(a.Hash(tok)) != 64 {
		t.Errorf("Hash = %s", a.Hash(tok))
	}
}

func TestRefreshCodec_well_formed(t *testing.T) {
	t.Parallel()
	c := NewRefreshCodec(newFakeKeyStore(), clock.NewManual(t0))
	for _, tc := range []struct {
		token string
		want  bool
	}{
		{"3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70", true},
		{"3f1c9a8e-5b2d-4c7e-8a10-2b3c4d5e6f70", true},
		{"3f1c9a8e-5b2d-4c7e-aa10-2b3c4d5e6f70", true},
		{"3f1c9a8e-5b2d-4c7e-ba10-2b3c4d5e6f70", true},
		{"", false},
		{"nope", false},
		{"3F1C9A8E-5B2D-4C7E-9A10-2B3C4D5E6F70", false},  // upper case
		{"3f1c9a8e-5b2d-1c7e-9a10-2b3c4d5e6f70", false},  // version 1
		{"3f1c9a8e-5b2d-4c7e-ca10-2b3c4d5e6f70", false},  // another variant
		{"3f1c9a8e-5b2d-4c7e-7a10-2b3c4d5e6f70", false},  // another variant
		{"3f1c9a8e5b2d4c7e9a102b3c4d5e6f70", false},      // no dashes
		{"3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f7", false},   // short
		{"3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f701", false}, // long
		{"3f1c9a8e-5b2d-4c7e-9a10_2b3c4d5e6f70", false},  // a dash replaced
		{"3f1c9a8e-5b2d-4c7e-9a1-02b3c4d5e6f70", false},  // a dash moved
		{"3f1c9a8g-5b2d-4c7e-9a10-2b3c4d5e6f70", false},  // not hex
		{"{3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f7}", false}, // braces
	} {
		if got := c.WellFormed(tc.token); got != tc.want {
			t.Errorf("WellFormed(%q) = %v, want %v", tc.token, got, tc.want)
		}
	}
}

// Start creates the key on an empty store under the well-known id; a
// codec starting later reads the same key and adds none.
func TestRefreshCodec_start_creates_the_key_once(t *testing.T) {
	t.Parallel()
	store := newFakeKeyStore()
	startCodec(t, store)
	keys, err := store.Keys(context.Background(), domain.KeyPurposeRefreshHMAC)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 {
		t.Fatalf("%d refresh keys stored, want 1", len(keys))
	}
	k := keys[0]
	if k.ID != refreshKeyID || k.Algorithm != HS256 || len(k.Secret) != 32 || !k.CreatedAt.Equal(t0) {
		t.Errorf("stored key = %s %s %d bytes %v", k.ID, k.Algorithm, len(k.Secret), k.CreatedAt)
	}
	if n, _ := store.Keys(context.Background(), domain.KeyPurposeAccessToken); len(n) != 0 {
		t.Error("Start stored an access-token key")
	}
	startCodec(t, store)
	if store.count() != 1 {
		t.Errorf("a second Start added a key: %d stored", store.count())
	}
}

// Nodes starting together on an empty store must end up with one refresh
// key, or they would derive different successors for the same token.
func TestRefreshCodec_concurrent_starts_share_one_key(t *testing.T) {
	t.Parallel()
	store := newFakeKeyStore()
	const nodes = 8
	codecs := make([]*RefreshCodec, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			c := NewRefreshCodec(store, clock.NewManual(t0))
			if err := c.Start(context.Background()); err != nil {
				t.Error(err)
			}
			codecs[i] = c
		})
	}
	wg.Wait()
	if store.count() != 1 {
		t.Fatalf("%d refresh keys stored, want 1", store.count())
	}
	tok := codecs[0].New()
	for _, c := range codecs[1:] {
		if c.Successor(tok) != codecs[0].Successor(tok) {
			t.Fatal("two nodes derived different successors")
		}
	}
}

// raceLosingStore reports an empty store on its first read and refuses the
// add with domain.ErrKeyExists, as a node that lost the race to create the
// key sees it.
type raceLosingStore struct {
	*fakeKeyStore
	mu    sync.Mutex
	first bool
}

func (s *raceLosingStore) Keys(ctx context.Context, p domain.KeyPurpose) ([]domain.SigningKey, error) {
	s.mu.Lock()
	first := !s.first
	s.first = true
	s.mu.Unlock()
	if first {
		return nil, nil
	}
	return s.fakeKeyStore.Keys(ctx, p)
}

func TestRefreshCodec_start_errors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("lost_race_reads_the_winner's_key", func(t *testing.T) {
		t.Parallel()
		winner := []byte("0123456789abcdef0123456789abcdef")
		store := &raceLosingStore{fakeKeyStore: storeWithRefreshKey(t, winner)}
		c := startCodec(t, store)
		if want := startCodec(t, storeWithRefreshKey(t, winner)).Successor(testRefreshToken); c.Successor(testRefreshToken) != want {
			t.Error("the loser of the race does not use the winner's key")
		}
	})
	t.Run("store_down", func(t *testing.T) {
		t.Parallel()
		store := newFakeKeyStore()
		store.setErr(fmt.Errorf("db down: %w", domain.ErrUnavailable))
		if err := NewRefreshCodec(store, clock.NewManual(t0)).Start(ctx); !errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("Start = %v, want domain.ErrUnavailable", err)
		}
	})
	t.Run("short_key", func(t *testing.T) {
		t.Parallel()
		store := storeWithRefreshKey(t, []byte("only-31-bytes-long-secret-value"))
		if err := NewRefreshCodec(store, clock.NewManual(t0)).Start(ctx); err == nil {
			t.Error("Start accepted a 31-byte key")
		}
	})
	t.Run("key_under_another_id", func(t *testing.T) {
		t.Parallel()
		store := newFakeKeyStore()
		_ = store.AddKey(ctx, domain.SigningKey{ID: "refresh-hmac-2", Purpose: domain.KeyPurposeRefreshHMAC,
			Algorithm: HS256, Secret: make([]byte, 32), CreatedAt: t0})
		if err := NewRefreshCodec(store, clock.NewManual(t0)).Start(ctx); err == nil {
			t.Error("Start used a key under another id")
		}
		if store.count() != 1 {
			t.Error("Start added a key next to a foreign one")
		}
	})
}

const testRefreshToken = "3f1c9a8e-5b2d-4c7e-9a10-2b3c4d5e6f70"

// Before Start, Successor refuses to derive anything rather than derive
// successors anybody could compute; the rest needs no key.
func TestRefreshCodec_successor_before_start_panics(t *testing.T) {
	t.Parallel()
	c := NewRefreshCodec(newFakeKeyStore(), clock.NewManual(t0))
	if !c.WellFormed(c.New()) || len(c.Hash(testRefreshToken)) != 64 {
		t.Error("New, WellFormed or Hash need Start")
	}
	defer func() {
		if recover() == nil {
			t.Error("Successor before Start did not panic")
		}
	}()
	c.Successor(testRefreshToken)
}

// FuzzRefreshCodecWellFormed checks WellFormed against the contract's form
// as a regular expression, and that successors of any string are well
// formed.
//
//	go test -run '^$' -fuzz FuzzRefreshCodecWellFormed -fuzztime 20s ./adapters/jwtissuer
func FuzzRefreshCodecWellFormed(f *testing.F) {
	c := startCodec(f, storeWithRefreshKey(f, []byte("0123456789abcdef0123456789abcdef")))
	for _, s := range []string{testRefreshToken, "", "3F1C9A8E-5B2D-4C7E-9A10-2B3C4D5E6F70", "3f1c9a8e-5b2d-4c7e-ca10-2b3c4d5e6f70"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := c.WellFormed(s), refreshTokenForm.MatchString(s); got != want {
			t.Fatalf("WellFormed(%q) = %v, want %v", s, got, want)
		}
		if next := c.Successor(s); !c.WellFormed(next) {
			t.Fatalf("Successor(%q) = %q, not well formed", s, next)
		}
	})
}
