package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx/fxtest"
	"golang.org/x/crypto/bcrypt"

	"github.com/userd/userd/adapters/gormstore"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

const importPassword = "correct horse battery staple"

// importHash is one bcrypt hash at the lowest cost, shared by every
// generated line: the import checks hashes, it does not compute any.
var importHash = sync.OnceValue(func() string {
	h, err := bcrypt.GenerateFromPassword([]byte(importPassword), bcrypt.MinCost)
	if err != nil {
		panic(err)
	}
	return string(h)
})

// importDB points the CLI at a fresh SQLite file and returns its path.
func importDB(t *testing.T) string {
	t.Helper()
	dsn := filepath.Join(t.TempDir(), "userd.db")
	t.Setenv("USERD_DB_DSN", dsn)
	return dsn
}

// storedUsers reads every user of the SQLite file.
func storedUsers(t *testing.T, dsn string) []domain.User {
	t.Helper()
	db, err := gormstore.Open(gormstore.DriverSQLite, dsn, gormstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, db)
	users, err := gormstore.NewUserRepository(db).List(t.Context(), ports.UserListQuery{Page: domain.Page[domain.UserID]{Limit: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	return users
}

// auditEvents reads the audit trail of the SQLite file as "type detail".
func auditEvents(t *testing.T, dsn string) []string {
	t.Helper()
	db, err := gormstore.Open(gormstore.DriverSQLite, dsn, gormstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mustClose(t, db)
	events, err := gormstore.NewAuditLog(db).List(t.Context(), ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = string(e.Type) + " " + e.Detail
	}
	return out
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// generated returns n lines of users in the format, with a header for CSV.
func generated(format string, n int) string {
	var b strings.Builder
	if format == formatCSV {
		b.WriteString("name,email,password_hash,profiles\n")
	}
	for i := range n {
		profiles := []string{"ROLE_CUSTOMER"}
		if i%100 == 0 {
			profiles = []string{"ROLE_ADMIN", "ROLE_CUSTOMER"}
		}
		name, email := fmt.Sprintf("User %d", i), fmt.Sprintf("User%d@Example.com", i)
		if format == formatCSV {
			fmt.Fprintf(&b, "%s,%s,%s,%s\n", name, email, importHash(), strings.Join(profiles, "|"))
		} else {
			line, _ := json.Marshal(map[string]any{"name": name, "email": email, "passwordHash": importHash(), "profiles": profiles})
			b.Write(append(line, '\n'))
		}
	}
	return b.String()
}

var summaryRE = regexp.MustCompile(`: (\d+) lines: (\d+) imported, (\d+) skipped, (\d+) failed`)

// checkSummary checks the counts of the summary line on stdout.
func checkSummary(t *testing.T, stdout string, total, imported, skipped, failed int) {
	t.Helper()
	m := summaryRE.FindStringSubmatch(stdout)
	want := []string{fmt.Sprint(total), fmt.Sprint(imported), fmt.Sprint(skipped), fmt.Sprint(failed)}
	if m == nil || !slices.Equal(m[1:], want) {
		t.Fatalf("summary %q, want %v lines/imported/skipped/failed", stdout, want)
	}
}

// 10,000 generated users of each format go into SQLite in one run each.
func TestImport_10000_users_into_sqlite(t *testing.T) {
	for _, format := range []string{formatCSV, formatJSONL} {
		t.Run(format, func(t *testing.T) {
			dsn := importDB(t)
			file := writeFile(t, "users."+format, generated(format, 10_000))
			start := time.Now()
			code, out, errOut := runCLI(t, "", "users", "import", file)
			elapsed := time.Since(start)
			if code != exitOK {
				t.Fatalf("code %d, stdout %q, stderr:\n%s", code, out, errOut)
			}
			t.Logf("imported 10,000 %s lines into SQLite in %s", format, elapsed.Round(time.Millisecond))
			checkSummary(t, out, 10_000, 10_000, 0, 0)
			// stderr is no terminal here: plain progress lines.
			for _, want := range []string{"checking 0/10000 (0%)", "checking 5000/10000 (50%)", "storing 10000/10000 (100%)"} {
				if !strings.Contains(errOut, want) {
					t.Errorf("progress %q missing:\n%s", want, errOut)
				}
			}
			users := storedUsers(t, dsn)
			if len(users) != 10_000 {
				t.Fatalf("%d users stored, want 10000", len(users))
			}
			admins := 0
			for _, u := range users {
				if u.PasswordHash != importHash() || u.CreatedAt.IsZero() || !strings.HasPrefix(u.Name, "User ") {
					t.Fatalf("stored %+v", u)
				}
				if u.IsAdmin() {
					admins++
				}
			}
			if admins != 100 {
				t.Errorf("%d admins, want 100", admins)
			}
			if !slices.ContainsFunc(users, func(u domain.User) bool { return u.Email == "user9999@example.com" }) {
				t.Error("emails are not stored normalised")
			}
		})
	}
}

const badCSV = `name,email,password_hash,profiles
Ada,ada@example.com,%[1]s,ROLE_CUSTOMER
Bob,bob-at-example.com,%[1]s,ROLE_CUSTOMER
,carol@example.com,%[1]s,ROLE_CUSTOMER
Dan,dan@example.com,$2b$04$short,ROLE_CUSTOMER
Eve,eve@example.com,%[1]s,ROLE_ROOT
Fay,fay@example.com,%[1]s
Gus,ADA@example.com,%[1]s,ROLE_CUSTOMER
Hal,hal@example.com,%[1]s,
Ida,ida@example.com,"%[1]s",ROLE_ADMIN;ROLE_CUSTOMER
Jon,jon@example.com,$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA,ROLE_CUSTOMER
Kim,kim@example.com,"$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA",ROLE_CUSTOMER
`

// badCSVErrors are the messages for badCSV, in order.
var badCSVErrors = []string{
	"line 3: email: must contain @",
	"line 4: name: must not be empty",
	"line 5: password_hash: malformed password hash: bcrypt: want $2b$NN$ and 53 characters of [./A-Za-z0-9]",
	`line 6: profiles: unknown profile "ROLE_ROOT" (want ROLE_CUSTOMER or ROLE_ADMIN)`,
	"line 7: 3 fields, want 4 (name,email,password_hash,profiles)",
	"line 8: email: also on line 2",
	"line 9: profiles: must hold at least one profile (ROLE_CUSTOMER, ROLE_ADMIN)",
	`line 11: 6 fields, want 4 (name,email,password_hash,profiles): an argon2id hash holds commas, so quote it ("$argon2id$…")`,
	"line 12: password_hash: malformed password hash: not argon2id ($argon2id$…) or bcrypt ($2a$, $2b$, $2y$)",
}

func TestImport_bad_lines(t *testing.T) {
	dsn := importDB(t)
	file := writeFile(t, "bad.csv", fmt.Sprintf(badCSV, importHash()))

	// By default nothing is written and every bad line is reported.
	code, out, errOut := runCLI(t, "", "users", "import", file)
	if code != exitFailure {
		t.Fatalf("code %d, want 1; stderr:\n%s", code, errOut)
	}
	for _, want := range badCSVErrors {
		if !strings.Contains(errOut, want+"\n") {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(errOut, "9 of 11 lines are invalid; nothing was imported (fix them, or pass --skip-invalid to import the 2 others)") {
		t.Errorf("stderr lacks the refusal:\n%s", errOut)
	}
	if !strings.Contains(out, "11 lines: 0 imported, 9 invalid, nothing written") {
		t.Errorf("summary %q", out)
	}
	if n := len(storedUsers(t, dsn)); n != 0 {
		t.Fatalf("a refused import stored %d users", n)
	}

	// With --skip-invalid the two good lines are.
	code, out, errOut = runCLI(t, "", "users", "import", "--skip-invalid", file)
	if code != exitOK {
		t.Fatalf("--skip-invalid: code %d, stderr:\n%s", code, errOut)
	}
	checkSummary(t, out, 11, 2, 9, 0)
	for _, want := range badCSVErrors {
		if !strings.Contains(errOut, want+"\n") {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	var emails []string
	for _, u := range storedUsers(t, dsn) {
		emails = append(emails, u.Email.String())
		if u.Email == "ida@example.com" && !u.Profiles.Equal(domain.Profiles{domain.ProfileAdmin, domain.ProfileCustomer}) {
			t.Errorf("ida's profiles %v", u.Profiles)
		}
	}
	slices.Sort(emails)
	if !slices.Equal(emails, []string{"ada@example.com", "ida@example.com"}) {
		t.Fatalf("stored %v, want ada and ida", emails)
	}
	if events := auditEvents(t, dsn); len(events) != 2 ||
		!slices.Equal([]string{events[0], events[1]}, []string{
			"user.created profiles=ROLE_CUSTOMER origin=import",
			"user.created profiles=ROLE_ADMIN,ROLE_CUSTOMER origin=import",
		}) {
		t.Errorf("audit trail %q, want one user.created per imported user", events)
	}

	// The same file again: the imported lines are registered now.
	code, out, errOut = runCLI(t, "", "users", "import", "--skip-invalid", file)
	if code != exitOK || !strings.Contains(errOut, "line 2: email: already registered\n") ||
		!strings.Contains(errOut, "line 10: email: already registered\n") {
		t.Fatalf("second run: code %d, stderr:\n%s", code, errOut)
	}
	checkSummary(t, out, 11, 0, 11, 0)
}

// Duplicates within the file and against the database, in JSON lines,
// with the JSON-specific faults.
func TestImport_duplicates_and_bad_json(t *testing.T) {
	dsn := importDB(t)
	h := importHash()
	first := writeFile(t, "first.jsonl",
		fmt.Sprintf(`{"name":"Old","email":"old@example.com","passwordHash":%q,"profiles":["ROLE_CUSTOMER"]}`+"\n", h))
	if code, out, errOut := runCLI(t, "", "users", "import", first); code != exitOK {
		t.Fatalf("first import: %d %s %s", code, out, errOut)
	}

	lines := []string{
		fmt.Sprintf(`{"name":"New","email":"new@example.com","passwordHash":%q,"profiles":["ROLE_CUSTOMER"]}`, h), // 1
		fmt.Sprintf(`{"name":"Old again","email":"OLD@example.com","passwordHash":%q,"profiles":["ROLE_CUSTOMER"]}`, h),
		fmt.Sprintf(`{"name":"New again","email":" new@EXAMPLE.com","passwordHash":%q,"profiles":["ROLE_CUSTOMER"]}`, h),
		``, // blank lines are skipped, but counted
		`{"name":"Broken","email":`,
		fmt.Sprintf(`{"name":"X","EMAIL":"x@example.com","passwordHash":%q,"profiles":["ROLE_CUSTOMER"]}`, h),
		fmt.Sprintf(`{"name":"Y","email":"y@example.com","passwordHash":%q,"profiles":"ROLE_CUSTOMER"}`, h),
		`["not","an","object"]`,
		fmt.Sprintf(`{"name":"Z","email":"z@example.com","passwordHash":%q,"profiles":["ROLE_CUSTOMER"]} {}`, h),
		`{"name":"Plain","email":"plain@example.com","passwordHash":"hunter2","profiles":["ROLE_CUSTOMER"]}`,
		fmt.Sprintf(`{"name":"Nulls","email":"nulls@example.com","passwordHash":%q,"profiles":null}`, h),
	}
	file := writeFile(t, "dups.ndjson", strings.Join(lines, "\n")+"\n")
	code, out, errOut := runCLI(t, "", "users", "import", "--skip-invalid", file)
	if code != exitOK {
		t.Fatalf("code %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"line 2: email: already registered",
		"line 3: email: also on line 1",
		"line 5: JSON: unexpected end of JSON input",
		`line 6: unknown key "EMAIL": want name, email, passwordHash, profiles, emailVerified, disabled, metadata, appMetadata`,
		"line 7: profiles: must be an array of strings",
		"line 8: JSON: want an object",
		"line 9: JSON: invalid character '{' after top-level value",
		"line 10: passwordHash: malformed password hash: not argon2id ($argon2id$…) or bcrypt ($2a$, $2b$, $2y$)",
		"line 11: profiles: must hold at least one profile (ROLE_CUSTOMER, ROLE_ADMIN)",
	} {
		if !strings.Contains(errOut, want+"\n") {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "hunter2") || strings.Contains(errOut, h) {
		t.Error("an error message quotes a password hash")
	}
	checkSummary(t, out, 10, 1, 9, 0)
	if n := len(storedUsers(t, dsn)); n != 2 {
		t.Fatalf("%d users stored, want old and new", n)
	}
}

// TestImport_hash_above_the_ceiling: a hash costlier to check than one
// with the configured argon2id is a bad line, named with its field, and
// the import says what to raise; with a configured cost that covers it,
// the same file imports. Before, bcrypt up to cost 16 and argon2id up to
// 1 GiB and 20 passes were imported, whatever the configured cost.
func TestImport_hash_above_the_ceiling(t *testing.T) {
	dsn := importDB(t)
	// The import checks the form of a hash, never computes one: a cost-10
	// hash need not be a real one.
	cost10 := "$2b$10$" + importHash()[7:]
	file := writeFile(t, "u.csv", "name,email,password_hash,profiles\n"+
		"Ada Lovelace,ada@example.com,"+importHash()+",ROLE_CUSTOMER\n"+
		"Grace Hopper,grace@example.com,"+cost10+",ROLE_CUSTOMER\n"+
		`Ida Rhodes,ida@example.com,"$argon2id$v=19$m=65536,t=1,p=1$c2FsdHNhbHRzYWx0c2FsdA$`+strings.Repeat("A", 43)+`",ROLE_CUSTOMER`+"\n")

	code, out, errOut := runCLI(t, "", "users", "import", file)
	if code != exitFailure {
		t.Fatalf("code %d, want 1; stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"line 3: password_hash: hash costlier than the configured argon2id (m=19456 KiB, t=2, p=1): bcrypt cost 10 above 8 (cost 10 needs m×t/p of at least 131072)\n",
		"line 4: password_hash: hash costlier than the configured argon2id (m=19456 KiB, t=2, p=1): argon2id memory 65536 KiB above 19456\n",
		"raise USERD_ARGON2_MEMORY_KIB and/or USERD_ARGON2_ITERATIONS",
		"2 of 3 lines are invalid; nothing was imported",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, cost10) {
		t.Error("an error message quotes a password hash")
	}
	if !strings.Contains(out, "3 lines: 0 imported, 2 invalid, nothing written") {
		t.Errorf("summary %q", out)
	}
	if n := len(storedUsers(t, dsn)); n != 0 {
		t.Fatalf("a refused import stored %d users", n)
	}

	// The ceiling follows the configured cost: 64 MiB and two passes take
	// both.
	t.Setenv("USERD_ARGON2_MEMORY_KIB", "65536")
	code, out, errOut = runCLI(t, "", "users", "import", file)
	if code != exitOK {
		t.Fatalf("with m=65536: code %d, stderr:\n%s", code, errOut)
	}
	checkSummary(t, out, 3, 3, 0, 0)
}

func TestImport_refusals(t *testing.T) {
	t.Run("memory_driver", func(t *testing.T) {
		t.Setenv("USERD_DB_DRIVER", "memory")
		file := writeFile(t, "u.csv", generated(formatCSV, 1))
		code, _, errOut := runCLI(t, "", "users", "import", file)
		if code != exitFailure || !strings.Contains(errOut, "USERD_DB_DRIVER=memory keeps nothing") {
			t.Fatalf("code %d, stderr %q", code, errOut)
		}
	})
	for _, tc := range []struct {
		name, content, want string
	}{
		{"empty_csv", "", "the file is empty: want a header row name,email,password_hash,profiles"},
		{"unknown_column", "name,email,password,profiles\n", `line 1: unknown column "password"`},
		{"missing_column", "name,email,password_hash\n", `line 1: no column "profiles"`},
		{"repeated_column", "name,email,password_hash,profiles,email\n", `line 1: column "email" appears twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := importDB(t)
			code, _, errOut := runCLI(t, "", "users", "import", writeFile(t, "u.csv", tc.content))
			if code != exitFailure || !strings.Contains(errOut, tc.want) {
				t.Fatalf("code %d, stderr %q; want 1 and %q", code, errOut, tc.want)
			}
			if _, err := os.Stat(dsn); err == nil {
				t.Error("the database was opened for a file that cannot be read")
			}
		})
	}
	t.Run("missing_file", func(t *testing.T) {
		importDB(t)
		code, _, errOut := runCLI(t, "", "users", "import", filepath.Join(t.TempDir(), "nope.csv"))
		if code != exitFailure || !strings.Contains(errOut, "no such file") {
			t.Fatalf("code %d, stderr %q", code, errOut)
		}
	})
}

// The header may order the columns freely and start with a byte-order
// mark; standard input works with --format.
func TestImport_stdin_and_column_order(t *testing.T) {
	dsn := importDB(t)
	csvText := "\uFEFFemail,profiles,name,password_hash\nzoe@example.com, ROLE_ADMIN | ROLE_CUSTOMER ,Zoë,\"" + importHash() + "\"\n"
	code, out, errOut := runCLI(t, csvText, "users", "import", "--format", "csv", "-")
	if code != exitOK {
		t.Fatalf("code %d, stderr:\n%s", code, errOut)
	}
	checkSummary(t, out, 1, 1, 0, 0)
	users := storedUsers(t, dsn)
	if len(users) != 1 || users[0].Name != "Zoë" || !users[0].IsAdmin() {
		t.Fatalf("stored %+v", users)
	}
}

// emailVerified comes from the file (the other system verified the
// address), in either format; left out, it is false; a bad value is a bad
// line.
func TestImport_email_verified(t *testing.T) {
	dsn := importDB(t)
	csvText := "name,email,password_hash,profiles,email_verified\n" +
		"Ada,ada@example.com,\"" + importHash() + "\",ROLE_CUSTOMER,TRUE\n" +
		"Bob,bob@example.com,\"" + importHash() + "\",ROLE_CUSTOMER,\n" +
		"Cy,cy@example.com,\"" + importHash() + "\",ROLE_CUSTOMER,yes\n"
	code, out, errOut := runCLI(t, csvText, "users", "import", "--format", "csv", "--skip-invalid", "-")
	if code != exitOK {
		t.Fatalf("csv: code %d, stderr:\n%s", code, errOut)
	}
	checkSummary(t, out, 3, 2, 1, 0)
	if !strings.Contains(out+errOut, "line 4: email_verified: must be true, false or empty") {
		t.Errorf("the bad cell is not reported:\n%s%s", out, errOut)
	}
	jsonText := `{"name":"Dee","email":"dee@example.com","passwordHash":"` + importHash() + `","profiles":["ROLE_CUSTOMER"],"emailVerified":true}` + "\n" +
		`{"name":"Eve","email":"eve@example.com","passwordHash":"` + importHash() + `","profiles":["ROLE_CUSTOMER"]}` + "\n" +
		`{"name":"Fay","email":"fay@example.com","passwordHash":"` + importHash() + `","profiles":["ROLE_CUSTOMER"],"emailVerified":"yes"}` + "\n"
	code, out, errOut = runCLI(t, jsonText, "users", "import", "--format", "jsonl", "--skip-invalid", "-")
	if code != exitOK {
		t.Fatalf("jsonl: code %d, stderr:\n%s", code, errOut)
	}
	checkSummary(t, out, 3, 2, 1, 0)
	if !strings.Contains(out+errOut, "line 3: emailVerified: must be true or false") {
		t.Errorf("the bad value is not reported:\n%s%s", out, errOut)
	}
	want := map[string]bool{"ada@example.com": true, "bob@example.com": false, "dee@example.com": true, "eve@example.com": false}
	users := storedUsers(t, dsn)
	if len(users) != len(want) {
		t.Fatalf("stored %d users, want %d", len(users), len(want))
	}
	for _, u := range users {
		if v, ok := want[string(u.Email)]; !ok || u.EmailVerified != v {
			t.Errorf("%s: emailVerified %v, want %v", u.Email, u.EmailVerified, v)
		}
	}
}

// An imported bcrypt user signs in over HTTP, and that login replaces the
// bcrypt hash with an argon2id one.
func TestImport_bcrypt_user_logs_in_and_is_rehashed(t *testing.T) {
	dsn := importDB(t)
	file := writeFile(t, "u.jsonl", generated(formatJSONL, 3))
	if code, out, errOut := runCLI(t, "", "users", "import", file); code != exitOK {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}

	addr := freeAddr(t)
	cfg := testConfig(t, map[string]string{
		"USERD_DB_DSN":            dsn,
		"USERD_HTTP_ADDR":         addr,
		"USERD_ARGON2_MEMORY_KIB": "64",
		"USERD_ARGON2_ITERATIONS": "1",
	})
	app := fxtest.New(t, serverOptions(cfg, io.Discard))
	app.RequireStart()
	login := func(password string) int {
		body := fmt.Sprintf(`{"email":"user1@example.com","password":%q}`, password)
		resp, err := http.Post("http://"+addr+"/auth/login", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		var got struct {
			User struct {
				Email string `json:"email"`
			} `json:"user"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&got)
		if resp.StatusCode == http.StatusOK && got.User.Email != "user1@example.com" {
			t.Errorf("login answered for %q", got.User.Email)
		}
		return resp.StatusCode
	}
	if code := login("not the password"); code != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", code)
	}
	if code := login(importPassword); code != http.StatusOK {
		t.Fatalf("login of an imported user: %d", code)
	}
	app.RequireStop()

	for _, u := range storedUsers(t, dsn) {
		switch {
		case u.Email == "user1@example.com" && !strings.HasPrefix(u.PasswordHash, "$argon2id$v=19$m=64,t=1,p=1$"):
			t.Errorf("after login the hash is %.12s…, want argon2id with the configured parameters", u.PasswordHash)
		case u.Email != "user1@example.com" && u.PasswordHash != importHash():
			t.Errorf("%s's hash changed without a login", u.Email)
		}
	}
}

func TestProgress(t *testing.T) {
	t.Run("bar", func(t *testing.T) {
		var b bytes.Buffer
		now := time.Unix(0, 0)
		p := &progress{w: &b, bar: true, now: func() time.Time { return now }}
		p.update(application.ImportProgress{Phase: application.ImportChecking, Done: 0, Total: 10})
		now = now.Add(time.Millisecond)
		p.update(application.ImportProgress{Phase: application.ImportChecking, Done: 3, Total: 10}) // too soon: skipped
		now = now.Add(time.Second)
		p.update(application.ImportProgress{Phase: application.ImportChecking, Done: 5, Total: 10})
		p.update(application.ImportProgress{Phase: application.ImportChecking, Done: 10, Total: 10})
		p.update(application.ImportProgress{Phase: application.ImportStoring, Done: 10, Total: 10})
		p.done()
		want := "\rchecking [                              ] 0/10" +
			"\rchecking [###############               ] 5/10" +
			"\rchecking [##############################] 10/10\n" +
			"\rstoring  [##############################] 10/10\n"
		if b.String() != want {
			t.Fatalf("bar output\n%q\nwant\n%q", b.String(), want)
		}
	})
	t.Run("plain", func(t *testing.T) {
		var b bytes.Buffer
		now := time.Unix(0, 0)
		p := &progress{w: &b, now: func() time.Time { return now }}
		for done := 0; done <= 1000; done += 50 {
			p.update(application.ImportProgress{Phase: application.ImportStoring, Done: done, Total: 1000})
		}
		if n := strings.Count(b.String(), "\n"); n != 11 {
			t.Errorf("%d lines for 0..100%%, want 11 (one per tenth):\n%s", n, b.String())
		}
		// A slow phase still shows a line every plainInterval.
		b.Reset()
		p.update(application.ImportProgress{Phase: application.ImportChecking, Done: 0, Total: 1000})
		now = now.Add(plainInterval)
		p.update(application.ImportProgress{Phase: application.ImportChecking, Done: 1, Total: 1000})
		if !strings.Contains(b.String(), "checking 1/1000 (0%)\n") {
			t.Errorf("no line after %s:\n%s", plainInterval, b.String())
		}
	})
}
