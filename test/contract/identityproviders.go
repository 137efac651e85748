package contract

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/userd/userd/adapters/secretbox"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// IdentityStorage is one empty storage of an adapter, with what the
// contracts of ports.IdentityProviderStore and ports.UserIdentityStore
// need: the users the identities belong to, both stores, and, to check
// that client secrets are sealed at rest, the stored bytes.
type IdentityStorage struct {
	Users ports.UserRepository
	// Open returns a provider store over this storage that seals and
	// opens client secrets with box. Stores opened with different boxes
	// share the rows.
	Open       func(box ports.SecretBox) ports.IdentityProviderStore
	Identities ports.UserIdentityStore
	// StoredSecret returns the provider's client secret as it is stored.
	StoredSecret func(t *testing.T, slug string) []byte
	// Reencrypt re-seals every client secret under box's current key, as
	// `userd secrets reencrypt` does, and returns how many changed.
	Reencrypt func(ctx context.Context, box ports.SecretBox) (int, error)
}

// newIdentityProvider returns an oidc provider made at created, whose
// slug is unique to it and whose lists and secret hold what a careless
// encoding would break: commas, quotes, a secret beyond ASCII.
func newIdentityProvider(created time.Time) domain.IdentityProvider {
	slug := "idp-" + randomHex(6)
	return domain.IdentityProvider{
		Slug:               slug,
		DisplayName:        `Acme "SSO" — ` + slug,
		Kind:               domain.IdentityProviderOIDC,
		Issuer:             "https://sso.example.com/realms/a,b",
		ClientID:           "userd-" + randomHex(4),
		ClientSecret:       "s3cr3t-" + randomHex(16) + "-é",
		Scopes:             []string{"openid", "email", `we"ird,scope`},
		AllowedDomains:     []string{"example.com", "example.org"},
		AutoCreate:         true,
		TrustEmailVerified: true,
		Enabled:            true,
		CreatedAt:          created,
		UpdatedAt:          created,
	}
}

// newGitHubProvider returns a github provider made at created, with no
// allowed domain.
func newGitHubProvider(created time.Time) domain.IdentityProvider {
	p := newIdentityProvider(created)
	p.Kind, p.Issuer = domain.IdentityProviderGitHub, ""
	p.Scopes, p.AllowedDomains = []string{"read:user", "user:email"}, []string{}
	p.AutoCreate, p.TrustEmailVerified = false, false
	p.AuthURL, p.TokenURL, p.APIURL = domain.GitHubAuthURL, domain.GitHubTokenURL, domain.GitHubAPIURL
	return p
}

// checkIdentityProvider checks that got is want as stored. Lists come
// back empty, never nil, when they are.
func checkIdentityProvider(t *testing.T, got, want domain.IdentityProvider) {
	t.Helper()
	if got.Slug != want.Slug || got.DisplayName != want.DisplayName || got.Kind != want.Kind || got.Issuer != want.Issuer ||
		got.ClientID != want.ClientID || got.ClientSecret != want.ClientSecret ||
		!slices.Equal(got.Scopes, want.Scopes) || !slices.Equal(got.AllowedDomains, want.AllowedDomains) ||
		got.AutoCreate != want.AutoCreate || got.TrustEmailVerified != want.TrustEmailVerified || got.Enabled != want.Enabled ||
		got.AuthURL != want.AuthURL || got.TokenURL != want.TokenURL || got.APIURL != want.APIURL ||
		!sameTime(got.CreatedAt, want.CreatedAt) || !sameTime(got.UpdatedAt, want.UpdatedAt) {
		t.Errorf("identity provider mismatch:\n got %+v\nwant %+v", got, want)
	}
	if got.Scopes == nil || got.AllowedDomains == nil {
		t.Errorf("identity provider %s has a nil list: %+v", got.Slug, got)
	}
}

func mustCreateProvider(t *testing.T, store ports.IdentityProviderStore, p domain.IdentityProvider) {
	t.Helper()
	if err := store.CreateProvider(t.Context(), p); err != nil {
		t.Fatalf("CreateProvider(%s): %v", p.Slug, err)
	}
}

// providerNotFound checks that no provider has the slug.
func providerNotFound(t *testing.T, store ports.IdentityProviderStore, slug string) {
	t.Helper()
	if got, err := store.Provider(t.Context(), slug); !errors.Is(err, domain.ErrIdentityProviderNotFound) {
		t.Errorf("Provider(%s) = %+v, %v; want ErrIdentityProviderNotFound", slug, got, err)
	}
}

// IdentityProviderStore runs the contract of ports.IdentityProviderStore
// over the storages that newStorage makes.
func IdentityProviderStore(t *testing.T, newStorage func(t *testing.T) IdentityStorage) {
	setup := func(t *testing.T) (IdentityStorage, ports.IdentityProviderStore) {
		s := newStorage(t)
		return s, s.Open(newBox(t, secretbox.NewKey()))
	}

	t.Run("round_trip", func(t *testing.T) {
		t.Parallel()
		_, store := setup(t)
		oidc, gh := newIdentityProvider(at(0)), newGitHubProvider(at(time.Second))
		gh.Scopes = []string{}
		mustCreateProvider(t, store, oidc)
		mustCreateProvider(t, store, gh)
		for _, want := range []domain.IdentityProvider{oidc, gh} {
			got, err := store.Provider(t.Context(), want.Slug)
			if err != nil {
				t.Fatalf("Provider(%s): %v", want.Slug, err)
			}
			checkIdentityProvider(t, got, want)
		}
		// Nil lists are stored, and come back, empty.
		p := newIdentityProvider(at(2 * time.Second))
		p.Scopes, p.AllowedDomains = nil, nil
		mustCreateProvider(t, store, p)
		got, err := store.Provider(t.Context(), p.Slug)
		if err != nil {
			t.Fatalf("Provider: %v", err)
		}
		p.Scopes, p.AllowedDomains = []string{}, []string{}
		checkIdentityProvider(t, got, p)
	})

	t.Run("slug_taken_and_not_found", func(t *testing.T) {
		t.Parallel()
		_, store := setup(t)
		p := newIdentityProvider(at(0))
		mustCreateProvider(t, store, p)
		again := newGitHubProvider(at(time.Hour))
		again.Slug = p.Slug
		if err := store.CreateProvider(t.Context(), again); !errors.Is(err, domain.ErrIdentityProviderSlugTaken) {
			t.Errorf("CreateProvider(taken slug) = %v, want ErrIdentityProviderSlugTaken", err)
		}
		got, err := store.Provider(t.Context(), p.Slug)
		if err != nil {
			t.Fatalf("Provider: %v", err)
		}
		checkIdentityProvider(t, got, p)
		providerNotFound(t, store, "nobody")
		if err := store.DeleteProvider(t.Context(), "nobody"); !errors.Is(err, domain.ErrIdentityProviderNotFound) {
			t.Errorf("DeleteProvider(unknown) = %v, want ErrIdentityProviderNotFound", err)
		}
		if _, err := store.UpdateProvider(t.Context(), "nobody", func(*domain.IdentityProvider) error { return nil }); !errors.Is(err, domain.ErrIdentityProviderNotFound) {
			t.Errorf("UpdateProvider(unknown) = %v, want ErrIdentityProviderNotFound", err)
		}
	})

	t.Run("list_by_slug", func(t *testing.T) {
		t.Parallel()
		_, store := setup(t)
		if got, err := store.Providers(t.Context()); err != nil || len(got) != 0 {
			t.Errorf("Providers(empty) = %v, %v; want none", got, err)
		}
		// Created out of order; "-" sorts before the digits and letters
		// bytewise, as in Go, which a collation of words may not keep.
		var want []string
		for i, slug := range []string{"zeta", "a-1", "a", "b0", "a-0"} {
			p := newIdentityProvider(at(time.Duration(i) * time.Second))
			p.Slug = slug
			mustCreateProvider(t, store, p)
			want = append(want, slug)
		}
		slices.Sort(want)
		got, err := store.Providers(t.Context())
		if err != nil {
			t.Fatalf("Providers: %v", err)
		}
		slugs := make([]string, len(got))
		for i, p := range got {
			slugs[i] = p.Slug
		}
		if !slices.Equal(slugs, want) {
			t.Errorf("Providers = %v, want %v", slugs, want)
		}
	})

	t.Run("update", func(t *testing.T) {
		t.Parallel()
		_, store := setup(t)
		p := newIdentityProvider(at(0))
		mustCreateProvider(t, store, p)
		got, err := store.UpdateProvider(t.Context(), p.Slug, func(v *domain.IdentityProvider) error {
			v.Slug, v.Kind, v.CreatedAt = "other", domain.IdentityProviderGitHub, at(time.Hour)
			v.DisplayName, v.ClientSecret, v.Enabled = "Renamed", "new-secret", false
			v.AllowedDomains, v.UpdatedAt = nil, at(time.Minute)
			return nil
		})
		if err != nil {
			t.Fatalf("UpdateProvider: %v", err)
		}
		want := p
		want.DisplayName, want.ClientSecret, want.Enabled = "Renamed", "new-secret", false
		want.AllowedDomains, want.UpdatedAt = []string{}, at(time.Minute)
		checkIdentityProvider(t, got, want)
		stored, err := store.Provider(t.Context(), p.Slug)
		if err != nil {
			t.Fatalf("Provider: %v", err)
		}
		checkIdentityProvider(t, stored, want)
		providerNotFound(t, store, "other")

		// fn's error is returned unchanged, and nothing is written.
		errFn := errors.New("fn failed")
		if _, err := store.UpdateProvider(t.Context(), p.Slug, func(v *domain.IdentityProvider) error {
			v.DisplayName = "lost"
			return errFn
		}); err != errFn { //nolint:errorlint // unchanged: the very error
			t.Errorf("UpdateProvider(fn fails) = %v, want fn's error unchanged", err)
		}
		stored, _ = store.Provider(t.Context(), p.Slug)
		checkIdentityProvider(t, stored, want)
	})

	t.Run("update_concurrent", func(t *testing.T) {
		t.Parallel()
		_, store := setup(t)
		p := newIdentityProvider(at(0))
		p.AllowedDomains = []string{}
		mustCreateProvider(t, store, p)
		const workers = 12
		updateConcurrently(t, workers, "UpdateProvider", func(i int) error {
			_, err := store.UpdateProvider(t.Context(), p.Slug, func(v *domain.IdentityProvider) error {
				v.AllowedDomains = append(v.AllowedDomains, "d"+strconv.Itoa(i)+".example.com")
				return nil
			})
			return err
		})
		got, err := store.Provider(t.Context(), p.Slug)
		if err != nil {
			t.Fatalf("Provider: %v", err)
		}
		for i := range workers {
			if !slices.Contains(got.AllowedDomains, "d"+strconv.Itoa(i)+".example.com") {
				t.Errorf("update %d was lost: %v", i, got.AllowedDomains)
			}
		}
	})

	t.Run("delete_cascades_identities", func(t *testing.T) {
		t.Parallel()
		s, store := setup(t)
		p, keep := newIdentityProvider(at(0)), newIdentityProvider(at(time.Second))
		mustCreateProvider(t, store, p)
		mustCreateProvider(t, store, keep)
		u := newUser(at(0))
		mustCreate(t, s.Users, u)
		gone, kept := newUserIdentity(u.ID, p.Slug, at(0)), newUserIdentity(u.ID, keep.Slug, at(time.Second))
		mustLink(t, s.Identities, gone)
		mustLink(t, s.Identities, kept)
		if err := store.DeleteProvider(t.Context(), p.Slug); err != nil {
			t.Fatalf("DeleteProvider: %v", err)
		}
		providerNotFound(t, store, p.Slug)
		identityNotFound(t, s.Identities, gone.Provider, gone.Subject)
		checkIdentities(t, s.Identities, u.ID, kept)
		if err := store.DeleteProvider(t.Context(), p.Slug); !errors.Is(err, domain.ErrIdentityProviderNotFound) {
			t.Errorf("DeleteProvider(twice) = %v, want ErrIdentityProviderNotFound", err)
		}
		// The slug is free again, with no identity.
		mustCreateProvider(t, store, p)
		identityNotFound(t, s.Identities, gone.Provider, gone.Subject)
	})

	// What is stored is sealed: the secret is not in it, and only a box
	// with the key that sealed it opens it.
	t.Run("sealed_at_rest", func(t *testing.T) {
		t.Parallel()
		s := newStorage(t)
		key := secretbox.NewKey()
		store := s.Open(newBox(t, key))
		p := newIdentityProvider(at(0))
		mustCreateProvider(t, store, p)
		stored := s.StoredSecret(t, p.Slug)
		if bytes.Contains(stored, []byte(p.ClientSecret)) || len(stored) <= len(p.ClientSecret) {
			t.Errorf("stored client secret %x holds the secret %q in clear", stored, p.ClientSecret)
		}
		if _, err := s.Open(newBox(t, secretbox.NewKey())).Provider(t.Context(), p.Slug); !errors.Is(err, domain.ErrSecretKeyUnknown) {
			t.Errorf("Provider with another secret key = %v, want domain.ErrSecretKeyUnknown", err)
		}
		if err := s.Open(newBox(t)).CreateProvider(t.Context(), newIdentityProvider(at(0))); !errors.Is(err, domain.ErrSecretKeyMissing) {
			t.Errorf("CreateProvider without a secret key = %v, want domain.ErrSecretKeyMissing", err)
		}
		// Updated, the secret is sealed again.
		if _, err := store.UpdateProvider(t.Context(), p.Slug, func(v *domain.IdentityProvider) error {
			v.ClientSecret = "rotated-" + randomHex(8)
			p.ClientSecret = v.ClientSecret
			return nil
		}); err != nil {
			t.Fatalf("UpdateProvider: %v", err)
		}
		if stored := s.StoredSecret(t, p.Slug); bytes.Contains(stored, []byte(p.ClientSecret)) {
			t.Errorf("stored client secret %x holds the rotated secret %q in clear", stored, p.ClientSecret)
		}
		got, err := s.Open(newBox(t, key)).Provider(t.Context(), p.Slug)
		if err != nil {
			t.Fatalf("Provider: %v", err)
		}
		checkIdentityProvider(t, got, p)
	})

	// Re-encryption moves every secret to the current key, and needs the
	// key each was sealed under.
	t.Run("reencrypt", func(t *testing.T) {
		t.Parallel()
		s := newStorage(t)
		ctx, oldKey, newKey := t.Context(), secretbox.NewKey(), secretbox.NewKey()
		p, q := newIdentityProvider(at(0)), newGitHubProvider(at(0))
		mustCreateProvider(t, s.Open(newBox(t, oldKey)), p)
		mustCreateProvider(t, s.Open(newBox(t, oldKey)), q)
		if n, err := s.Reencrypt(ctx, newBox(t, newKey)); !errors.Is(err, domain.ErrSecretKeyUnknown) || n != 0 {
			t.Errorf("Reencrypt without the old key = %d, %v; want domain.ErrSecretKeyUnknown", n, err)
		}
		if n, err := s.Reencrypt(ctx, newBox(t, newKey, oldKey)); err != nil || n != 2 {
			t.Fatalf("Reencrypt = %d, %v; want the 2 secrets sealed under the old key", n, err)
		}
		if n, err := s.Reencrypt(ctx, newBox(t, newKey, oldKey)); err != nil || n != 0 {
			t.Errorf("Reencrypt again = %d, %v; want 0", n, err)
		}
		store := s.Open(newBox(t, newKey))
		for _, want := range []domain.IdentityProvider{p, q} {
			got, err := store.Provider(ctx, want.Slug)
			if err != nil {
				t.Fatalf("Provider(%s) with the new key only: %v", want.Slug, err)
			}
			checkIdentityProvider(t, got, want)
		}
	})
}
