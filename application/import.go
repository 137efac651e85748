package application

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// DefaultImportBatchSize is the number of users ImportUsers stores per
// transaction when ImportOptions.BatchSize is zero: large enough that the
// per-transaction cost (on SQLite, a synchronous commit) is spread thin,
// small enough that the write lock is never held for long.
const DefaultImportBatchSize = 500

// ImportFieldPasswordHash names the password hash in ImportLineError
// entries; the other fields are named as for any account (domain.FieldName,
// FieldEmail, FieldProfiles).
const ImportFieldPasswordHash = "passwordHash"

// ErrImportRefused means the input holds invalid records and the caller did
// not ask to skip them, so nothing was stored.
var ErrImportRefused = errors.New("import refused: invalid records")

// ImportRecord is one user as read from an import file, not validated yet.
// Reading the file (CSV, JSON lines) is the caller's business; the rules
// of what may be stored are ImportUsers'.
type ImportRecord struct {
	// Line is where the record starts in the file, for reports.
	Line int
	// Unreadable, when set, says why the line could not be read as a
	// record at all (bad quoting, bad JSON, a wrong number of fields); the
	// other fields are then ignored and the record is invalid.
	Unreadable   string
	Name         string
	Email        string
	PasswordHash string
	Profiles     []string
	// EmailVerified says the address was verified by the system the users
	// come from; the account then starts verified.
	EmailVerified bool
	// Disabled makes the account start disabled: an exported disabled
	// account must not come back enabled.
	Disabled bool
	// Metadata and AppMetadata are JSON objects as read, nil when absent
	// (the empty objects).
	Metadata, AppMetadata []byte
}

// ImportPhase names what an import is doing, for progress reports.
type ImportPhase string

// The phases of ImportUsers, in order.
const (
	// ImportChecking validates every record and looks its email up.
	ImportChecking ImportPhase = "checking"
	// ImportStoring stores the valid records batch by batch.
	ImportStoring ImportPhase = "storing"
)

// ImportProgress is a progress report: Done of Total records of the phase.
type ImportProgress struct {
	Phase ImportPhase
	Done  int
	Total int
}

// ImportOptions shape an import.
type ImportOptions struct {
	// SkipInvalid stores the valid records and reports the invalid ones.
	// Without it, one invalid record stops the import before anything is
	// stored.
	SkipInvalid bool
	// BatchSize is the number of users stored per transaction; 0 means
	// DefaultImportBatchSize.
	BatchSize int
	// Progress, when set, is called as the import advances, from the
	// calling goroutine; it should be quick.
	Progress func(ImportProgress)
}

// ImportLineError lists what is wrong with one record.
type ImportLineError struct {
	Line   int
	Fields []domain.FieldError
}

// Error returns e as "line 17: email: must contain @", the field errors
// separated by "; ". A record that could not be read has no field name.
func (e ImportLineError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		if f.Field == "" {
			parts[i] = f.Message
		} else {
			parts[i] = f.Field + ": " + f.Message
		}
	}
	return fmt.Sprintf("line %d: %s", e.Line, strings.Join(parts, "; "))
}

// ImportReport is the outcome of an import.
type ImportReport struct {
	// Total is the number of records given.
	Total int
	// Imported is the number of users stored.
	Imported int
	// WithoutPassword is how many of them have no password (a record
	// without a hash): they sign in by a reset, an email code or another
	// provider.
	WithoutPassword int
	// Skipped is the number of invalid records left out (SkipInvalid only).
	Skipped int
	// Failed is the number of valid records not stored because the import
	// stopped early: a store error, a cancellation, or an email that was
	// registered while the import ran (without SkipInvalid).
	Failed int
	// Invalid lists the invalid records, by line.
	Invalid []ImportLineError
	// LastImportedLine is the line of the last stored record; records are
	// stored in the order given, so every valid record up to it is stored.
	LastImportedLine int
}

// ImportService imports users with password hashes made elsewhere: no
// password is ever seen, and hashes that are not argon2id with the
// configured parameters are replaced at their owner's next login. Every
// stored user is a user.created event with origin=import.
type ImportService struct {
	core
	users  ports.UserRepository
	hasher ports.PasswordHasher
}

// importCandidate is a record that passed validation, ready to store.
type importCandidate struct {
	line     int
	email    domain.Email
	user     domain.NewUser
	hash     string
	verified bool
	disabled bool
}

// progressEvery is how many records the checking phase handles between two
// progress reports.
const progressEvery = 250

// ImportUsers validates every record with the rules of registration (name,
// email, at least one known profile) plus a well-formed password hash
// (ports.PasswordHasher.CheckEncoded) when it has one (without, the account
// has no password), and refuses an email that an
// earlier record of the input has or that is registered already. Only then
// does it store the valid records, in order, BatchSize users per
// CreateMany call, so each batch is stored whole or not at all.
//
// With invalid records and without SkipInvalid it stores nothing and
// returns the report with an error wrapping ErrImportRefused. When the
// store fails or ctx ends part-way, the batches stored so far stay
// (LastImportedLine says up to where) and the error is returned with the
// report. An email registered by someone else during the import makes its
// batch fail with domain.ErrEmailTaken: with SkipInvalid the batch is
// retried without it and its record reported as invalid; without, the
// import stops there.
func (s *ImportService) ImportUsers(ctx context.Context, records []ImportRecord, opts ImportOptions) (ImportReport, error) {
	report := ImportReport{Total: len(records)}
	progress := opts.Progress
	if progress == nil {
		progress = func(ImportProgress) {}
	}
	batchSize := opts.BatchSize
	if batchSize <= 0 {
		batchSize = DefaultImportBatchSize
	}

	valid, err := s.check(ctx, records, &report, progress)
	if err != nil {
		report.Failed = report.Total - len(report.Invalid)
		return report, err
	}
	if len(report.Invalid) > 0 && !opts.SkipInvalid {
		return report, fmt.Errorf("%w: %d of %d", ErrImportRefused, len(report.Invalid), len(records))
	}

	progress(ImportProgress{Phase: ImportStoring, Done: 0, Total: len(valid)})
	done := 0
	for len(valid) > 0 {
		n := min(batchSize, len(valid))
		var stored, dropped int
		err := ctx.Err()
		if err == nil {
			stored, dropped, err = s.storeBatch(ctx, valid[:n], opts.SkipInvalid, &report)
		}
		if stored > 0 {
			report.Imported += stored
			report.LastImportedLine = valid[n-1].line
		}
		done += n
		valid = valid[n:]
		if err != nil {
			report.Failed = n - stored - dropped + len(valid)
			return s.finish(ctx, report, opts, err)
		}
		progress(ImportProgress{Phase: ImportStoring, Done: done, Total: done + len(valid)})
	}
	return s.finish(ctx, report, opts, nil)
}

// finish completes the report of an import that got to the storing phase,
// and logs it.
func (s *ImportService) finish(ctx context.Context, r ImportReport, opts ImportOptions, err error) (ImportReport, error) {
	// Emails registered during the import are found after the others.
	slices.SortStableFunc(r.Invalid, func(a, b ImportLineError) int { return cmp.Compare(a.Line, b.Line) })
	if opts.SkipInvalid {
		r.Skipped = len(r.Invalid)
	}
	attrs := []slog.Attr{
		slog.Int("total", r.Total), slog.Int("imported", r.Imported),
		slog.Int("skipped", r.Skipped), slog.Int("failed", r.Failed), slog.Int("without_password", r.WithoutPassword),
	}
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "user import stopped", append(attrs, slog.String("error", err.Error()))...)
		return r, err
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "users imported", attrs...)
	return r, nil
}

// check validates the records, appending the invalid ones to
// report.Invalid, and returns the valid ones in input order.
func (s *ImportService) check(ctx context.Context, records []ImportRecord, report *ImportReport,
	progress func(ImportProgress)) ([]importCandidate, error) {
	valid := make([]importCandidate, 0, len(records))
	firstLine := make(map[domain.Email]int, len(records))
	progress(ImportProgress{Phase: ImportChecking, Done: 0, Total: len(records)})
	for i, rec := range records {
		if i%progressEvery == 0 {
			if err := ctx.Err(); err != nil {
				return valid, err
			}
			if i > 0 {
				progress(ImportProgress{Phase: ImportChecking, Done: i, Total: len(records)})
			}
		}
		c, verr := s.validate(rec)
		if c.email != "" {
			if first, seen := firstLine[c.email]; seen {
				verr.Add(domain.FieldEmail, fmt.Sprintf("also on line %d", first))
			} else {
				firstLine[c.email] = rec.Line
			}
		}
		// Only records that are otherwise valid cost a lookup.
		if verr.Err() == nil {
			_, err := s.users.ByEmail(ctx, c.email)
			switch {
			case err == nil:
				verr.Add(domain.FieldEmail, "already registered")
			case !errors.Is(err, domain.ErrUserNotFound):
				return valid, fmt.Errorf("line %d: look up email: %w", rec.Line, err)
			}
		}
		if verr.Err() != nil {
			report.Invalid = append(report.Invalid, ImportLineError{Line: rec.Line, Fields: verr.Fields})
			continue
		}
		valid = append(valid, c)
	}
	progress(ImportProgress{Phase: ImportChecking, Done: len(records), Total: len(records)})
	return valid, nil
}

// validate applies the rules of a new account to one record, plus a
// well-formed password hash when it has one. The candidate's email is set whenever the
// email itself is valid, so that duplicates are found among invalid
// records too.
func (s *ImportService) validate(rec ImportRecord) (importCandidate, domain.ValidationError) {
	c := importCandidate{line: rec.Line}
	var verr domain.ValidationError
	if rec.Unreadable != "" {
		verr.Add("", rec.Unreadable)
		return c, verr
	}
	// An unknown profile is reported by name, which the rules of a new
	// account (at least one profile) cannot do.
	profiles, unknown := importProfiles(rec.Profiles)
	nu, verr := domain.ValidateNewUser(rec.Name, rec.Email, profiles)
	if unknown != "" {
		verr = dropField(verr, domain.FieldProfiles)
		verr.Add(domain.FieldProfiles, unknown)
	}
	nu.SetMetadata(rec.Metadata, rec.AppMetadata, &verr)
	c.email, c.user, c.verified, c.disabled = nu.Email, nu, rec.EmailVerified, rec.Disabled
	// No hash is an account without a password, as a sign-in through
	// another provider or an email code makes one (and export writes it):
	// it signs in by those, or sets a password through a reset.
	if rec.PasswordHash == "" {
		return c, sortedFields(verr)
	}
	if err := s.hasher.CheckEncoded(rec.PasswordHash); err != nil {
		verr.Add(ImportFieldPasswordHash, err.Error())
	} else {
		c.hash = rec.PasswordHash
	}
	return c, sortedFields(verr)
}

// importProfiles parses the profiles of a record, each exactly
// ROLE_CUSTOMER or ROLE_ADMIN; unknown says which one is not.
func importProfiles(values []string) (ps domain.Profiles, unknown string) {
	for _, v := range values {
		p, err := domain.ParseProfile(v)
		if err != nil {
			return nil, fmt.Sprintf("unknown profile %s (want ROLE_CUSTOMER or ROLE_ADMIN)", quoteShort(v))
		}
		ps = append(ps, p)
	}
	return ps, ""
}

// dropField removes the entries of field from verr.
func dropField(verr domain.ValidationError, field string) domain.ValidationError {
	var out domain.ValidationError
	for _, f := range verr.Fields {
		if f.Field != field {
			out.Fields = append(out.Fields, f)
		}
	}
	return out
}

// fieldOrder is the order of a record's problems in a report: the order
// of the columns.
var fieldOrder = []string{domain.FieldName, domain.FieldEmail, ImportFieldPasswordHash, domain.FieldProfiles,
	domain.FieldMetadata, domain.FieldAppMetadata}

// sortedFields orders verr's entries by fieldOrder.
func sortedFields(verr domain.ValidationError) domain.ValidationError {
	slices.SortStableFunc(verr.Fields, func(a, b domain.FieldError) int {
		return cmp.Compare(slices.Index(fieldOrder, a.Field), slices.Index(fieldOrder, b.Field))
	})
	return verr
}

// quoteShort quotes s for a message, cut to 40 characters.
func quoteShort(s string) string {
	const maxRunes = 40
	if utf8.RuneCountInString(s) > maxRunes {
		s = string([]rune(s)[:maxRunes]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

// storeBatch stores one batch and returns how many of its users were
// stored and how many it found invalid. A batch refused for a taken email
// is searched for the emails registered meanwhile, which are reported
// invalid; with skip the rest is then stored.
func (s *ImportService) storeBatch(ctx context.Context, batch []importCandidate, skip bool,
	report *ImportReport) (stored, dropped int, err error) {
	for {
		users := s.newUsers(batch)
		err := s.users.CreateMany(ctx, users)
		if err == nil {
			s.created(ctx, users)
			for _, c := range batch {
				if c.hash == "" {
					report.WithoutPassword++
				}
			}
			return len(batch), dropped, nil
		}
		if !errors.Is(err, domain.ErrEmailTaken) {
			return 0, dropped, fmt.Errorf("store lines %d to %d: %w", batch[0].line, batch[len(batch)-1].line, err)
		}
		rest := batch[:0:0]
		var taken []ImportLineError
		for _, c := range batch {
			_, lookupErr := s.users.ByEmail(ctx, c.email)
			switch {
			case lookupErr == nil:
				taken = append(taken, ImportLineError{Line: c.line, Fields: []domain.FieldError{
					{Field: domain.FieldEmail, Message: "registered while the import ran"},
				}})
			case errors.Is(lookupErr, domain.ErrUserNotFound):
				rest = append(rest, c)
			default:
				return 0, dropped, fmt.Errorf("line %d: look up email: %w", c.line, lookupErr)
			}
		}
		report.Invalid = append(report.Invalid, taken...)
		dropped += len(taken)
		if !skip || len(taken) == 0 {
			// Without skip the import stops here; with skip but nothing
			// found, retrying would fail the same way.
			return 0, dropped, fmt.Errorf("store lines %d to %d: %w", batch[0].line, batch[len(batch)-1].line, err)
		}
		if len(rest) == 0 {
			return 0, dropped, nil
		}
		batch = rest
	}
}

// created reports the users of a stored batch to the audit trail.
func (s *ImportService) created(ctx context.Context, users []domain.User) {
	for _, u := range users {
		s.events.note(ctx, domain.UserCreatedEvent("", u.ID, u.Profiles, domain.OriginImport))
	}
}

// newUsers turns candidates into users created now, with fresh ids.
func (s *ImportService) newUsers(batch []importCandidate) []domain.User {
	now := s.clock.Now()
	users := make([]domain.User, len(batch))
	for i, c := range batch {
		users[i] = c.user.User(c.hash, now)
		users[i].EmailVerified, users[i].Disabled = c.verified, c.disabled
	}
	return users
}
