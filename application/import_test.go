package application_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/userd/userd/adapters/passwordhash"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// importRecords returns n valid records on lines 2.. (line 1 is a header).
func importRecords(n int) []application.ImportRecord {
	recs := make([]application.ImportRecord, n)
	for i := range recs {
		recs[i] = application.ImportRecord{
			Line:         i + 2,
			Name:         fmt.Sprintf("User %d", i),
			Email:        fmt.Sprintf("User%d@Example.com", i),
			PasswordHash: fmt.Sprintf("old$password %d", i),
			Profiles:     []string{"ROLE_CUSTOMER"},
		}
	}
	return recs
}

// newImportService is e's import service over users instead of e's store.
func newImportService(t *testing.T, users ports.UserRepository, e *env) *application.ImportService {
	t.Helper()
	deps := testDeps(t, e.store, e.clock, e.audit, e.counts, e.logs)
	deps.Stores.Users = users
	svc, err := application.New(deps, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	return svc.Import
}

func storedCount(t *testing.T, e *env) int {
	t.Helper()
	got, err := e.store.Users().List(ctx, ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 100_000}})
	if err != nil {
		t.Fatal(err)
	}
	return len(got)
}

func lineErrors(r application.ImportReport) []string {
	out := make([]string, len(r.Invalid))
	for i, e := range r.Invalid {
		out[i] = e.Error()
	}
	return out
}

func TestImportUsers_stores_every_valid_record_in_batches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	svc := newImportService(t, e.store.Users(), e)
	recs := importRecords(10)
	recs[3].Profiles = []string{"ROLE_ADMIN", "ROLE_CUSTOMER", "ROLE_ADMIN"}
	var mu sync.Mutex
	var events []application.ImportProgress
	report, err := svc.ImportUsers(ctx, recs, application.ImportOptions{
		BatchSize: 4,
		Progress: func(p application.ImportProgress) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, p)
		},
	})
	wantErr(t, err, nil)
	want := application.ImportReport{Total: 10, Imported: 10, LastImportedLine: 11}
	if report.Total != want.Total || report.Imported != want.Imported || report.Skipped != 0 || report.Failed != 0 ||
		len(report.Invalid) != 0 || report.LastImportedLine != want.LastImportedLine {
		t.Fatalf("report %+v, want %+v", report, want)
	}
	u, err := e.store.Users().ByEmail(ctx, "user3@example.com")
	wantErr(t, err, nil)
	if u.Name != "User 3" || u.PasswordHash != "old$password 3" || !u.Profiles.Equal(domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}) {
		t.Fatalf("stored %+v", u)
	}
	if !u.CreatedAt.Equal(e.clock.Now()) || !u.UpdatedAt.Equal(e.clock.Now()) {
		t.Errorf("created %s, updated %s; want now", u.CreatedAt, u.UpdatedAt)
	}
	var storing []int
	for _, p := range events {
		if p.Phase == application.ImportStoring {
			storing = append(storing, p.Done)
		}
	}
	if !slices.Equal(storing, []int{0, 4, 8, 10}) {
		t.Errorf("storing progress %v, want 0, 4, 8, 10: one report per batch", storing)
	}
	if last := events[len(events)-1]; last.Done != last.Total {
		t.Errorf("last progress %+v is not complete", last)
	}
}

func TestImportUsers_reports_each_bad_line(t *testing.T) {
	t.Parallel()
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprintf("skip_invalid_%v", skip), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.seed(t, "taken@example.com")
			svc := newImportService(t, e.store.Users(), e)
			recs := importRecords(12)
			recs[1].Email = "no-at-sign"                              // line 3
			recs[2].Name = "  "                                       // line 4
			recs[3].PasswordHash = "plain text"                       // line 5
			recs[4].Profiles = nil                                    // line 6
			recs[5].Profiles = []string{"ROLE_CUSTOMER", "ROLE_ROOT"} // line 7
			recs[6].Email = " USER0@example.COM "                     // line 8: repeats line 2
			recs[7].Email = "Taken@Example.com"                       // line 9: registered
			recs[8] = application.ImportRecord{Line: 10, Unreadable: "wrong number of fields"}
			recs[9].Name, recs[9].Email = "", "bad@"  // line 11: two problems
			recs[10].PasswordHash = "$2b$04$tooShort" // line 12
			report, err := svc.ImportUsers(ctx, recs, application.ImportOptions{SkipInvalid: skip, BatchSize: 2})

			want := []string{
				"line 3: email: must contain @",
				"line 4: name: must not be empty",
				"line 5: passwordHash: unknown hash format",
				"line 6: profiles: must hold at least one profile (ROLE_CUSTOMER, ROLE_ADMIN)",
				`line 7: profiles: unknown profile "ROLE_ROOT" (want ROLE_CUSTOMER or ROLE_ADMIN)`,
				"line 8: email: also on line 2",
				"line 9: email: already registered",
				"line 10: wrong number of fields",
				"line 11: name: must not be empty; email: has an invalid domain",
				"line 12: passwordHash: unknown hash format",
			}
			if got := lineErrors(report); !slices.Equal(got, want) {
				t.Fatalf("line errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !skip {
				wantErr(t, err, application.ErrImportRefused)
				if report.Imported != 0 || storedCount(t, e) != 1 {
					t.Fatalf("imported %d, stored %d: a refused import wrote something", report.Imported, storedCount(t, e))
				}
				return
			}
			wantErr(t, err, nil)
			if report.Imported != 2 || report.Skipped != 10 || report.Failed != 0 || storedCount(t, e) != 3 {
				t.Fatalf("report %+v, %d stored; want 2 imported (lines 2 and 13), 10 skipped", report, storedCount(t, e))
			}
			for _, email := range []domain.Email{"user0@example.com", "user11@example.com"} {
				if _, err := e.store.Users().ByEmail(ctx, email); err != nil {
					t.Errorf("%s: %v", email, err)
				}
			}
		})
	}
}

// TestImportUsers_refuses_hashes_above_the_ceiling: with the real hasher
// at its default cost (argon2id m=19456 KiB, t=2), a hash costlier to
// check than one with it is a bad line like any other, named by line and
// field with the reason; the others import with --skip-invalid. Before,
// bcrypt up to cost 16 and argon2id up to 1 GiB and 20 passes were taken.
func TestImportUsers_refuses_hashes_above_the_ceiling(t *testing.T) {
	t.Parallel()
	bcryptAt := func(cost int) string {
		return fmt.Sprintf("$2b$%02d$", cost) + strings.Repeat("a", 53)
	}
	argon := func(params string) string {
		return "$argon2id$v=19$" + params + "$c2FsdHNhbHRzYWx0c2FsdA$" + strings.Repeat("A", 43)
	}
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprintf("skip_invalid_%v", skip), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			deps := testDeps(t, e.store, e.clock, e.audit, e.counts, e.logs)
			deps.Hasher = passwordhash.New(passwordhash.DefaultParams())
			svc, err := application.New(deps, testConfig())
			if err != nil {
				t.Fatal(err)
			}
			recs := importRecords(6)
			recs[0].PasswordHash = bcryptAt(8)                 // line 2
			recs[1].PasswordHash = bcryptAt(12)                // line 3
			recs[2].PasswordHash = argon("m=19456,t=2,p=1")    // line 4
			recs[3].PasswordHash = argon("m=1048576,t=20,p=1") // line 5
			recs[4].PasswordHash = argon("m=19456,t=3,p=1")    // line 6
			recs[5].PasswordHash = bcryptAt(4)                 // line 7
			report, err := svc.Import.ImportUsers(ctx, recs, application.ImportOptions{SkipInvalid: skip})

			const head = "passwordHash: hash costlier than the configured argon2id (m=19456 KiB, t=2, p=1): "
			want := []string{
				"line 3: " + head + "bcrypt cost 12 above 8 (cost 12 needs m×t/p of at least 524288)",
				"line 5: " + head + "argon2id memory 1048576 KiB above 19456",
				"line 6: " + head + "argon2id m×t 58368 above 38912",
			}
			if got := lineErrors(report); !slices.Equal(got, want) {
				t.Fatalf("line errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !skip {
				wantErr(t, err, application.ErrImportRefused)
				if n := storedCount(t, e); n != 0 {
					t.Fatalf("%d users stored by a refused import", n)
				}
				return
			}
			wantErr(t, err, nil)
			if report.Imported != 3 || report.Skipped != 3 || storedCount(t, e) != 3 {
				t.Fatalf("report %+v, %d stored; want lines 2, 4 and 7 imported, 3 skipped", report, storedCount(t, e))
			}
		})
	}
}

// raceRepo registers a user with one of the batch's emails just before
// the CreateMany call number raceAt, as another node could between the
// check and the store; failAt makes that call fail instead.
type raceRepo struct {
	ports.UserRepository
	mu     sync.Mutex
	calls  int
	raceAt int
	email  domain.Email
	failAt int
}

func (r *raceRepo) CreateMany(ctx context.Context, users []domain.User) error {
	r.mu.Lock()
	r.calls++
	call := r.calls
	r.mu.Unlock()
	if call == r.failAt {
		return fmt.Errorf("create users: %w", domain.ErrUnavailable)
	}
	if call == r.raceAt {
		u := users[0]
		u.ID, u.Email = domain.NewUserID(u.CreatedAt), r.email
		if err := r.Create(ctx, u); err != nil {
			return err
		}
	}
	return r.UserRepository.CreateMany(ctx, users)
}

func TestImportUsers_email_registered_during_the_import(t *testing.T) {
	t.Parallel()
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprintf("skip_invalid_%v", skip), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			repo := &raceRepo{UserRepository: e.store.Users(), raceAt: 2, email: "user5@example.com"}
			svc := newImportService(t, repo, e)
			report, err := svc.ImportUsers(ctx, importRecords(10), application.ImportOptions{SkipInvalid: skip, BatchSize: 4})
			if got := lineErrors(report); !slices.Equal(got, []string{"line 7: email: registered while the import ran"}) {
				t.Fatalf("line errors %q", got)
			}
			if !skip {
				wantErr(t, err, domain.ErrEmailTaken)
				// The first batch (lines 2-5) stays; the second is not written.
				if report.Imported != 4 || report.LastImportedLine != 5 || report.Failed != 5 || storedCount(t, e) != 5 {
					t.Fatalf("report %+v, %d stored", report, storedCount(t, e))
				}
				return
			}
			wantErr(t, err, nil)
			if report.Imported != 9 || report.Skipped != 1 || report.Failed != 0 || storedCount(t, e) != 10 {
				t.Fatalf("report %+v, %d stored", report, storedCount(t, e))
			}
		})
	}
}

func TestImportUsers_store_failure_keeps_earlier_batches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	svc := newImportService(t, &raceRepo{UserRepository: e.store.Users(), failAt: 3}, e)
	report, err := svc.ImportUsers(ctx, importRecords(10), application.ImportOptions{BatchSize: 3})
	wantErr(t, err, domain.ErrUnavailable)
	if !strings.Contains(err.Error(), "lines 8 to 10") {
		t.Errorf("error %q does not name the lines of the failed batch", err)
	}
	if report.Imported != 6 || report.LastImportedLine != 7 || report.Failed != 4 || storedCount(t, e) != 6 {
		t.Fatalf("report %+v, %d stored", report, storedCount(t, e))
	}
}

func TestImportUsers_cancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	svc := newImportService(t, e.store.Users(), e)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	report, err := svc.ImportUsers(cctx, importRecords(1000), application.ImportOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if report.Imported != 0 || storedCount(t, e) != 0 {
		t.Fatalf("a cancelled import stored %d users", storedCount(t, e))
	}
}

// An imported hash of another algorithm signs in and is replaced by one
// of the configured kind at that first login.
func TestImportUsers_imported_user_logs_in_and_is_rehashed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	svc := newImportService(t, e.store.Users(), e)
	_, err := svc.ImportUsers(ctx, importRecords(1), application.ImportOptions{})
	wantErr(t, err, nil)
	_, err = e.auth.Login(ctx, application.LoginInput{Email: "user0@example.com", Password: "password 0"})
	wantErr(t, err, nil)
	u, err := e.store.Users().ByEmail(ctx, "user0@example.com")
	wantErr(t, err, nil)
	if u.PasswordHash != "fake$password 0" {
		t.Fatalf("hash after login %q, want the rehashed fake$ form", u.PasswordHash)
	}
}

// Every stored user is a user.created event with origin=import; invalid
// records are not.
func TestImportUsers_records_audit_events(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	svc, audit := e.svc.Import, e.audit
	recs := importRecords(5)
	recs[2].Email = "invalid"
	recs[4].Profiles = []string{"ROLE_ADMIN"}
	_, err := svc.ImportUsers(ctx, recs, application.ImportOptions{SkipInvalid: true, BatchSize: 2})
	wantErr(t, err, nil)
	got, err := audit.List(ctx, ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 100}})
	wantErr(t, err, nil)
	if len(got) != 4 {
		t.Fatalf("%d events, want 4 (one per stored user)", len(got))
	}
	for i, ev := range got {
		u, err := e.store.Users().ByID(ctx, ev.SubjectID)
		if err != nil {
			t.Fatalf("event %d: subject %q: %v", i, ev.SubjectID, err)
		}
		want := "profiles=" + strings.Join(u.Profiles.Strings(), ",") + " origin=import"
		if ev.Type != domain.AuditUserCreated || ev.ActorID != "" || ev.Detail != want {
			t.Errorf("event %+v, want user.created with detail %q", ev, want)
		}
	}
}

// A record without a password hash is an account without a password, as
// export writes one made by another provider or an email sign-up: it is
// stored, counted apart, refuses every password, and sets one through a
// reset link.
func TestImportUsers_without_a_password(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	svc := newImportService(t, e.store.Users(), e)
	recs := importRecords(4)
	recs[1].PasswordHash = ""
	recs[3].PasswordHash = ""
	report, err := svc.ImportUsers(ctx, recs, application.ImportOptions{BatchSize: 3})
	wantErr(t, err, nil)
	if report.Imported != 4 || report.WithoutPassword != 2 || len(report.Invalid) != 0 {
		t.Fatalf("report %+v, want 4 imported, 2 without a password", report)
	}
	u, err := e.store.Users().ByEmail(ctx, "user1@example.com")
	wantErr(t, err, nil)
	if u.PasswordHash != "" {
		t.Fatalf("stored hash %q, want none", u.PasswordHash)
	}
	for _, pw := range []string{"password 1", "another password"} {
		_, err = e.auth.Login(ctx, application.LoginInput{Email: "user1@example.com", Password: pw})
		wantErr(t, err, domain.ErrInvalidCredentials)
	}
	wantErr(t, e.svc.Mail.RequestPasswordReset(ctx, "user1@example.com"), nil)
	wantErr(t, e.svc.Mail.ResetPassword(ctx, linkToken(t, onlyMail(t, e.deliver(t), domain.MailResetPassword)),
		"a brand new passphrase"), nil)
	_, err = e.auth.Login(ctx, application.LoginInput{Email: "user1@example.com", Password: "a brand new passphrase"})
	wantErr(t, err, nil)

	// Refused records are not counted.
	e2 := newEnv(t)
	recs = importRecords(3)
	recs[0].PasswordHash, recs[1].PasswordHash, recs[1].Email = "", "", "invalid"
	report, err = newImportService(t, e2.store.Users(), e2).ImportUsers(ctx, recs, application.ImportOptions{SkipInvalid: true})
	wantErr(t, err, nil)
	if report.Imported != 2 || report.Skipped != 1 || report.WithoutPassword != 1 {
		t.Fatalf("report %+v, want 2 imported, 1 skipped, 1 without a password", report)
	}
}
