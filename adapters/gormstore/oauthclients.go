package gormstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// oauthClientRow mirrors the oauth_clients table. The lists are JSON
// arrays of strings (migration 18 says why).
type oauthClientRow struct {
	ID                     string  `gorm:"column:id;primaryKey"`
	Name                   string  `gorm:"column:name"`
	Type                   string  `gorm:"column:type"`
	RedirectURIs           string  `gorm:"column:redirect_uris"`
	PostLogoutRedirectURIs string  `gorm:"column:post_logout_redirect_uris"`
	GrantTypes             string  `gorm:"column:grant_types"`
	Scopes                 string  `gorm:"column:scopes"`
	FirstParty             bool    `gorm:"column:first_party"`
	IDTokenSigningAlg      string  `gorm:"column:id_token_signing_alg"`
	SecretHash             *string `gorm:"column:secret_hash"`
	CreatedMicros          int64   `gorm:"column:created_at"`
	UpdatedMicros          int64   `gorm:"column:updated_at"`
}

func (oauthClientRow) TableName() string { return "oauth_clients" }

// oauthClientColumns are the columns of oauthClientRow, named (see
// keyColumns).
var oauthClientColumns = []string{"id", "name", "type", "redirect_uris", "post_logout_redirect_uris", "grant_types",
	"scopes", "first_party", "id_token_signing_alg", "secret_hash", "created_at", "updated_at"}

// oauthClientUpdateColumns are the only columns Update writes: id and
// created_at never change.
var oauthClientUpdateColumns = []string{"name", "type", "redirect_uris", "post_logout_redirect_uris", "grant_types",
	"scopes", "first_party", "id_token_signing_alg", "secret_hash", "updated_at"}

// jsonList encodes a list as a JSON array of strings: [] when empty. HTML
// characters (&, <, >) are kept as they are, not as \u0026, so that a URI
// costs the column no more bytes than it has.
func jsonList[T ~string](list []T) string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = string(v)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// Strings always encode.
	_ = enc.Encode(out)
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// fromJSONList decodes a list jsonList made, from the column named (table
// and column, for the error); a column that holds anything else is an
// error, not an empty list.
func fromJSONList[T ~string](column, s string) ([]T, error) {
	var raw []string
	if err := json.Unmarshal([]byte(s), &raw); err != nil || raw == nil {
		return nil, fmt.Errorf("%s is not a JSON array of strings: %q", column, s)
	}
	out := make([]T, len(raw))
	for i, v := range raw {
		out[i] = T(v)
	}
	return out, nil
}

func fromDomainOAuthClient(c domain.OAuthClient) oauthClientRow {
	r := oauthClientRow{
		ID:                     string(c.ID),
		Name:                   c.Name,
		Type:                   string(c.Type),
		RedirectURIs:           jsonList(c.RedirectURIs),
		PostLogoutRedirectURIs: jsonList(c.PostLogoutRedirectURIs),
		GrantTypes:             jsonList(c.GrantTypes),
		Scopes:                 jsonList(c.Scopes),
		FirstParty:             c.FirstParty,
		IDTokenSigningAlg:      string(c.IDTokenSigningAlg),
		CreatedMicros:          toMicros(c.CreatedAt),
		UpdatedMicros:          toMicros(c.UpdatedAt),
	}
	if c.SecretHash != "" {
		hash := c.SecretHash
		r.SecretHash = &hash
	}
	return r
}

func toDomainOAuthClient(r oauthClientRow) (domain.OAuthClient, error) {
	c := domain.OAuthClient{
		ID:                domain.OAuthClientID(r.ID),
		Name:              r.Name,
		Type:              domain.OAuthClientType(r.Type),
		FirstParty:        r.FirstParty,
		IDTokenSigningAlg: domain.IDTokenAlg(r.IDTokenSigningAlg),
		CreatedAt:         fromMicros(r.CreatedMicros),
		UpdatedAt:         fromMicros(r.UpdatedMicros),
	}
	if r.SecretHash != nil {
		c.SecretHash = *r.SecretHash
	}
	var errs [4]error
	c.RedirectURIs, errs[0] = fromJSONList[string]("oauth_clients.redirect_uris", r.RedirectURIs)
	c.PostLogoutRedirectURIs, errs[1] = fromJSONList[string]("oauth_clients.post_logout_redirect_uris", r.PostLogoutRedirectURIs)
	c.GrantTypes, errs[2] = fromJSONList[domain.OAuthGrantType]("oauth_clients.grant_types", r.GrantTypes)
	c.Scopes, errs[3] = fromJSONList[domain.OAuthScope]("oauth_clients.scopes", r.Scopes)
	if err := errors.Join(errs[:]...); err != nil {
		return domain.OAuthClient{}, fmt.Errorf("client %s: %w", r.ID, err)
	}
	return c, nil
}

// OAuthClientStore is the SQL ports.OAuthClientStore.
type OAuthClientStore struct{ db *DB }

var _ ports.OAuthClientStore = (*OAuthClientStore)(nil)

// NewOAuthClientStore returns the OAuth client store of db.
func NewOAuthClientStore(db *DB) *OAuthClientStore { return &OAuthClientStore{db: db} }

// Create implements ports.OAuthClientStore.
func (s *OAuthClientStore) Create(ctx context.Context, c domain.OAuthClient) error {
	row := fromDomainOAuthClient(c)
	err := s.db.statement(ctx, func(g *gorm.DB) error { return g.Create(&row).Error })
	return storeError("create client", err)
}

// ByID implements ports.OAuthClientStore.
func (s *OAuthClientStore) ByID(ctx context.Context, id domain.OAuthClientID) (domain.OAuthClient, error) {
	var row oauthClientRow
	err := s.db.reader(ctx).Select(oauthClientColumns).Where("id = ?", string(id)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.OAuthClient{}, fmt.Errorf("client by id: %w", domain.ErrOAuthClientNotFound)
	}
	if err != nil {
		return domain.OAuthClient{}, storeError("client by id", err)
	}
	return toDomainOAuthClient(row)
}

// List implements ports.OAuthClientStore: a walk of the primary key from
// the cursor. A Limit below 1 is taken as 1.
func (s *OAuthClientStore) List(ctx context.Context, page domain.Page[domain.OAuthClientID]) ([]domain.OAuthClient, error) {
	tx := s.db.reader(ctx).Model(&oauthClientRow{}).Select(oauthClientColumns)
	if page.After != "" {
		tx = tx.Where("id > ?", string(page.After))
	}
	var rows []oauthClientRow
	if err := tx.Order("id").Limit(max(page.Limit, 1)).Find(&rows).Error; err != nil {
		return nil, storeError("list clients", err)
	}
	out := make([]domain.OAuthClient, len(rows))
	for i, row := range rows {
		c, err := toDomainOAuthClient(row)
		if err != nil {
			return nil, fmt.Errorf("list clients: %w", err)
		}
		out[i] = c
	}
	return out, nil
}

// Update implements ports.OAuthClientStore: the row is read locked (on
// PostgreSQL and MySQL; SQLite's immediate transaction has serialised the
// writers already), changed by fn and written back in one transaction.
// fn must not use the store: on SQLite, whose single connection the
// transaction holds, that would wait forever.
func (s *OAuthClientStore) Update(ctx context.Context, id domain.OAuthClientID, fn func(*domain.OAuthClient) error) (domain.OAuthClient, error) {
	var (
		updated domain.OAuthClient
		fnErr   error
	)
	err := s.db.transaction(ctx, func(tx *gorm.DB) error {
		var row oauthClientRow
		err := s.db.dialect.forUpdate(tx).Select(oauthClientColumns).Where("id = ?", string(id)).Take(&row).Error
		if err != nil {
			return err
		}
		old, err := toDomainOAuthClient(row)
		if err != nil {
			return err
		}
		c := old
		if fnErr = fn(&c); fnErr != nil {
			return fnErr
		}
		c.ID, c.CreatedAt = id, old.CreatedAt
		newRow := fromDomainOAuthClient(c)
		res := tx.Model(&oauthClientRow{}).Where("id = ?", string(id)).Select(oauthClientUpdateColumns).Updates(&newRow)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return gorm.ErrRecordNotFound
		}
		updated, err = toDomainOAuthClient(newRow)
		return err
	})
	switch {
	case fnErr != nil:
		return domain.OAuthClient{}, fnErr
	case errors.Is(err, gorm.ErrRecordNotFound):
		return domain.OAuthClient{}, fmt.Errorf("update client: %w", domain.ErrOAuthClientNotFound)
	}
	if err != nil {
		return domain.OAuthClient{}, storeError("update client", err)
	}
	return updated, nil
}

// Delete implements ports.OAuthClientStore.
func (s *OAuthClientStore) Delete(ctx context.Context, id domain.OAuthClientID) error {
	var affected int64
	err := s.db.statement(ctx, func(g *gorm.DB) error {
		res := g.Where("id = ?", string(id)).Delete(&oauthClientRow{})
		affected = res.RowsAffected
		return res.Error
	})
	if err == nil && affected != 1 {
		return fmt.Errorf("delete client: %w", domain.ErrOAuthClientNotFound)
	}
	return storeError("delete client", err)
}
