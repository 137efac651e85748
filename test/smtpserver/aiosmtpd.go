package smtpserver

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/logbuf"
)

// spoolHandler is the aiosmtpd handler class that keeps each message's
// raw bytes and envelope in a directory for Go to read.
//
//go:embed userd_spool.py
var spoolHandler []byte

// Aiosmtpd is Debian's aiosmtpd SMTP server (python3 -m aiosmtpd) running
// for one test.
type Aiosmtpd struct {
	addr     string
	startTLS bool
	spool    string
	output   *logbuf.Buffer
}

var _ Server = (*Aiosmtpd)(nil)

// StartAiosmtpd runs aiosmtpd on a free port of 127.0.0.1, without TLS,
// until the test ends. Without python3-aiosmtpd it skips the test, except
// in CI (CI=true), where it fails it.
func StartAiosmtpd(t testing.TB) *Aiosmtpd {
	t.Helper()
	return startAiosmtpd(t, false)
}

// StartAiosmtpdStartTLS is StartAiosmtpd with STARTTLS offered, and
// required before MAIL, with a certificate that RootCAs trusts.
func StartAiosmtpdStartTLS(t testing.TB) *Aiosmtpd {
	t.Helper()
	return startAiosmtpd(t, true)
}

// python finds an interpreter that has aiosmtpd: Debian's first, since a
// python3 earlier on PATH (pyenv, a virtualenv) would not see the
// package.
var python = sync.OnceValues(func() (string, error) {
	candidates := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if exec.Command(p, "-c", "import aiosmtpd").Run() == nil { //nolint:gosec // G204: a python3 of the system, for a test server
			return p, nil
		}
	}
	return "", errors.New("no python3 with aiosmtpd (apt-get install python3-aiosmtpd)")
})

func startAiosmtpd(t testing.TB, startTLS bool) *Aiosmtpd {
	t.Helper()
	py, err := python()
	if err != nil {
		kit.Missing(t, "smtpserver: %v", err)
	}
	dir := t.TempDir()
	s := &Aiosmtpd{startTLS: startTLS, spool: filepath.Join(dir, "spool"), output: &logbuf.Buffer{}}
	if err := os.Mkdir(s.spool, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "userd_spool.py"), spoolHandler, 0o600); err != nil {
		t.Fatal(err)
	}
	var tlsArgs []string
	if startTLS {
		c, err := certificate()
		if err != nil {
			t.Fatal(err)
		}
		certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		if err := os.WriteFile(certFile, c.certPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, c.keyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		tlsArgs = []string{"--tlscert", certFile, "--tlskey", keyFile}
	}
	// The free port is found by Go and handed over: another process may
	// take it in between, so a start that fails is tried again.
	for attempt := 1; ; attempt++ {
		err := s.run(t, py, dir, tlsArgs)
		if err == nil {
			return s
		}
		if attempt == 3 {
			t.Fatalf("smtpserver: aiosmtpd did not start: %v\n%s", err, s.output.String())
		}
	}
}

// run starts aiosmtpd on a free port and waits for its greeting.
func (s *Aiosmtpd) run(t testing.TB, py, dir string, tlsArgs []string) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := append([]string{"-m", "aiosmtpd", "-n", "-l", s.addr, "-c", "userd_spool.Spool"}, tlsArgs...)
	args = append(args, s.spool)
	cmd := exec.Command(py, args...) //nolint:gosec // G204: the test's own server
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1")
	cmd.Stdout, cmd.Stderr = s.output, s.output
	if err := cmd.Start(); err != nil {
		return err
	}
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if greeted(s.addr) {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-exited
			})
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited: %v", waitErr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return errors.New("no greeting within 15s")
		}
	}
}

// greeted says whether an SMTP server answers 220 at addr.
func greeted(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "220") {
		return false
	}
	_, _ = conn.Write([]byte("QUIT\r\n"))
	return true
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Address is host:port.
func (s *Aiosmtpd) Address() string { return s.addr }

// URL reaches the server: with STARTTLS required when it offers it, else
// with ?tls=none.
func (s *Aiosmtpd) URL() string {
	if s.startTLS {
		return "smtp://" + s.addr
	}
	return "smtp://" + s.addr + "?tls=none"
}

// Output is what aiosmtpd printed, for a failing test to show.
func (s *Aiosmtpd) Output() string { return s.output.String() }

// Messages are the messages received so far, in order.
func (s *Aiosmtpd) Messages() [][]byte { return raws(s.Received()) }

// Received are the messages received so far with their envelopes. The
// handler writes each message under a temporary name and renames it, so
// a message is here whole or not at all.
func (s *Aiosmtpd) Received() []Message {
	names, err := filepath.Glob(filepath.Join(s.spool, "*.eml"))
	if err != nil {
		panic(err) // the pattern is constant
	}
	slices.Sort(names)
	out := make([]Message, 0, len(names))
	for _, name := range names {
		raw, err := os.ReadFile(name) //nolint:gosec // G304: the test's own spool
		if err != nil {
			continue
		}
		m := Message{Raw: raw}
		// The envelope is written (and renamed) before the message.
		if env, err := os.ReadFile(strings.TrimSuffix(name, ".eml") + ".json"); err == nil { //nolint:gosec // G304: the test's own spool
			var e struct {
				From string   `json:"mail_from"`
				To   []string `json:"rcpt_tos"`
			}
			if json.Unmarshal(env, &e) == nil {
				m.From, m.To = e.From, e.To
			}
		}
		out = append(out, m)
	}
	return out
}

// WaitFor waits for n messages; see Server.
func (s *Aiosmtpd) WaitFor(t testing.TB, n int, timeout time.Duration) [][]byte {
	t.Helper()
	return waitFor(t, n, timeout, s.Received, func() string { return "\naiosmtpd:\n" + s.Output() })
}
