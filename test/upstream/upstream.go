// Package upstream runs, for the tests of userd's sign-in through other
// identity providers (test/idpflow), providers that no one here wrote:
// oidc-provider, an OpenID-certified provider that stands for Google or
// Okta (upstream.mjs, [StartOIDC]), and oauth2-mock-server, a provider
// that misbehaves when told to (mockidp.mjs, [StartMock]). Each is a
// Node.js process on a free 127.0.0.1 port, waited for until its
// discovery document answers, stopped when the test ends.
//
// The Node.js packages are those pinned in test/node (make node-deps);
// without node or them, the test skips, or fails when CI=true.
package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/userdproc"
)

// startTimeout bounds a provider's start: node loads the package and
// generates its keys.
const startTimeout = 30 * time.Second

// dir is this package's directory, where the scripts are.
func dir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no source path of test/upstream")
	}
	return filepath.Dir(file)
}

// NodeModules is test/node/node_modules, with the packages named
// installed at the versions test/node/package.json pins; without node or
// them t skips, or fails when CI=true.
func NodeModules(t testing.TB, packages ...string) string {
	t.Helper()
	kit.Tool(t, "node", "nodejs", "sign-in through other providers is not checked against real ones")
	root := filepath.Join(dir(t), "..", "node")
	var pins struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	data, err := os.ReadFile(filepath.Join(root, "package.json")) //nolint:gosec // G304: test/node's own package.json
	if err != nil || json.Unmarshal(data, &pins) != nil {
		t.Fatalf("test/node/package.json: %v", err)
	}
	modules := filepath.Join(root, "node_modules")
	for _, p := range packages {
		var installed struct {
			Version string `json:"version"`
		}
		data, err := os.ReadFile(filepath.Join(modules, p, "package.json")) //nolint:gosec // G304: a package of test/node
		if err != nil || json.Unmarshal(data, &installed) != nil {
			kit.Missing(t, "%s is not installed in test/node/node_modules (make node-deps, which needs npm)", p)
		}
		if pins.Dependencies[p] == "" || installed.Version != pins.Dependencies[p] {
			kit.Missing(t, "%s %s is installed, %q is pinned in test/node/package.json (make node-deps)", p, installed.Version, pins.Dependencies[p])
		}
	}
	return modules
}

// process is a provider's node process and its output.
type process struct {
	name   string
	cmd    *exec.Cmd
	done   chan struct{}
	mu     sync.Mutex
	stderr strings.Builder
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.Write(b)
}

func (p *process) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// start runs the script name of this package with node, its argument arg
// (JSON), in a temporary directory beside a link to test/node's
// node_modules (an ES module resolves a bare specifier from its own
// directory up), and returns the issuer its "ready" line names, once the
// issuer's discovery document answers. The process ends with t.
func start(t testing.TB, name string, arg any, packages ...string) string {
	t.Helper()
	node := kit.Tool(t, "node", "nodejs", "sign-in through other providers is not checked against real ones")
	modules := NodeModules(t, packages...)
	work := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir(t), name)) //nolint:gosec // G304: a script of this package
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(work, name)
	if err := os.WriteFile(script, src, 0o600); err != nil { //nolint:gosec // G703: the test's own temporary directory
		t.Fatal(err)
	}
	js, err := json.Marshal(arg)
	if err != nil {
		t.Fatal(err)
	}
	p := &process{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(node, script, string(js)) //nolint:gosec // G204: node on this package's own script
	p.cmd.Dir = work
	p.cmd.Stderr = p
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			var line struct {
				Step   string `json:"step"`
				Issuer string `json:"issuer"`
			}
			if json.Unmarshal(lines.Bytes(), &line) == nil && line.Step == "ready" {
				ready <- line.Issuer
			}
		}
	}()
	go func() {
		_ = p.cmd.Wait() // the exit code is read from ProcessState
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("node %s's stderr:\n%s", name, p.log())
		}
	})
	var issuer string
	select {
	case issuer = <-ready:
	case <-p.done:
		t.Fatalf("node %s exited during start (code %d); stderr:\n%s", name, p.cmd.ProcessState.ExitCode(), p.log())
	case <-time.After(startTimeout):
		t.Fatalf("node %s did not start in %v; stderr:\n%s", name, startTimeout, p.log())
	}
	waitDiscovery(t, issuer)
	return issuer
}

// stop ends the process with SIGTERM, SIGKILL after 5 s.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM) // it may have exited meanwhile
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill() // it ignored SIGTERM
		<-p.done
	}
}

// waitDiscovery waits until issuer's discovery document answers 200.
func waitDiscovery(t testing.TB, issuer string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := kit.Client.Do(req)
		if err == nil {
			kit.Discard(res.Body)
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the discovery document of %s did not answer in %v: %v", issuer, startTimeout, errors.Join(err, ctx.Err()))
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// port is the port of a free 127.0.0.1 address.
func port(t testing.TB) string {
	t.Helper()
	addr := userdproc.FreeAddr(t)
	return addr[strings.LastIndexByte(addr, ':')+1:]
}

// Claims are a person's claims at a provider.
type Claims struct {
	Subject       string `json:"sub,omitempty"`
	Email         string `json:"email,omitempty"`
	EmailVerified bool   `json:"email_verified"`
	Name          string `json:"name,omitempty"`
}

// String is the claims for a message: no secret in them.
func (c Claims) String() string {
	return fmt.Sprintf("%s <%s> verified=%v", c.Subject, c.Email, c.EmailVerified)
}
