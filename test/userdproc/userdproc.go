// Package userdproc is the real userd binary for the suites that test it
// from outside (test/attack, test/mailflow, test/multinode, …): built once
// a suite (build.go), started as a child process with a given
// configuration, waited for until it is ready, its commands run, stopped,
// and its log read when something goes wrong; and the databases and
// services its nodes use (postgres.go, mysql.go, redis.go).
package userdproc

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/userd/userd/test/logbuf"
)

// Node is one userd process: its address, configuration and log.
type Node struct {
	t    testing.TB
	bin  string
	env  []string
	Addr string
	// Base is "http://" + Addr.
	Base string
	Log  *logbuf.Buffer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// New prepares (does not start) a node of the binary bin listening on a
// free 127.0.0.1 port, configured by env on top of USERD_HTTP_ADDR; an
// address in env's own USERD_HTTP_ADDR is the node's instead (a test that
// must know it before, for USERD_PUBLIC_URL, takes one from FreeAddr). The
// caller's own USERD_* variables are dropped, so that a developer's
// settings cannot change what a test tests. The node is stopped when the
// test ends.
func New(t testing.TB, bin string, env map[string]string) *Node {
	t.Helper()
	addr, given := env["USERD_HTTP_ADDR"]
	if !given {
		addr = FreeAddr(t)
	}
	n := &Node{t: t, bin: bin, Addr: addr, Base: "http://" + addr, Log: &logbuf.Buffer{}}
	// Messages go to the test's own directory unless the test says
	// otherwise, never into the checkout (USERD_MAIL_DIR's default is
	// ./mail).
	all := map[string]string{"USERD_HTTP_ADDR": addr, "USERD_MAIL_DIR": t.TempDir()}
	for k, v := range env {
		all[k] = v
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "USERD_") {
			n.env = append(n.env, kv)
		}
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range all {
			if !yield(k) {
				return
			}
		}
	}) {
		n.env = append(n.env, k+"="+all[k])
	}
	t.Cleanup(n.Stop)
	return n
}

// Start runs `userd serve` and waits until /readyz answers 200.
func (n *Node) Start() {
	n.t.Helper()
	if err := n.StartErr(); err != nil {
		n.t.Fatal(err)
	}
}

// StartErr runs `userd serve` and waits until /readyz answers 200, or
// returns why it did not: the process exited (its log tail says why) or
// did not become ready in 30 s.
func (n *Node) StartErr() error {
	cmd := exec.Command(n.bin, "serve") //nolint:gosec // G204: the binary the suite built, started with its own subcommand
	cmd.Env = n.env
	cmd.Stdout, cmd.Stderr = n.Log, n.Log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start userd: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the exit code is read from ProcessState
		close(done)
	}()
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("userd exited during start (code %d); log:\n%s", cmd.ProcessState.ExitCode(), n.Log.String())
		default:
		}
		if res, err := client.Get(n.Base + "/readyz"); err == nil {
			_ = res.Body.Close() // nothing to read
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("userd not ready after 30 s; log:\n%s", n.Log.String())
}

// Stop ends the process with SIGTERM (SIGKILL after 15 s); stopping a
// node that does not run does nothing.
func (n *Node) Stop() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM) // it may have exited meanwhile
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill() // it ignored SIGTERM; the test reports below
		<-done
		n.t.Errorf("userd ignored SIGTERM for 15 s; log:\n%s", n.Log.String())
	}
}

// Kill ends the process with SIGKILL, as a crash or the OOM killer
// would: no shutdown hook runs. It waits until the process has exited;
// killing a node that does not run does nothing.
func (n *Node) Kill() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill() // it may have exited meanwhile
	<-done
}

// Run runs a userd command (e.g. "keys", "rotate") with the node's
// configuration and stdin, and returns its exit code and output.
func (n *Node) Run(stdin string, args ...string) (code int, stdout, stderr string) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.bin, args...) //nolint:gosec // G204: the binary the suite built, with the test's own arguments
	cmd.Env = n.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		n.t.Fatalf("run userd %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// FreeAddr returns a 127.0.0.1 address with a port free at the time of
// the call.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
