package jwtissuer

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/domain"
)

// ---------------------------------------------------------------------------
// Rules: the OpenID provider's keys rotate with the access-token keys

// One rotation adds both keys with one activation: each is published at
// once and signs only from then; the older ones retire on the same rule.
func TestRule_provider_key_rotates_with_the_access_token_key(t *testing.T) {
	t.Parallel()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	opts := providerOpts(EdDSA)
	iss := startIssuer(t, store, clk, opts)
	p := iss.ProviderKeys()
	oldRSA, oldEd := signingKID(t, p, RS256), signer(iss).kid
	clk.Advance(10 * time.Minute)

	added, err := newKeyManager(t, store, clk, opts).Rotate(context.Background(), domain.RotateWhenPublished)
	if err != nil {
		t.Fatal(err)
	}
	activeFrom := clk.Now().Add(opts.ActivateAfter())
	if len(added) != 2 || added[0].Purpose != domain.KeyPurposeAccessToken || added[0].Algorithm != EdDSA ||
		added[1].Purpose != domain.KeyPurposeOIDC || added[1].Algorithm != RS256 {
		t.Fatalf("Rotate = %+v, want an access-token key then the provider's", added)
	}
	for _, k := range added {
		if k.Status != domain.KeyPending || !k.ActiveFrom.Equal(activeFrom) {
			t.Errorf("added %+v, want pending until %v", k, activeFrom)
		}
	}
	newEd, newRSA := added[0].KID, added[1].KID
	if err := iss.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Published at once, beside the old ones; the old keys still sign.
	want := []string{oldEd, newEd, oldRSA, newRSA}
	if got := publicKIDs(p); !slices.Equal(got, want) {
		t.Errorf("PublicKeys after the rotation = %v, want %v", got, want)
	}
	if got := jwksKIDs(iss); !slices.Equal(got, want) {
		t.Errorf("JWKS after the rotation = %v, want %v", got, want)
	}
	clk.Set(activeFrom.Add(-time.Second))
	if signingKID(t, p, RS256) != oldRSA || signingKID(t, p, EdDSA) != oldEd {
		t.Error("a new key signs before its time")
	}

	// From its time each new key signs, without a reload.
	clk.Set(activeFrom)
	if signingKID(t, p, RS256) != newRSA || signingKID(t, p, EdDSA) != newEd {
		t.Error("the new keys do not sign at their time")
	}
	token, _ := signIDToken(t, p, RS256)
	verifyWithJWKS(t, iss, token)

	// The old ones retire RetireAfter later and leave both lists.
	retireAt := activeFrom.Add(opts.RetireAfter())
	clk.Set(retireAt)
	if got := publicKIDs(p); !slices.Equal(got, want) {
		t.Errorf("PublicKeys at the retirement = %v, want %v", got, want)
	}
	clk.Set(retireAt.Add(time.Second))
	want = []string{newEd, newRSA}
	if got := publicKIDs(p); !slices.Equal(got, want) {
		t.Errorf("PublicKeys after the retirement = %v, want %v", got, want)
	}
	if got := jwksKIDs(iss); !slices.Equal(got, want) {
		t.Errorf("JWKS after the retirement = %v, want %v", got, want)
	}
	list, err := newKeyManager(t, store, clk, opts).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range list {
		got = append(got, string(k.Purpose)+" "+k.KID+" "+string(k.Status))
	}
	if wantList := []string{"access-token " + oldEd + " retired", "access-token " + newEd + " active",
		"oidc-signing " + oldRSA + " retired", "oidc-signing " + newRSA + " active"}; !slices.Equal(got, wantList) {
		t.Errorf("List = %v, want %v", got, wantList)
	}

	// RotateNow: both sign as soon as the node has reloaded.
	now, err := newKeyManager(t, store, clk, opts).Rotate(context.Background(), domain.RotateNow)
	if err != nil {
		t.Fatal(err)
	}
	if err := iss.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if signingKID(t, p, EdDSA) != now[0].KID || signingKID(t, p, RS256) != now[1].KID {
		t.Errorf("after RotateNow the signers are %s and %s, want %+v", signingKID(t, p, EdDSA), signingKID(t, p, RS256), now)
	}
}

// With the access-token key configured, a rotation adds the provider's
// key alone; with the provider off too, there is nothing to rotate.
func TestRule_configured_access_key_rotates_the_provider_key_alone(t *testing.T) {
	t.Parallel()
	store, clk := newFakeKeyStore(), clock.NewManual(t0)
	opts := providerOpts(HS256)
	opts.HMACSecret = []byte("0123456789abcdef0123456789abcdef-configured")
	iss := startIssuer(t, store, clk, opts)
	first := signingKID(t, iss.ProviderKeys(), RS256)
	next := rotateOne(t, newKeyManager(t, store, clk, opts), domain.RotateWhenPublished)
	if next.Purpose != domain.KeyPurposeOIDC || next.Algorithm != RS256 || next.Status != domain.KeyPending {
		t.Fatalf("Rotate = %+v, want a pending RS256 key of the provider", next)
	}
	if err := iss.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := publicKIDs(iss.ProviderKeys()); !slices.Equal(got, []string{first, next.KID}) {
		t.Errorf("PublicKeys = %v, want the two RSA keys (never the HMAC key)", got)
	}
	list, err := newKeyManager(t, store, clk, opts).List(context.Background())
	if err != nil || len(list) != 3 || !list[0].Configured || list[1].KID != first || list[2].KID != next.KID {
		t.Errorf("List = %+v, %v; want the configured key then the provider's two", list, err)
	}
	opts.OIDCProvider = false
	if _, err := newKeyManager(t, store, clk, opts).Rotate(context.Background(), domain.RotateNow); !errors.Is(err, domain.ErrKeyConfigured) {
		t.Errorf("Rotate with a configured key and the provider off = %v, want domain.ErrKeyConfigured", err)
	}
}

// Two nodes over one memory store (sealed as in production) with their
// reload loops running: a rotation made by the CLI's KeyManager reaches
// both nodes' provider keys within a reload.
func TestRule_provider_keys_reload_across_issuers_sharing_a_memory_store(t *testing.T) {
	t.Parallel()
	box, err := secretbox.New(secretbox.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	store, clk := memory.NewKeyStore(box), clock.NewManual(t0)
	opts := providerOpts(EdDSA)
	opts.reloadInterval = 5 * time.Millisecond
	nodes := []*Issuer{startIssuer(t, store, clk, opts), startIssuer(t, store, clk, opts)}
	first := signingKID(t, nodes[0].ProviderKeys(), RS256)
	if got := signingKID(t, nodes[1].ProviderKeys(), RS256); got != first {
		t.Fatalf("the nodes sign with %s and %s", first, got)
	}
	for _, n := range nodes {
		startRun(t, n)
	}

	clk.Advance(time.Minute)
	added, err := newKeyManager(t, store, clk, opts).Rotate(context.Background(), domain.RotateNow)
	if err != nil {
		t.Fatal(err)
	}
	rsaKID := added[1].KID
	for _, node := range nodes {
		p := node.ProviderKeys()
		eventually(t, "the rotated key reaches a node", func() bool {
			kid, _, err := p.SigningKey(RS256)
			return err == nil && kid == rsaKID
		})
	}
	for n, node := range nodes {
		p := node.ProviderKeys()
		if got := publicKIDs(p); !slices.Contains(got, first) || !slices.Contains(got, rsaKID) {
			t.Errorf("node %d publishes %v, want the old and the new RSA key", n, got)
		}
		// A token one node signs verifies with the other's JWK set.
		token, _ := signIDToken(t, p, RS256)
		verifyWithJWKS(t, nodes[1-n], token)
	}
}
