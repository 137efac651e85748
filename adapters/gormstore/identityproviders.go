package gormstore

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// identityProviderRow mirrors the identity_providers table. The lists are
// JSON arrays of strings (migration 18 says why); client_secret is sealed.
type identityProviderRow struct {
	Slug               string `gorm:"column:slug;primaryKey"`
	DisplayName        string `gorm:"column:display_name"`
	Kind               string `gorm:"column:kind"`
	Issuer             string `gorm:"column:issuer"`
	ClientID           string `gorm:"column:client_id"`
	ClientSecret       []byte `gorm:"column:client_secret"`
	Scopes             string `gorm:"column:scopes"`
	AllowedDomains     string `gorm:"column:allowed_domains"`
	AutoCreate         bool   `gorm:"column:auto_create"`
	TrustEmailVerified bool   `gorm:"column:trust_email_verified"`
	Enabled            bool   `gorm:"column:enabled"`
	AuthURL            string `gorm:"column:auth_url"`
	TokenURL           string `gorm:"column:token_url"`
	APIURL             string `gorm:"column:api_url"`
	CreatedMicros      int64  `gorm:"column:created_at"`
	UpdatedMicros      int64  `gorm:"column:updated_at"`
}

func (identityProviderRow) TableName() string { return "identity_providers" }

// identityProviderColumns are the columns of identityProviderRow, named
// (see keyColumns).
var identityProviderColumns = []string{"slug", "display_name", "kind", "issuer", "client_id", "client_secret", "scopes",
	"allowed_domains", "auto_create", "trust_email_verified", "enabled", "auth_url", "token_url", "api_url",
	"created_at", "updated_at"}

// identityProviderUpdateColumns are the only columns UpdateProvider
// writes: the slug, the kind and created_at never change.
var identityProviderUpdateColumns = []string{"display_name", "issuer", "client_id", "client_secret", "scopes",
	"allowed_domains", "auto_create", "trust_email_verified", "enabled", "auth_url", "token_url", "api_url", "updated_at"}

// providerSecretAD is the associated data a provider's client secret is
// sealed with: bound to its purpose and its provider, so that a sealed
// value copied to another provider's row, or from another column sealed
// with the same key (a TOTP secret under a user id that happens to match
// a slug), does not open.
func providerSecretAD(slug string) []byte { return []byte("identity-provider-client-secret:" + slug) }

// IdentityProviderStore is the SQL ports.IdentityProviderStore.
type IdentityProviderStore struct {
	db  *DB
	box ports.SecretBox
}

var _ ports.IdentityProviderStore = (*IdentityProviderStore)(nil)

// NewIdentityProviderStore returns the identity-provider store of db,
// sealing and opening client secrets with box.
func NewIdentityProviderStore(db *DB, box ports.SecretBox) *IdentityProviderStore {
	return &IdentityProviderStore{db: db, box: box}
}

// toRow seals p's secret into its row.
func (s *IdentityProviderStore) toRow(p domain.IdentityProvider) (identityProviderRow, error) {
	sealed, err := s.box.Seal([]byte(p.ClientSecret), providerSecretAD(p.Slug))
	if err != nil {
		return identityProviderRow{}, err
	}
	return identityProviderRow{
		Slug: p.Slug, DisplayName: p.DisplayName, Kind: string(p.Kind), Issuer: p.Issuer,
		ClientID: p.ClientID, ClientSecret: sealed,
		Scopes: jsonList(p.Scopes), AllowedDomains: jsonList(p.AllowedDomains),
		AutoCreate: p.AutoCreate, TrustEmailVerified: p.TrustEmailVerified, Enabled: p.Enabled,
		AuthURL: p.AuthURL, TokenURL: p.TokenURL, APIURL: p.APIURL,
		CreatedMicros: toMicros(p.CreatedAt), UpdatedMicros: toMicros(p.UpdatedAt),
	}, nil
}

// fromRow opens r's secret; a secret that does not open is the box's
// error.
func (s *IdentityProviderStore) fromRow(r identityProviderRow) (domain.IdentityProvider, error) {
	secret, err := s.box.Open(r.ClientSecret, providerSecretAD(r.Slug))
	if err != nil {
		return domain.IdentityProvider{}, fmt.Errorf("identity provider %s: %w", r.Slug, err)
	}
	p := domain.IdentityProvider{
		Slug: r.Slug, DisplayName: r.DisplayName, Kind: domain.IdentityProviderKind(r.Kind), Issuer: r.Issuer,
		ClientID: r.ClientID, ClientSecret: string(secret),
		AutoCreate: r.AutoCreate, TrustEmailVerified: r.TrustEmailVerified, Enabled: r.Enabled,
		AuthURL: r.AuthURL, TokenURL: r.TokenURL, APIURL: r.APIURL,
		CreatedAt: fromMicros(r.CreatedMicros), UpdatedAt: fromMicros(r.UpdatedMicros),
	}
	var errs [2]error
	p.Scopes, errs[0] = fromJSONList[string]("identity_providers.scopes", r.Scopes)
	p.AllowedDomains, errs[1] = fromJSONList[string]("identity_providers.allowed_domains", r.AllowedDomains)
	if err := errors.Join(errs[:]...); err != nil {
		return domain.IdentityProvider{}, fmt.Errorf("identity provider %s: %w", r.Slug, err)
	}
	return p, nil
}

// CreateProvider implements ports.IdentityProviderStore.
func (s *IdentityProviderStore) CreateProvider(ctx context.Context, p domain.IdentityProvider) error {
	row, err := s.toRow(p)
	if err != nil {
		return fmt.Errorf("create identity provider: %w", err)
	}
	err = s.db.statement(ctx, func(g *gorm.DB) error { return g.Create(&row).Error })
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		// The slug is the table's only unique key.
		return fmt.Errorf("create identity provider: %w", domain.ErrIdentityProviderSlugTaken)
	}
	return storeError("create identity provider", err)
}

// Provider implements ports.IdentityProviderStore.
func (s *IdentityProviderStore) Provider(ctx context.Context, slug string) (domain.IdentityProvider, error) {
	var row identityProviderRow
	err := s.db.reader(ctx).Select(identityProviderColumns).Where("slug = ?", slug).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.IdentityProvider{}, fmt.Errorf("identity provider: %w", domain.ErrIdentityProviderNotFound)
	}
	if err != nil {
		return domain.IdentityProvider{}, storeError("identity provider", err)
	}
	return s.fromRow(row)
}

// Providers implements ports.IdentityProviderStore: a walk of the primary
// key, whose collation sorts bytewise as Go does. There is no paging: a
// deployment has a handful of providers.
func (s *IdentityProviderStore) Providers(ctx context.Context) ([]domain.IdentityProvider, error) {
	var rows []identityProviderRow
	if err := s.db.reader(ctx).Select(identityProviderColumns).Order("slug").Find(&rows).Error; err != nil {
		return nil, storeError("identity providers", err)
	}
	out := make([]domain.IdentityProvider, len(rows))
	for i, row := range rows {
		p, err := s.fromRow(row)
		if err != nil {
			return nil, fmt.Errorf("identity providers: %w", err)
		}
		out[i] = p
	}
	return out, nil
}

// UpdateProvider implements ports.IdentityProviderStore as
// OAuthClientStore.Update does: the row read locked, changed by fn and
// written back in one transaction, so that no concurrent update is lost.
func (s *IdentityProviderStore) UpdateProvider(ctx context.Context, slug string, fn func(*domain.IdentityProvider) error) (domain.IdentityProvider, error) {
	var (
		updated domain.IdentityProvider
		fnErr   error
	)
	err := s.db.transaction(ctx, func(tx *gorm.DB) error {
		var row identityProviderRow
		err := s.db.dialect.forUpdate(tx).Select(identityProviderColumns).Where("slug = ?", slug).Take(&row).Error
		if err != nil {
			return err
		}
		old, err := s.fromRow(row)
		if err != nil {
			return err
		}
		p := old
		if fnErr = fn(&p); fnErr != nil {
			return fnErr
		}
		p.Slug, p.Kind, p.CreatedAt = old.Slug, old.Kind, old.CreatedAt
		newRow, err := s.toRow(p)
		if err != nil {
			return err
		}
		res := tx.Model(&identityProviderRow{}).Where("slug = ?", slug).Select(identityProviderUpdateColumns).Updates(&newRow)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return gorm.ErrRecordNotFound
		}
		// Read back as stored: nil lists come back empty, times in
		// microseconds.
		updated, err = s.fromRow(newRow)
		return err
	})
	switch {
	case fnErr != nil:
		return domain.IdentityProvider{}, fnErr
	case errors.Is(err, gorm.ErrRecordNotFound):
		return domain.IdentityProvider{}, fmt.Errorf("update identity provider: %w", domain.ErrIdentityProviderNotFound)
	}
	if err != nil {
		return domain.IdentityProvider{}, storeError("update identity provider", err)
	}
	return updated, nil
}

// DeleteProvider implements ports.IdentityProviderStore; the foreign key
// of user_identities deletes the provider's identities with it.
func (s *IdentityProviderStore) DeleteProvider(ctx context.Context, slug string) error {
	var affected int64
	err := s.db.statement(ctx, func(g *gorm.DB) error {
		res := g.Where("slug = ?", slug).Delete(&identityProviderRow{})
		affected = res.RowsAffected
		return res.Error
	})
	if err == nil && affected != 1 {
		return fmt.Errorf("delete identity provider: %w", domain.ErrIdentityProviderNotFound)
	}
	return storeError("delete identity provider", err)
}

// Reencrypt rewrites every client secret not sealed under the box's
// current key so that it is, all in one transaction, and returns how many
// rows it changed, as MFAStore.Reencrypt does for the TOTP secrets. A
// secret that does not open fails the whole and changes nothing.
func (s *IdentityProviderStore) Reencrypt(ctx context.Context) (int, error) {
	return s.db.reseal(ctx, "re-encrypt identity provider secrets", providerSecrets, s.box, true)
}
