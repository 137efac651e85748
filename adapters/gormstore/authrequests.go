package gormstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// authRequestRow mirrors the oauth_auth_requests table (migration 19).
// The columns after ExpiresMicros are NULL until AttachCode, the last two
// until TakeCode.
type authRequestRow struct {
	ID                string  `gorm:"column:id;primaryKey"`
	ClientID          string  `gorm:"column:client_id"`
	RedirectURI       string  `gorm:"column:redirect_uri"`
	Scopes            string  `gorm:"column:scopes"`
	State             string  `gorm:"column:state"`
	Nonce             string  `gorm:"column:nonce"`
	CodeChallenge     string  `gorm:"column:code_challenge"`
	Prompt            string  `gorm:"column:prompt"`
	MaxAgeMicros      *int64  `gorm:"column:max_age"`
	ACRValues         string  `gorm:"column:acr_values"`
	LoginHint         string  `gorm:"column:login_hint"`
	CreatedMicros     int64   `gorm:"column:created_at"`
	ExpiresMicros     int64   `gorm:"column:expires_at"`
	UserID            *string `gorm:"column:user_id"`
	AuthMicros        *int64  `gorm:"column:auth_time"`
	AMR               *string `gorm:"column:amr"`
	BrowserSessionID  *string `gorm:"column:browser_session_id"`
	CodeHash          *string `gorm:"column:code_hash"`
	CodeExpiresMicros *int64  `gorm:"column:code_expires_at"`
	CodeUsedMicros    *int64  `gorm:"column:code_used_at"`
	IssuedSessionID   *string `gorm:"column:issued_session_id"`
}

func (authRequestRow) TableName() string { return "oauth_auth_requests" }

// fromDomainAuthRequest is the row of a new request: what was asked only,
// since a request is stored before anyone signs in for it.
func fromDomainAuthRequest(r domain.AuthRequest) authRequestRow {
	row := authRequestRow{
		ID:            r.ID,
		ClientID:      string(r.ClientID),
		RedirectURI:   r.RedirectURI,
		Scopes:        jsonList(r.Scopes),
		State:         r.State,
		Nonce:         r.Nonce,
		CodeChallenge: r.CodeChallenge,
		Prompt:        jsonList(r.Prompt),
		ACRValues:     jsonList(r.ACRValues),
		LoginHint:     r.LoginHint,
		CreatedMicros: toMicros(r.CreatedAt),
		ExpiresMicros: toMicros(r.ExpiresAt),
	}
	if r.MaxAge != nil {
		us := r.MaxAge.Microseconds()
		row.MaxAgeMicros = &us
	}
	return row
}

func toDomainAuthRequest(row authRequestRow) (domain.AuthRequest, error) {
	r := domain.AuthRequest{
		ID:               row.ID,
		ClientID:         domain.OAuthClientID(row.ClientID),
		RedirectURI:      row.RedirectURI,
		State:            row.State,
		Nonce:            row.Nonce,
		CodeChallenge:    row.CodeChallenge,
		LoginHint:        row.LoginHint,
		CreatedAt:        fromMicros(row.CreatedMicros),
		ExpiresAt:        fromMicros(row.ExpiresMicros),
		UserID:           domain.UserID(fromNullString(row.UserID)),
		AuthTime:         fromNullMicros(row.AuthMicros),
		BrowserSessionID: fromNullString(row.BrowserSessionID),
		CodeHash:         fromNullString(row.CodeHash),
		CodeExpiresAt:    fromNullMicros(row.CodeExpiresMicros),
		CodeUsedAt:       fromMicrosPtr(row.CodeUsedMicros),
		IssuedSessionID:  fromNullString(row.IssuedSessionID),
	}
	if row.MaxAgeMicros != nil {
		d := time.Duration(*row.MaxAgeMicros) * time.Microsecond
		r.MaxAge = &d
	}
	var errs [4]error
	r.Scopes, errs[0] = fromJSONList[domain.OAuthScope]("oauth_auth_requests.scopes", row.Scopes)
	r.Prompt, errs[1] = fromJSONList[string]("oauth_auth_requests.prompt", row.Prompt)
	r.ACRValues, errs[2] = fromJSONList[string]("oauth_auth_requests.acr_values", row.ACRValues)
	if row.AMR != nil {
		amr, ok := domain.ParseAMR(strings.Split(*row.AMR, ","))
		if !ok {
			errs[3] = fmt.Errorf("%w: amr %q", errInvalidAMR, *row.AMR)
		}
		r.AMR = amr
	}
	if err := errors.Join(errs[:]...); err != nil {
		return domain.AuthRequest{}, fmt.Errorf("authorization request %s: %w", row.ID, err)
	}
	return r, nil
}

// AuthRequestStore is the SQL ports.AuthRequestStore.
type AuthRequestStore struct{ db *DB }

var _ ports.AuthRequestStore = (*AuthRequestStore)(nil)

// NewAuthRequestStore returns the authorization-request store of db.
func NewAuthRequestStore(db *DB) *AuthRequestStore { return &AuthRequestStore{db: db} }

// CreateAuthRequest implements ports.AuthRequestStore. Only what was
// asked is stored, whatever else r holds: who signed in and the code come
// by AttachCode alone. It returns domain.ErrOAuthClientNotFound when the
// client does not exist (deleted meanwhile, say).
func (s *AuthRequestStore) CreateAuthRequest(ctx context.Context, r domain.AuthRequest) error {
	row := fromDomainAuthRequest(r)
	err := s.db.statement(ctx, func(g *gorm.DB) error { return g.Create(&row).Error })
	if errors.Is(err, gorm.ErrForeignKeyViolated) {
		return fmt.Errorf("create authorization request: %w", domain.ErrOAuthClientNotFound)
	}
	return storeError("create authorization request", err)
}

// AuthRequest implements ports.AuthRequestStore.
func (s *AuthRequestStore) AuthRequest(ctx context.Context, id string, now time.Time) (domain.AuthRequest, error) {
	var row authRequestRow
	err := s.db.reader(ctx).Where("id = ? AND expires_at > ? AND code_hash IS NULL", id, toMicros(now)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.AuthRequest{}, fmt.Errorf("authorization request: %w", domain.ErrAuthRequestNotFound)
	}
	if err != nil {
		return domain.AuthRequest{}, storeError("authorization request", err)
	}
	return toDomainAuthRequest(row)
}

// attachCodeSQL records the sign-in and the code of a request that is
// live and has none yet: the condition makes a second AttachCode, or one
// racing it, change nothing. Arguments: user_id, auth_time, amr,
// browser_session_id, code_hash, code_expires_at, the id, the time.
const attachCodeSQL = `UPDATE oauth_auth_requests
	SET user_id = ?, auth_time = ?, amr = ?, browser_session_id = ?, code_hash = ?, code_expires_at = ?
	WHERE id = ? AND expires_at > ? AND code_hash IS NULL`

// AttachCode implements ports.AuthRequestStore. signed must name a user
// and a code hash, and hold an AMR that domain.ParseAMR accepts (an empty
// one is domain.AMRPassword, as for a session); otherwise it is an error
// and nothing is written. It returns domain.ErrUserNotFound when the user
// does not exist.
func (s *AuthRequestStore) AttachCode(ctx context.Context, id string, signed domain.AuthRequest, now time.Time) error {
	amr, ok := domain.ParseAMR(signed.AMR)
	switch {
	case !ok:
		return fmt.Errorf("attach code: %w: amr %q", errInvalidAMR, signed.AMR)
	case signed.UserID == "" || signed.CodeHash == "":
		return errors.New("attach code: no user or no code hash")
	}
	var affected int64
	err := s.db.statement(ctx, func(g *gorm.DB) error {
		res := g.Exec(attachCodeSQL, string(signed.UserID), nullMicros(signed.AuthTime), strings.Join(amr, ","),
			nullString(signed.BrowserSessionID), signed.CodeHash, toMicros(signed.CodeExpiresAt), id, toMicros(now))
		affected = res.RowsAffected
		return res.Error
	})
	switch {
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		return fmt.Errorf("attach code: %w", domain.ErrUserNotFound)
	case err != nil:
		return storeError("attach code", err)
	case affected == 0:
		return fmt.Errorf("attach code: %w", domain.ErrAuthRequestNotFound)
	}
	return nil
}

// takeCodeSQL marks a code used, provided it is unused and not expired:
// of concurrent exchanges of one code the first to update the row wins,
// and the others, which wait for its lock (PostgreSQL, MySQL) or for the
// one writer (SQLite), then find code_used_at set and update nothing.
// Arguments: the time, the session, the code's hash, the time.
const takeCodeSQL = `UPDATE oauth_auth_requests SET code_used_at = ?, issued_session_id = ?
	WHERE code_hash = ? AND code_used_at IS NULL AND code_expires_at > ?`

// TakeCode implements ports.AuthRequestStore: the conditional update
// decides, and a read in the same transaction tells the request, or why
// nothing was updated.
func (s *AuthRequestStore) TakeCode(ctx context.Context, codeHash, issuedSession string, now time.Time) (domain.AuthRequest, error) {
	var (
		row   authRequestRow
		taken bool
		found bool
	)
	err := s.db.transaction(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(takeCodeSQL, toMicros(now), issuedSession, codeHash, toMicros(now))
		if res.Error != nil {
			return res.Error
		}
		taken = res.RowsAffected == 1
		var rows []authRequestRow
		if err := tx.Where("code_hash = ?", codeHash).Limit(1).Find(&rows).Error; err != nil {
			return err
		}
		found = len(rows) == 1
		if found {
			row = rows[0]
		}
		return nil
	})
	if err != nil {
		return domain.AuthRequest{}, storeError("take code", err)
	}
	if !found || (!taken && row.CodeUsedMicros == nil) {
		// Unknown, or expired unused.
		return domain.AuthRequest{}, fmt.Errorf("take code: %w", domain.ErrAuthCodeInvalid)
	}
	r, err := toDomainAuthRequest(row)
	if err != nil {
		return domain.AuthRequest{}, fmt.Errorf("take code: %w", err)
	}
	if !taken {
		return r, fmt.Errorf("take code: %w", domain.ErrAuthCodeReused)
	}
	// The request as it was before this use.
	r.CodeUsedAt, r.IssuedSessionID = nil, ""
	return r, nil
}

// DeleteAuthRequest implements ports.AuthRequestStore.
func (s *AuthRequestStore) DeleteAuthRequest(ctx context.Context, id string) error {
	err := s.db.writer(ctx).Where("id = ?", id).Delete(&authRequestRow{}).Error
	return storeError("delete authorization request", err)
}
