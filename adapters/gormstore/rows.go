package gormstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/userd/userd/domain"
)

// Row structs mirror the tables created by the migrations. Time columns are
// int64 Unix microseconds, in fields deliberately not named CreatedAt or
// UpdatedAt: GORM would fill such fields itself, in seconds.

type userRow struct {
	ID            string `gorm:"column:id;primaryKey"`
	Name          string `gorm:"column:name"`
	Email         string `gorm:"column:email"`
	PasswordHash  string `gorm:"column:password_hash"`
	Profiles      string `gorm:"column:profiles"`
	CreatedMicros int64  `gorm:"column:created_at"`
	UpdatedMicros int64  `gorm:"column:updated_at"`
	EmailVerified bool   `gorm:"column:email_verified"`
	Disabled      bool   `gorm:"column:disabled"`
	MFAEnabled    bool   `gorm:"column:mfa_enabled"`
	// Metadata and AppMetadata are domain.Metadata's canonical encoding.
	Metadata    string `gorm:"column:metadata"`
	AppMetadata string `gorm:"column:app_metadata"`
}

func (userRow) TableName() string { return "users" }

// scanTargets are the fields of r in userColumns order, for a row scanned
// by database/sql rather than GORM.
func (r *userRow) scanTargets() []any {
	return []any{&r.ID, &r.Name, &r.Email, &r.PasswordHash, &r.Profiles,
		&r.CreatedMicros, &r.UpdatedMicros, &r.EmailVerified, &r.Disabled, &r.MFAEnabled, &r.Metadata, &r.AppMetadata}
}

// userUpdateColumns are the only columns Update writes: id and created_at
// never change.
var userUpdateColumns = []string{"name", "email", "password_hash", "profiles", "updated_at", "email_verified", "disabled", "mfa_enabled",
	"metadata", "app_metadata"}

type refreshFamilyRow struct {
	ID            string `gorm:"column:id;primaryKey"`
	UserID        string `gorm:"column:user_id"`
	CreatedMicros int64  `gorm:"column:created_at"`
	ExpiresMicros int64  `gorm:"column:expires_at"`
	RevokedMicros *int64 `gorm:"column:revoked_at"`
	// AMR is the family's domain.AMR, comma-separated.
	AMR            string `gorm:"column:amr"`
	LastUsedMicros int64  `gorm:"column:last_used_at"`
	UserAgent      string `gorm:"column:user_agent"`
	IP             string `gorm:"column:ip"`
	// IdleMicros is the family's IdleTimeout in microseconds; 0 for none.
	IdleMicros int64 `gorm:"column:idle_timeout"`
	// ClientID, Scopes (a JSON list) and AuthMicros are those of a
	// session granted to an OpenID client; NULL for userd's own.
	ClientID   *string `gorm:"column:client_id"`
	Scopes     *string `gorm:"column:scopes"`
	AuthMicros *int64  `gorm:"column:auth_time"`
}

func (refreshFamilyRow) TableName() string { return "refresh_families" }

type refreshTokenRow struct {
	Hash          string  `gorm:"column:token_hash;primaryKey"`
	FamilyID      string  `gorm:"column:family_id"`
	UserID        string  `gorm:"column:user_id"`
	IssuedMicros  int64   `gorm:"column:issued_at"`
	ExpiresMicros int64   `gorm:"column:expires_at"`
	UsedMicros    *int64  `gorm:"column:used_at"`
	SuccessorHash *string `gorm:"column:successor_hash"`
}

func (refreshTokenRow) TableName() string { return "refresh_tokens" }

type loginAttemptRow struct {
	Email             string `gorm:"column:email;primaryKey"`
	Failures          int    `gorm:"column:failures"`
	LastFailureMicros int64  `gorm:"column:last_failure_at"`
}

func (loginAttemptRow) TableName() string { return "login_attempts" }

type keyRow struct {
	ID        string `gorm:"column:id;primaryKey"`
	Purpose   string `gorm:"column:purpose"`
	Algorithm string `gorm:"column:algorithm"`
	// Secret is sealed by the store's SecretBox when Sealed is true; in a
	// row written before secrets were sealed it is the key in clear.
	Secret        []byte `gorm:"column:secret"`
	CreatedMicros int64  `gorm:"column:created_at"`
	Sealed        bool   `gorm:"column:sealed"`
}

func (keyRow) TableName() string { return "keys" }

// toMicros and fromMicros convert between time.Time and the stored Unix
// microseconds. The zero time round-trips to the zero time.
func toMicros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time {
	t := time.UnixMicro(us).UTC()
	if t.IsZero() {
		return time.Time{}
	}
	return t
}

func toMicrosPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	us := toMicros(*t)
	return &us
}

func fromMicrosPtr(us *int64) *time.Time {
	if us == nil {
		return nil
	}
	t := fromMicros(*us)
	return &t
}

func fromDomainUser(u domain.User) userRow {
	return userRow{
		ID:            string(u.ID),
		Name:          u.Name,
		Email:         string(u.Email),
		PasswordHash:  u.PasswordHash,
		Profiles:      strings.Join(u.Profiles.Canonical().Strings(), ","),
		CreatedMicros: toMicros(u.CreatedAt),
		UpdatedMicros: toMicros(u.UpdatedAt),
		EmailVerified: u.EmailVerified,
		Disabled:      u.Disabled,
		MFAEnabled:    u.MFAEnabled,
		Metadata:      u.Metadata.String(),
		AppMetadata:   u.AppMetadata.String(),
	}
}

func toDomainUser(r userRow) domain.User {
	var profiles domain.Profiles
	if r.Profiles != "" {
		for _, p := range strings.Split(r.Profiles, ",") {
			profiles = append(profiles, domain.Profile(p))
		}
	}
	return domain.User{
		ID:            domain.UserID(r.ID),
		Name:          r.Name,
		Email:         domain.Email(r.Email),
		PasswordHash:  r.PasswordHash,
		Profiles:      profiles,
		EmailVerified: r.EmailVerified,
		Disabled:      r.Disabled,
		MFAEnabled:    r.MFAEnabled,
		Metadata:      domain.MetadataFromStore(r.Metadata),
		AppMetadata:   domain.MetadataFromStore(r.AppMetadata),
		CreatedAt:     fromMicros(r.CreatedMicros),
		UpdatedAt:     fromMicros(r.UpdatedMicros),
	}
}

// fromDomainRefreshFamily is the row of f. Its AMR must be one ParseAMR
// accepts (the methods it knows, none twice; an empty one is
// domain.AMRPassword), so that every stored family reads back.
func fromDomainRefreshFamily(f domain.RefreshFamily) (refreshFamilyRow, error) {
	amr, ok := domain.ParseAMR(f.AMR)
	if !ok {
		return refreshFamilyRow{}, fmt.Errorf("%w: amr %q", errInvalidAMR, f.AMR)
	}
	return refreshFamilyRow{
		ID:            f.ID,
		UserID:        string(f.UserID),
		CreatedMicros: toMicros(f.CreatedAt),
		ExpiresMicros: toMicros(f.ExpiresAt),
		RevokedMicros: toMicrosPtr(f.RevokedAt),
		AMR:           strings.Join(amr, ","),
		// A new family was last used when it was made.
		LastUsedMicros: toMicros(f.CreatedAt),
		UserAgent:      f.UserAgent,
		IP:             f.IP,
		IdleMicros:     max(f.IdleTimeout.Microseconds(), 0),
		ClientID:       nullString(string(f.ClientID)),
		Scopes:         nullJSONList(f.Scopes),
		AuthMicros:     nullMicros(f.AuthTime),
	}, nil
}

// toDomainRefreshFamily is the family of r. A stored amr that ParseAMR
// refuses is an error: a session must never read as signed in by less, or
// more, than it was.
func toDomainRefreshFamily(r refreshFamilyRow) (domain.RefreshFamily, error) {
	var methods []string
	if r.AMR != "" {
		methods = strings.Split(r.AMR, ",")
	}
	amr, ok := domain.ParseAMR(methods)
	if !ok {
		return domain.RefreshFamily{}, fmt.Errorf("refresh family %s: %w: amr %q", r.ID, errInvalidAMR, r.AMR)
	}
	f := domain.RefreshFamily{
		ID:          r.ID,
		UserID:      domain.UserID(r.UserID),
		CreatedAt:   fromMicros(r.CreatedMicros),
		ExpiresAt:   fromMicros(r.ExpiresMicros),
		AMR:         amr,
		RevokedAt:   fromMicrosPtr(r.RevokedMicros),
		LastUsedAt:  fromMicros(r.LastUsedMicros),
		IdleTimeout: time.Duration(r.IdleMicros) * time.Microsecond,
		UserAgent:   r.UserAgent,
		IP:          r.IP,
		ClientID:    domain.OAuthClientID(fromNullString(r.ClientID)),
		AuthTime:    fromNullMicros(r.AuthMicros),
	}
	if r.Scopes != nil {
		scopes, err := fromJSONList[domain.OAuthScope]("refresh_families.scopes", *r.Scopes)
		if err != nil {
			return domain.RefreshFamily{}, fmt.Errorf("refresh family %s: %w", r.ID, err)
		}
		f.Scopes = scopes
	}
	return f, nil
}

// nullString is s for a nullable column: NULL when empty.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func fromNullString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// nullJSONList is list as a nullable JSON column: NULL when nil, so that
// a nil list reads back nil and an empty one empty.
func nullJSONList[T ~string](list []T) *string {
	if list == nil {
		return nil
	}
	s := jsonList(list)
	return &s
}

// nullMicros is t for a nullable time column: NULL when zero.
func nullMicros(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	us := toMicros(t)
	return &us
}

func fromNullMicros(us *int64) time.Time {
	if us == nil {
		return time.Time{}
	}
	return fromMicros(*us)
}

func fromDomainRefreshToken(t domain.RefreshToken) refreshTokenRow {
	r := refreshTokenRow{
		Hash:          t.Hash,
		FamilyID:      t.FamilyID,
		UserID:        string(t.UserID),
		IssuedMicros:  toMicros(t.IssuedAt),
		ExpiresMicros: toMicros(t.ExpiresAt),
		UsedMicros:    toMicrosPtr(t.UsedAt),
	}
	if t.SuccessorHash != "" {
		r.SuccessorHash = &t.SuccessorHash
	}
	return r
}

func toDomainRefreshToken(r refreshTokenRow) domain.RefreshToken {
	t := domain.RefreshToken{
		Hash:      r.Hash,
		FamilyID:  r.FamilyID,
		UserID:    domain.UserID(r.UserID),
		IssuedAt:  fromMicros(r.IssuedMicros),
		ExpiresAt: fromMicros(r.ExpiresMicros),
		UsedAt:    fromMicrosPtr(r.UsedMicros),
	}
	if r.SuccessorHash != nil {
		t.SuccessorHash = *r.SuccessorHash
	}
	return t
}

func toDomainLoginAttempts(r loginAttemptRow) domain.LoginAttempts {
	return domain.LoginAttempts{
		Email:         domain.Email(r.Email),
		Failures:      r.Failures,
		LastFailureAt: fromMicros(r.LastFailureMicros),
	}
}

// fromDomainKey is the row of k, whose secret is stored as sealed.
func fromDomainKey(k domain.SigningKey, sealed []byte) keyRow {
	return keyRow{
		ID:            k.ID,
		Purpose:       string(k.Purpose),
		Algorithm:     k.Algorithm,
		Secret:        sealed,
		CreatedMicros: toMicros(k.CreatedAt),
		Sealed:        true,
	}
}

// toDomainKey is the key of r, whose secret is secret once opened.
func toDomainKey(r keyRow, secret []byte) domain.SigningKey {
	return domain.SigningKey{
		ID:        r.ID,
		Purpose:   domain.KeyPurpose(r.Purpose),
		Algorithm: r.Algorithm,
		Secret:    secret,
		CreatedAt: fromMicros(r.CreatedMicros),
	}
}
