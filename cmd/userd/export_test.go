package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx/fxtest"

	"github.com/userd/userd/adapters/passwordhash"
	"github.com/userd/userd/domain"
)

// exportPasswords are the users of the export test and their passwords:
// a bcrypt hash (importHash) and an argon2id one.
const argonPassword = "a different passphrase"

// argonHash hashes argonPassword with cheap argon2id parameters, under
// the configured ceiling of an import.
func argonHash(t *testing.T) string {
	t.Helper()
	h, err := passwordhash.New(passwordhash.Params{Memory: 64, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}).
		Hash(t.Context(), argonPassword)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Users imported into one SQLite database, exported, and imported into an
// empty one sign in there with the same passwords, their metadata kept.
func TestUsersExport_then_import_signs_the_same_people_in(t *testing.T) {
	first := importDB(t)
	lines := strings.Join([]string{
		`{"name":"Ada","email":"ada@example.com","passwordHash":"` + importHash() + `","profiles":["ROLE_CUSTOMER"],` +
			`"emailVerified":true,"metadata":{"theme":"dark","n":[1,2]},"appMetadata":{"plan":"pro"}}`,
		`{"name":"Bea","email":"bea@example.com","passwordHash":"` + argonHash(t) + `","profiles":["ROLE_ADMIN","ROLE_CUSTOMER"]}`,
		`{"name":"Cy","email":"cy@example.com","passwordHash":"` + importHash() + `","profiles":["ROLE_CUSTOMER"],"disabled":true}`,
		// No password, as a sign-in through another provider or by email
		// makes an account.
		`{"name":"Dee","email":"dee@example.com","profiles":["ROLE_CUSTOMER"],"emailVerified":true}`,
	}, "\n") + "\n"
	if code, out, errOut := runCLI(t, lines, "users", "import", "--format", "jsonl", "-"); code != exitOK {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	before := storedUsers(t, first)

	file := filepath.Join(t.TempDir(), "users.jsonl")
	code, out, errOut := runCLI(t, "", "users", "export", "--output", file)
	if code != exitOK || out != "" {
		t.Fatalf("export: code %d, stdout %q, stderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "users export: 4 users exported") ||
		!strings.Contains(errOut, "second factors and sessions are not exported: 0 users had a second factor") ||
		!strings.Contains(errOut, "1 users have no password (they signed in through another provider or by email): "+
			"users import makes them again without one") {
		t.Errorf("export's summary:\n%s", errOut)
	}
	checkMode(t, file)
	checkExportLines(t, file, 4)

	second := importDB(t)
	code, out, errOut = runCLI(t, "", "users", "import", file)
	if code != exitOK {
		t.Fatalf("import of the export: %d %s %s", code, out, errOut)
	}
	checkSummary(t, out, 4, 4, 0, 0)
	if !strings.Contains(out, "1 without a password") {
		t.Errorf("import's summary: %q", out)
	}
	after := map[domain.Email]domain.User{}
	for _, u := range storedUsers(t, second) {
		after[u.Email] = u
	}
	if len(after) != len(before) {
		t.Fatalf("%d users after the round trip, want %d", len(after), len(before))
	}
	for _, u := range before {
		v := after[u.Email]
		if v.Name != u.Name || v.PasswordHash != u.PasswordHash || !v.Profiles.Equal(u.Profiles) || v.EmailVerified != u.EmailVerified ||
			v.Disabled != u.Disabled || !v.Metadata.Equal(u.Metadata) || !v.AppMetadata.Equal(u.AppMetadata) {
			t.Errorf("after the round trip %+v\nwant %+v", v, u)
		}
	}
	if md := after["ada@example.com"].Metadata.String(); md != `{"n":[1,2],"theme":"dark"}` {
		t.Errorf("Ada's metadata %s", md)
	}

	if dee := after["dee@example.com"]; dee.PasswordHash != "" {
		t.Errorf("Dee came back with a password hash %q", dee.PasswordHash)
	}

	addr, mailDir := freeAddr(t), t.TempDir()
	app := fxtest.New(t, serverOptions(testConfig(t, map[string]string{"USERD_DB_DSN": second, "USERD_HTTP_ADDR": addr,
		"USERD_MAIL_DIR": mailDir}), io.Discard))
	app.RequireStart()
	defer app.RequireStop()
	for _, c := range []struct {
		email, password string
		want            int
	}{
		{"ada@example.com", importPassword, http.StatusOK},
		{"bea@example.com", argonPassword, http.StatusOK},
		{"bea@example.com", importPassword, http.StatusUnauthorized},
		{"cy@example.com", importPassword, http.StatusForbidden}, // still disabled
		{"dee@example.com", importPassword, http.StatusUnauthorized},
	} {
		status, metadata := signIn(t, addr, c.email, c.password)
		if status != c.want {
			t.Errorf("sign-in of %s: %d, want %d", c.email, status, c.want)
		}
		if c.email == "ada@example.com" && metadata != `{"n":[1,2],"theme":"dark"}` {
			t.Errorf("Ada's metadata in the token response: %s", metadata)
		}
	}

	// Dee sets a password through a reset link, and signs in with it.
	const deePassword = "Dee's own new passphrase"
	if status := postJSON(t, "http://"+addr+"/auth/password-reset", map[string]string{"email": "dee@example.com"}); status != http.StatusAccepted {
		t.Fatalf("password reset request: %d", status)
	}
	token := resetToken(t, mailDir)
	if status := postJSON(t, "http://"+addr+"/auth/password-reset/confirm",
		map[string]string{"token": token, "password": deePassword}); status != http.StatusNoContent {
		t.Fatalf("password reset: %d", status)
	}
	if status, _ := signIn(t, addr, "dee@example.com", deePassword); status != http.StatusOK {
		t.Errorf("Dee's sign-in with the password set by the reset: %d", status)
	}
}

// postJSON posts body as JSON and returns the status.
func postJSON(t *testing.T, target string, body any) int {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(target, "application/json", bytes.NewReader(b)) //nolint:gosec,noctx // the test's own server
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// resetLink finds the token of a reset link in a message of USERD_MAIL_DIR
// (quoted-printable or not).
var resetLink = regexp.MustCompile(`reset-password\?token=([A-Za-z0-9_-]+)`)

// resetToken waits for the reset message in dir and returns its token.
func resetToken(t *testing.T, dir string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
		for _, f := range files {
			raw, err := os.ReadFile(f) //nolint:gosec // G304: the test's own directory
			if err != nil {
				t.Fatal(err)
			}
			text := strings.NewReplacer("=\r\n", "", "=\n", "", "=3D", "=").Replace(string(raw))
			if m := resetLink.FindStringSubmatch(text); m != nil {
				return m[1]
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no reset message in %s", dir)
	return ""
}

// signIn posts a password sign-in and returns the status and the user's
// metadata.
func signIn(t *testing.T, addr, email, password string) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"email":%q,"password":%q}`, email, password)
	resp, err := http.Post("http://"+addr+"/auth/login", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var got struct {
		User struct {
			Metadata json.RawMessage `json:"metadata"`
		} `json:"user"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&got) // a refusal has no user
	return resp.StatusCode, string(got.User.Metadata)
}

// checkMode checks that file is readable by its owner only.
func checkMode(t *testing.T, file string) {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", file, fi.Mode().Perm())
	}
}

// checkExportLines checks that file holds n JSON lines with exactly the
// keys import reads.
func checkExportLines(t *testing.T, file string, n int) {
	t.Helper()
	f, err := os.Open(file) //nolint:gosec // G304: the test's own file
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	count := 0
	for sc.Scan() {
		count++
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &obj); err != nil {
			t.Fatalf("line %d: %v", count, err)
		}
		if len(obj) != len(jsonKeys) {
			t.Errorf("line %d has keys %v, want %v", count, obj, jsonKeys)
		}
		for _, k := range jsonKeys {
			if _, ok := obj[k]; !ok {
				t.Errorf("line %d has no %q", count, k)
			}
		}
	}
	if count != n {
		t.Errorf("%d lines, want %d", count, n)
	}
}

func TestUsersExport_output_file(t *testing.T) {
	importDB(t)
	if code, out, errOut := runCLI(t, generated(formatJSONL, 2), "users", "import", "--format", "jsonl", "-"); code != exitOK {
		t.Fatalf("import: %d %s %s", code, out, errOut)
	}
	file := writeFile(t, "taken.jsonl", "keep me\n")
	code, _, errOut := runCLI(t, "", "users", "export", "-o", file)
	if code == exitOK || !strings.Contains(errOut, "exists: pass --force to overwrite it") {
		t.Fatalf("export over an existing file: code %d, stderr %s", code, errOut)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me\n" { //nolint:gosec // G304: the test's own file
		t.Fatalf("the refused file was changed: %q", b)
	}
	if err := os.Chmod(file, 0o644); err != nil { //nolint:gosec // G302: readable by others on purpose, for --force to close
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "", "users", "export", "-o", file, "--force"); code != exitOK {
		t.Fatalf("export --force: code %d, stderr %s", code, errOut)
	}
	checkMode(t, file)
	checkExportLines(t, file, 2)

	// Standard output by default; --force alone is a usage error.
	code, out, errOut := runCLI(t, "", "users", "export")
	if code != exitOK || strings.Count(out, "\n") != 2 || !strings.Contains(errOut, "2 users exported") {
		t.Fatalf("export to stdout: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, _ := runCLI(t, "", "users", "export", "--force"); code != exitUsage {
		t.Fatalf("--force without --output: code %d, want %d", code, exitUsage)
	}
}

// Metadata in both import formats: a JSON object (in CSV, a quoted cell
// holding one); anything else is that line's error.
func TestImport_metadata(t *testing.T) {
	dsn := importDB(t)
	h := importHash()
	csvText := "name,email,password_hash,profiles,metadata,app_metadata,disabled\n" +
		`Ada,ada@example.com,"` + h + `",ROLE_CUSTOMER,"{""b"":1, ""a"":""x""}",,` + "\n" +
		`Bob,bob@example.com,"` + h + `",ROLE_CUSTOMER,,"{""plan"":""pro""}",true` + "\n" +
		`Cy,cy@example.com,"` + h + `",ROLE_CUSTOMER,"{not json}",,` + "\n"
	code, out, errOut := runCLI(t, csvText, "users", "import", "--format", "csv", "--skip-invalid", "-")
	if code != exitOK {
		t.Fatalf("csv: code %d, stderr:\n%s", code, errOut)
	}
	checkSummary(t, out, 3, 2, 1, 0)
	if !strings.Contains(errOut, "line 4: metadata: must be a JSON object") {
		t.Errorf("the bad cell is not reported:\n%s", errOut)
	}
	jsonText := `{"name":"Dee","email":"dee@example.com","passwordHash":"` + h + `","profiles":["ROLE_CUSTOMER"],"metadata":{"z":{"y":null}}}` + "\n" +
		`{"name":"Eve","email":"eve@example.com","passwordHash":"` + h + `","profiles":["ROLE_CUSTOMER"],"appMetadata":[1]}` + "\n" +
		`{"name":"Fay","email":"fay@example.com","passwordHash":"` + h + `","profiles":["ROLE_CUSTOMER"],"metadata":null}` + "\n"
	code, out, errOut = runCLI(t, jsonText, "users", "import", "--format", "jsonl", "--skip-invalid", "-")
	if code != exitOK {
		t.Fatalf("jsonl: code %d, stderr:\n%s", code, errOut)
	}
	checkSummary(t, out, 3, 1, 2, 0)
	for _, want := range []string{"line 2: appMetadata: must be a JSON object", "line 3: metadata: must be a JSON object"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("%q is not reported:\n%s", want, errOut)
		}
	}
	want := map[domain.Email]string{
		"ada@example.com": `{"a":"x","b":1} {} false`,
		"bob@example.com": `{} {"plan":"pro"} true`,
		"dee@example.com": `{"z":{"y":null}} {} false`,
	}
	users := storedUsers(t, dsn)
	if len(users) != len(want) {
		t.Fatalf("stored %d users, want %d", len(users), len(want))
	}
	for _, u := range users {
		if got := fmt.Sprintf("%s %s %v", u.Metadata, u.AppMetadata, u.Disabled); got != want[u.Email] {
			t.Errorf("%s: %s, want %s", u.Email, got, want[u.Email])
		}
	}
}
