// Package ci tests the scripts of .ci that decide what a CI run reports.
package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the repository's, from this package's directory.
const root = "../.."

// excuse is the line the Makefile's fuzz-run prints for a run Go's fuzz
// coordinator stopped at -fuzztime with no failing input, for the target
// name: read from the Makefile, so that a change of its wording that
// .ci/failures.awk does not follow fails here.
func excuse(t *testing.T, name string) string {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`echo "(fuzz: \$\$name: Go's fuzz coordinator stopped[^"]*)"`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile's fuzz-run prints no excuse line for a coordinator stop")
	}
	return strings.ReplaceAll(string(m[1]), "$$name", name)
}

// failures runs .ci/failures.awk on log and returns the lines it prints.
func failures(t *testing.T, log string) []string {
	t.Helper()
	awk, err := exec.LookPath("awk")
	if err != nil {
		t.Fatal("awk is missing; .ci/run needs it too")
	}
	f := filepath.Join(t.TempDir(), "test.log")
	if err := os.WriteFile(f, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(awk, "-f", filepath.Join(root, ".ci", "failures.awk"), f).CombinedOutput() //nolint:gosec // G204: awk on the repository's own script and the test's log
	if err != nil {
		t.Fatalf("awk: %v\n%s", err, out)
	}
	return slices.DeleteFunc(strings.Split(string(out), "\n"), func(l string) bool { return l == "" })
}

// The count of .ci/run leaves out a fuzz run the Makefile excused, and
// only that: a test's failure, the same target failing under go test -v,
// a fuzz run that wrote a failing input and one stopped without the
// Makefile's excuse all count.
func TestFailures_leave_out_only_the_excused_fuzz_runs(t *testing.T) {
	log := strings.Join([]string{
		"=== RUN   TestA",
		"--- PASS: TestA (0.00s)",
		"--- FAIL: TestB (0.00s)",
		"    --- FAIL: TestB/sub (0.00s)",
		"--- FAIL: FuzzOne (0.01s)", // its seeds under go test -v
		"fuzz: FuzzOne in ./adapters/x for 3s",
		"--- FAIL: FuzzOne (3.01s)",
		"    context deadline exceeded",
		"FAIL",
		excuse(t, "FuzzOne"),
		"fuzz: FuzzTwo in ./adapters/y for 3s",
		"--- FAIL: FuzzTwo (1.20s)",
		"    Failing input written to testdata/fuzz/FuzzTwo/0123",
		"fuzz: FuzzThree in ./adapters/z for 3s",
		"--- FAIL: FuzzThree (3.01s)",
		"    context deadline exceeded",
		excuse(t, "FuzzOne"), // another target's excuse excuses nothing here
		"fuzz: FuzzFour in ./adapters/w for 3s",
		"ok  	example/w	3.1s",
		"--- FAIL: TestLater (0.00s)",
		"",
	}, "\n")
	got := failures(t, log)
	want := []string{
		"--- FAIL: TestB (0.00s)",
		"    --- FAIL: TestB/sub (0.00s)",
		"--- FAIL: FuzzOne (0.01s)",
		"--- FAIL: FuzzTwo (1.20s)",
		"--- FAIL: FuzzThree (3.01s)",
		"--- FAIL: TestLater (0.00s)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("failures:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A log without fuzz runs counts every FAIL line, as grep did.
func TestFailures_without_fuzz_runs(t *testing.T) {
	got := failures(t, "--- FAIL: TestA (0.00s)\n--- PASS: TestB (0.00s)\n  --- FAIL: TestA/x (0.00s)\n")
	if len(got) != 2 {
		t.Errorf("failures %q, want the two FAIL lines", got)
	}
}
