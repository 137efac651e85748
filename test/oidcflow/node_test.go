package oidcflow

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/chromium"
	"github.com/userd/userd/test/kit"
)

// nodeDir is where `make node-deps` installs the pinned Node.js packages
// of the tests, relative to the module's root.
const nodeDir = "test/node"

// nodeTimeout bounds a script: each of its calls is one request to a
// server on this machine.
const nodeTimeout = time.Minute

// script is a running Node.js script of this package, which talks to the
// test in JSON lines.
type script struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Scanner
	stderr *strings.Builder
}

// reportModule is the module both scripts import: what they tell the
// test of an error.
const reportModule = "report.mjs"

// startScript runs the script name of this directory with node and the
// argument arg (JSON-encoded), after checking that node and the pinned
// packages are there: without them t skips, or fails when CI=true. The
// script is copied into a temporary directory beside a link to
// test/node/node_modules, where its imports resolve (an ES module
// resolves a bare specifier from its own directory up, and NODE_PATH
// does not apply to import).
func startScript(t *testing.T, name string, arg any, packages ...string) *script {
	t.Helper()
	node := kit.Tool(t, "node", "nodejs", "the provider is not checked with openid-client and oauth4webapi")
	modules := nodeModules(t, packages...)
	dir := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	// The script and the module of error reports both scripts import.
	for _, file := range []string{name, reportModule} {
		src, err := os.ReadFile(file) //nolint:gosec // G304: a script of this package
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), src, 0o600); err != nil { //nolint:gosec // G703: the test's own temporary directory, the name a script of this package
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, name)
	js, err := json.Marshal(arg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
	t.Cleanup(cancel)
	//nolint:gosec // G204: node on this package's own script
	cmd := exec.CommandContext(ctx, node, path, string(js))
	cmd.Dir = dir
	s := &script{t: t, cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = s.stderr
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.out = bufio.NewScanner(stdout)
	s.out.Buffer(make([]byte, 0, 64<<10), 4<<20)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.stdin.Close() // it may have ended
		if err := cmd.Wait(); err != nil && !t.Failed() {
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Errorf("node %s: %v", name, err)
			}
		}
		if t.Failed() && s.stderr.Len() > 0 {
			t.Logf("node %s's stderr:\n%s", name, s.stderr.String())
		}
	})
	return s
}

// nodeModules is test/node/node_modules, with the packages named
// installed at the versions test/node/package.json pins; without them t
// skips, or fails when CI=true.
func nodeModules(t *testing.T, packages ...string) string {
	t.Helper()
	root, err := chromium.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var pins struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(root, nodeDir, "package.json"), &pins)
	modules := filepath.Join(root, nodeDir, "node_modules")
	for _, p := range packages {
		var installed struct {
			Version string `json:"version"`
		}
		data, err := os.ReadFile(filepath.Join(modules, p, "package.json")) //nolint:gosec // G304: a package of test/node
		if err != nil || json.Unmarshal(data, &installed) != nil {
			kit.Missing(t, "%s is not installed in %s/node_modules (make node-deps, which needs npm)", p, nodeDir)
		}
		if pins.Dependencies[p] == "" || installed.Version != pins.Dependencies[p] {
			kit.Missing(t, "%s %s is installed, %q is pinned in %s/package.json (make node-deps)", p, installed.Version, pins.Dependencies[p], nodeDir)
		}
	}
	return modules
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path) //nolint:gosec // G304: a file of the module
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// send writes v to the script's stdin as one JSON line.
func (s *script) send(v any) {
	s.t.Helper()
	js, err := json.Marshal(v)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := fmt.Fprintf(s.stdin, "%s\n", js); err != nil {
		s.t.Fatalf("write to the script: %v", err)
	}
}

// step is the member that names a line of the script.
type step struct {
	Step string `json:"step"`
}

// recv reads the script's next line and fails t unless it is of the step
// want (a line of step "error" says what the library threw).
func (s *script) recv(want string, v any) {
	s.t.Helper()
	if !s.out.Scan() {
		s.t.Fatalf("the script ended before its %q line (%v); stderr:\n%s", want, s.out.Err(), s.stderr.String())
	}
	line := s.out.Bytes()
	var st step
	if err := json.Unmarshal(line, &st); err != nil {
		s.t.Fatalf("the script wrote %q: %v", line, err)
	}
	if st.Step != want {
		s.t.Fatalf("the script's step is %q, want %q:\n%s", st.Step, want, line)
	}
	if err := json.Unmarshal(line, v); err != nil {
		s.t.Fatalf("the script's %q line %s: %v", want, line, err)
	}
	s.t.Logf("%s: %s", want, line)
}
