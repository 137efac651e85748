package gormstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// UserRepository is the SQL ports.UserRepository.
type UserRepository struct{ db *DB }

var _ ports.UserRepository = (*UserRepository)(nil)

// NewUserRepository returns the user repository of db.
func NewUserRepository(db *DB) *UserRepository { return &UserRepository{db: db} }

// Create implements ports.UserRepository.
func (r *UserRepository) Create(ctx context.Context, u domain.User) error {
	row := fromDomainUser(u)
	err := r.db.statement(ctx, func(g *gorm.DB) error { return g.Create(&row).Error })
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		// Two unique keys can clash: the email, or (astronomically
		// unlikely) the random id. Only the first is the client's doing.
		if _, byEmailErr := r.ByEmail(ctx, u.Email); byEmailErr == nil {
			return fmt.Errorf("create user: %w", domain.ErrEmailTaken)
		}
	}
	return storeError("create user", err)
}

// sqliteMaxVariables is the number of bound parameters one SQLite
// statement may hold in builds older than 3.32 (newer ones allow 32766);
// PostgreSQL allows 65535. Multi-row inserts stay under it.
const sqliteMaxVariables = 999

// usersPerInsert is the number of rows of one INSERT statement of
// CreateMany: as many as fit in sqliteMaxVariables with one parameter per
// column.
var usersPerInsert = sqliteMaxVariables / len(userColumns)

// userColumns are the columns of the users table, as CreateMany binds them
// and the reads name them. Named rather than SELECT *: on SQLite, a
// connection opened before a migration added a column may answer SELECT *
// with the old column list (see keyColumns), and a disabled account would
// read as enabled.
var userColumns = []string{"id", "name", "email", "password_hash", "profiles", "created_at", "updated_at", "email_verified", "disabled", "mfa_enabled",
	"metadata", "app_metadata"}

// CreateMany implements ports.UserRepository: one transaction of
// multi-row INSERTs, usersPerInsert rows each.
func (r *UserRepository) CreateMany(ctx context.Context, users []domain.User) error {
	if len(users) == 0 {
		return nil
	}
	rows := make([]userRow, len(users))
	seen := make(map[domain.Email]struct{}, len(users))
	for i, u := range users {
		if _, twice := seen[u.Email]; twice {
			return fmt.Errorf("create users: %w", domain.ErrEmailTaken)
		}
		seen[u.Email] = struct{}{}
		rows[i] = fromDomainUser(u)
	}
	err := r.db.transaction(ctx, func(tx *gorm.DB) error {
		return tx.CreateInBatches(&rows, usersPerInsert).Error
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		// As in Create: an email is the likely clash, an id the unlikely one.
		taken, lookupErr := r.anyEmailTaken(ctx, users)
		if lookupErr != nil {
			return lookupErr
		}
		if taken {
			return fmt.Errorf("create users: %w", domain.ErrEmailTaken)
		}
	}
	return storeError("create users", err)
}

// anyEmailTaken reports whether a stored user has one of the emails of
// users.
func (r *UserRepository) anyEmailTaken(ctx context.Context, users []domain.User) (bool, error) {
	for start := 0; start < len(users); start += sqliteMaxVariables {
		chunk := users[start:min(start+sqliteMaxVariables, len(users))]
		emails := make([]string, len(chunk))
		for i, u := range chunk {
			emails[i] = string(u.Email)
		}
		var n int64
		if err := r.db.reader(ctx).Model(&userRow{}).Where("email IN ?", emails).Count(&n).Error; err != nil {
			return false, storeError("create users", err)
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}

// userByIDQuery is ByID's statement on the read pool (hotStatement): the
// columns of userColumns, which ByID scans in that order.
func userByIDQuery(d dialect) string {
	return "SELECT " + strings.Join(userColumns, ", ") + " FROM users WHERE id = " + d.param(1)
}

// ByID implements ports.UserRepository. Outside a transaction, where
// every signed-in request makes it, it runs a prepared statement through
// database/sql (hotStatement); inside one, through GORM on the transaction.
func (r *UserRepository) ByID(ctx context.Context, id domain.UserID) (domain.User, error) {
	var row userRow
	var err error
	if r.db.txOf(ctx) == nil {
		err = r.db.queryRow(ctx, &r.db.userByID, row.scanTargets(), string(id))
	} else {
		err = r.db.reader(ctx).Select(userColumns).Where("id = ?", string(id)).Take(&row).Error
	}
	if errors.Is(err, gorm.ErrRecordNotFound) || errors.Is(err, sql.ErrNoRows) {
		return domain.User{}, fmt.Errorf("user by id: %w", domain.ErrUserNotFound)
	}
	if err != nil {
		return domain.User{}, storeError("user by id", err)
	}
	return toDomainUser(row), nil
}

// ByEmail implements ports.UserRepository.
func (r *UserRepository) ByEmail(ctx context.Context, email domain.Email) (domain.User, error) {
	var row userRow
	err := r.db.reader(ctx).Select(userColumns).Where("email = ?", string(email)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.User{}, fmt.Errorf("user by email: %w", domain.ErrUserNotFound)
	}
	if err != nil {
		return domain.User{}, storeError("user by email", err)
	}
	return toDomainUser(row), nil
}

// List implements ports.UserRepository. A Limit below 1 is taken as 1.
//
// The prefix filter is a LIKE with its wildcards escaped, the same on
// SQLite and PostgreSQL (SQLite's LIKE ignores ASCII case, PostgreSQL's
// does not; stored emails and the prefix are both lower case, so they
// agree). The email index does not serve it (SQLite's LIKE optimisation
// wants a NOCASE index, PostgreSQL's a text_pattern_ops one): it filters
// the walk of the primary key in id order, which stops once the page is
// full, so a common prefix costs a page's worth of rows and a rare one up
// to the whole table (docs/performance.md, "The SQL store"). An index
// for it would have to be a bytewise one on PostgreSQL (COLLATE "C" or
// text_pattern_ops) queried by range; not worth it at the console's scale
// so far.
func (r *UserRepository) List(ctx context.Context, q ports.UserListQuery) ([]domain.User, error) {
	if !storableText(string(q.Email)) || !storableText(q.EmailPrefix) {
		// No stored email holds such bytes, and PostgreSQL answers a
		// comparison with them with an error, not with no rows.
		return []domain.User{}, nil
	}
	tx := r.db.reader(ctx).Model(&userRow{}).Select(userColumns)
	if q.Page.After != "" {
		tx = tx.Where("id > ?", string(q.Page.After))
	}
	if q.Email != "" {
		tx = tx.Where("email = ?", string(q.Email))
	}
	if q.EmailPrefix != "" {
		tx = tx.Where(`email LIKE ? ESCAPE '\'`, likePrefix(q.EmailPrefix))
	}
	var rows []userRow
	if err := tx.Order("id").Limit(max(q.Page.Limit, 1)).Find(&rows).Error; err != nil {
		return nil, storeError("list users", err)
	}
	out := make([]domain.User, len(rows))
	for i, row := range rows {
		out[i] = toDomainUser(row)
	}
	return out, nil
}

// storableText reports whether s can be stored in, or compared with, a
// text column of both dialects: valid UTF-8 without NUL.
func storableText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// likeEscaper makes LIKE's wildcards, and its escape character, match
// themselves.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// likePrefix returns the LIKE pattern (escape character '\') of the
// strings that start with prefix.
func likePrefix(prefix string) string { return likeEscaper.Replace(prefix) + "%" }

// Update implements ports.UserRepository. fn runs inside the transaction,
// so it must not use the store: on SQLite, whose single connection the
// transaction holds, that would wait forever. The last-admin rule is
// checked in the same transaction (see keepAnAdmin).
func (r *UserRepository) Update(ctx context.Context, id domain.UserID, fn func(*domain.User) error) (domain.User, error) {
	var (
		updated domain.User
		fnErr   error
	)
	err := r.db.transaction(ctx, func(tx *gorm.DB) error {
		row, err := r.lock(tx, id)
		if err != nil {
			return err
		}
		old, u := toDomainUser(row), toDomainUser(row)
		if fnErr = fn(&u); fnErr != nil {
			return fnErr
		}
		u.ID, u.CreatedAt = id, old.CreatedAt
		if old.IsEnabledAdmin() && !u.IsEnabledAdmin() {
			if err := r.keepAnAdmin(tx, id); err != nil {
				return err
			}
		}
		newRow := fromDomainUser(u)
		res := tx.Model(&userRow{}).Where("id = ?", string(id)).Select(userUpdateColumns).Updates(&newRow)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return gorm.ErrRecordNotFound
		}
		updated = toDomainUser(newRow)
		return r.db.recordAccountChange(tx, id)
	})
	switch {
	case fnErr != nil:
		return domain.User{}, fnErr
	case errors.Is(err, gorm.ErrRecordNotFound):
		return domain.User{}, fmt.Errorf("update user: %w", domain.ErrUserNotFound)
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return domain.User{}, fmt.Errorf("update user: %w", domain.ErrEmailTaken)
	case errors.Is(err, domain.ErrLastAdmin):
		return domain.User{}, fmt.Errorf("update user: %w", domain.ErrLastAdmin)
	case err != nil:
		return domain.User{}, storeError("update user", err)
	}
	return updated, nil
}

// Delete implements ports.UserRepository. The foreign keys delete the
// user's refresh-token families and tokens, its link tokens, and its
// second factors, mfaTokens, passkeys and passkey ceremonies, in the same
// statement (on SQLite, _foreign_keys=1, which sqliteDSN insists on,
// makes them act). The user is read first, in the transaction, for the
// last-admin rule.
func (r *UserRepository) Delete(ctx context.Context, id domain.UserID) error {
	err := r.db.transaction(ctx, func(tx *gorm.DB) error {
		row, err := r.lock(tx, id)
		if err != nil {
			return err
		}
		if u := toDomainUser(row); u.IsEnabledAdmin() {
			if err := r.keepAnAdmin(tx, id); err != nil {
				return err
			}
		}
		res := tx.Where("id = ?", string(id)).Delete(&userRow{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return gorm.ErrRecordNotFound
		}
		return r.db.recordAccountChange(tx, id)
	})
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return fmt.Errorf("delete user: %w", domain.ErrUserNotFound)
	case errors.Is(err, domain.ErrLastAdmin):
		return fmt.Errorf("delete user: %w", domain.ErrLastAdmin)
	}
	return storeError("delete user", err)
}

// lock reads user id in tx: on PostgreSQL and MySQL with its row locked
// until tx ends, so that concurrent updates queue on it; on SQLite the
// immediate transaction has serialised them already.
func (r *UserRepository) lock(tx *gorm.DB, id domain.UserID) (userRow, error) {
	var row userRow
	err := r.db.dialect.forUpdate(tx).Select(userColumns).Where("id = ?", string(id)).Take(&row).Error
	return row, err
}

// lastAdminLockSQL takes the PostgreSQL advisory lock that every change
// removing an enabled admin holds until its transaction ends, keyed by the
// schema (as migrationLocker's is) so that other deployments sharing the
// database do not wait for it. Row locks alone cannot serialise such
// changes: two admins demoting each other each lock their own row and
// read the other's as still an enabled admin; locking every admin row in
// turn would deadlock against a transaction that holds one of them.
const lastAdminLockSQL = `SELECT pg_advisory_xact_lock(('x' || left(md5('userd last admin ' || current_schema()), 16))::bit(64)::bigint)`

// otherEnabledAdminSQL finds an enabled admin other than the user: a user
// not disabled whose profiles (comma-separated, see fromDomainUser) hold
// ROLE_ADMIN, which is domain.User.IsEnabledAdmin. %s is the function that
// finds a string in another and minds case (dialect.instr): LIKE would
// ignore case on SQLite.
const otherEnabledAdminSQL = `SELECT id FROM users WHERE id <> ? AND disabled = ? AND %s(',' || profiles || ',', ?) > 0 LIMIT 1`

// mysqlLastAdminLockSQL is lastAdminLockSQL on MySQL: the lock of a row
// that the schema keeps for it (store_locks, migration 1), held until the
// transaction ends.
const mysqlLastAdminLockSQL = `SELECT name FROM store_locks WHERE name = 'last admin' FOR UPDATE`

// adminProfile is ROLE_ADMIN as it appears among the comma-wrapped
// profiles.
var adminProfile = "," + string(domain.ProfileAdmin) + ","

// keepAnAdmin returns domain.ErrLastAdmin unless a user other than id is
// an enabled admin. The caller is about to make id stop being one, in tx,
// and must not write if it fails. On SQLite the immediate transaction
// holds the database's write lock, so no other change comes between the
// check and the write. On PostgreSQL every such change takes
// lastAdminLockSQL first, after the lock of its own row: the check of a
// change that waited for the lock is a new statement, which sees what the
// changes before it committed. MySQL does the same with the row of
// mysqlLastAdminLockSQL, under READ COMMITTED. (Locking the other admins'
// rows instead would not do: two admins removing each other each hold
// their own row and wait for the other's, and nine at once deadlock more
// often than a few retries undo.) The branch on the dialect is that of
// the lock: each database serialises these changes its own way.
func (r *UserRepository) keepAnAdmin(tx *gorm.DB, id domain.UserID) error {
	switch r.db.dialect {
	case dialectPostgres:
		if err := tx.Exec(lastAdminLockSQL).Error; err != nil {
			return err
		}
	case dialectMySQL:
		var held []string
		if err := tx.Raw(mysqlLastAdminLockSQL).Scan(&held).Error; err != nil {
			return err
		}
	}
	var others []string
	if err := tx.Raw(fmt.Sprintf(otherEnabledAdminSQL, r.db.dialect.instr()), string(id), false, adminProfile).Scan(&others).Error; err != nil {
		return err
	}
	if len(others) == 0 {
		return domain.ErrLastAdmin
	}
	return nil
}
