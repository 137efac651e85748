package faults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	adminEmail    = "root@example.com"
	adminPassword = "root-Passphrase-42"
	userPassword  = "faults-Passphrase-7"
)

// server is one userd process, restartable on the same address and
// database.
type server struct {
	t    *testing.T
	name string
	addr string
	base string
	env  []string
	logs *logSink

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	starts  int
}

// serverEnv is the configuration every case starts from: an admin, no
// per-IP limits (every request comes from 127.0.0.1), cheap password
// hashing, warnings and errors only in the log (one access line per
// request would dwarf everything else; a 5xx is logged at error level).
func serverEnv(addr string) map[string]string {
	return map[string]string{
		"USERD_HTTP_ADDR":                addr,
		"USERD_AUTH_IP_LIMIT":            "0",
		"USERD_REGISTER_IP_LIMIT":        "0",
		"USERD_ARGON2_MEMORY_KIB":        "64",
		"USERD_ARGON2_ITERATIONS":        "1",
		"USERD_BOOTSTRAP_ADMIN_EMAIL":    adminEmail,
		"USERD_BOOTSTRAP_ADMIN_PASSWORD": adminPassword,
		"USERD_LOG_LEVEL":                "warn",
		"USERD_SHUTDOWN_TIMEOUT":         "5s",
	}
}

// newServer prepares (does not start) a userd process with env on top of
// serverEnv. USERD_* variables of the caller's environment are dropped so
// that a developer's settings cannot change what a case tests.
func newServer(t *testing.T, name string, env map[string]string) *server {
	t.Helper()
	if binary == "" {
		t.Fatal("userd binary not built (TestMain)")
	}
	addr := freeAddr(t)
	all := serverEnv(addr)
	// The .eml files of the messages (no USERD_SMTP_URL), out of the
	// package's directory.
	all["USERD_MAIL_DIR"] = filepath.Join(t.TempDir(), "mail")
	for k, v := range env {
		all[k] = v
	}
	var list []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "USERD_") {
			list = append(list, kv)
		}
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		list = append(list, k+"="+all[k])
	}
	logPath := filepath.Join(logDir, strings.ReplaceAll(t.Name(), "/", "_")+"-"+name+".log")
	s := &server{t: t, name: name, addr: addr, base: "http://" + addr, env: list, logs: newLogSink(logPath)}
	t.Cleanup(s.cleanup)
	return s
}

// start starts the process and waits until /readyz answers 200.
func (s *server) start() {
	s.t.Helper()
	cmd := exec.Command(binary, "serve")
	cmd.Env = s.env
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", s.name, err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.done, s.waitErr = cmd, done, nil
	s.starts++
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.waitErr = err
		s.mu.Unlock()
		close(done)
	}()
	s.waitReady(30 * time.Second)
}

func (s *server) waitReady(limit time.Duration) {
	s.t.Helper()
	c := &http.Client{Timeout: 3 * time.Second}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			s.t.Fatalf("%s exited during start (%v); log tail:\n%s", s.name, s.waitErr, s.logs.tail())
		default:
		}
		res, err := c.Get(s.base + "/readyz")
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("%s not ready after %s; log tail:\n%s", s.name, limit, s.logs.tail())
}

func (s *server) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *server) running() bool {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *server) kill() {
	s.t.Helper()
	s.signal(syscall.SIGKILL)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.t.Fatalf("%s survived SIGKILL for 10 s", s.name)
	}
}

func (s *server) signal(sig syscall.Signal) {
	s.t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if err := cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("signal %v to %s: %v", sig, s.name, err)
	}
}

// wait waits up to limit for the process to exit and returns its exit
// code (-1 for a signal), or ok false if it is still running.
func (s *server) wait(limit time.Duration) (code int, ok bool) {
	select {
	case <-s.done:
	case <-time.After(limit):
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.ProcessState.ExitCode(), true
}

// stop ends the process with SIGTERM and requires a clean exit.
func (s *server) stop() {
	s.t.Helper()
	if !s.running() {
		return
	}
	s.signal(syscall.SIGTERM)
	code, ok := s.wait(15 * time.Second)
	if !ok {
		s.kill()
		s.t.Fatalf("%s ignored SIGTERM for 15 s", s.name)
	}
	if code != 0 {
		s.t.Errorf("%s exited with %d after SIGTERM; log tail:\n%s", s.name, code, s.logs.tail())
	}
}

func (s *server) cleanup() {
	if s.running() {
		s.mu.Lock()
		cmd := s.cmd
		s.mu.Unlock()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if _, ok := s.wait(15 * time.Second); !ok {
			_ = cmd.Process.Kill()
			<-s.done
		}
	}
	s.logs.close()
}

// procStatus reads fields of /proc/PID/status, in KiB for the Vm* ones.
func procStatus(pid int) map[string]int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// openFDs counts the open file descriptors of pid; -1 if unreadable.
func openFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// freeAddr returns a free loopback address. The port is released before
// userd binds it; another process taking it in between is unlikely on a
// test machine and would fail the start loudly.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	// The address is handed out as free: the port must be released.
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// mustClose closes c and fails the test, without stopping it, when Close
// fails; meant for defer and cleanups.
func mustClose(t testing.TB, c io.Closer) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// logSink receives a userd process's JSON log lines: all of them go to a
// file; it counts them by level and message (and status for access
// lines), keeps the first line of each kind as an example, the lines that
// point at a defect (errors other than shed or outage 503s, panics), and
// a short tail.
type logSink struct {
	mu      sync.Mutex
	file    *os.File
	w       *bufio.Writer
	partial []byte
	counts  map[string]int
	notable []string
	ring    []string
	next    int
}

const (
	maxNotable = 40
	ringSize   = 40
)

func newLogSink(path string) *logSink {
	l := &logSink{counts: map[string]int{}, ring: make([]string, 0, ringSize)}
	if f, err := os.Create(path); err == nil {
		l.file, l.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	return l
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w != nil {
		_, _ = l.w.Write(p)
	}
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

type logLine struct {
	Level  string `json:"level"`
	Msg    string `json:"msg"`
	Status int    `json:"status"`
	Route  string `json:"route"`
}

func (l *logSink) line(s string) {
	var ll logLine
	if err := json.Unmarshal([]byte(s), &ll); err != nil {
		ll = logLine{Level: "TEXT", Msg: s}
		if len(ll.Msg) > 80 {
			ll.Msg = ll.Msg[:80]
		}
	}
	key := ll.Level + " " + ll.Msg
	if ll.Status != 0 {
		key += " status=" + strconv.Itoa(ll.Status)
	}
	l.counts[key]++
	if l.isNotable(ll) && len(l.notable) < maxNotable {
		l.notable = append(l.notable, s)
	}
	if len(l.ring) < ringSize {
		l.ring = append(l.ring, s)
	} else {
		l.ring[l.next] = s
		l.next = (l.next + 1) % ringSize
	}
}

// isNotable: an unexpected error (logged as "request failed"), a panic, a
// 5xx other than 503, or anything unparsable.
func (l *logSink) isNotable(ll logLine) bool {
	switch {
	case ll.Level == "TEXT":
		return true
	case strings.Contains(ll.Msg, "panic"):
		return true
	case ll.Msg == "request failed":
		return true
	case ll.Msg == "http request":
		return ll.Status >= 500 && ll.Status != http.StatusServiceUnavailable
	}
	return ll.Level == "ERROR"
}

// summary renders the counts, one kind per line, most frequent first.
func (l *logSink) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range l.counts {
		all = append(all, kv{k, n})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].k < all[j].k
	})
	var b strings.Builder
	for _, e := range all {
		fmt.Fprintf(&b, "    %6d × %s\n", e.n, e.k)
	}
	if b.Len() == 0 {
		return "    (no log lines at warn or above)\n"
	}
	return b.String()
}

func (l *logSink) count(substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k, c := range l.counts {
		if strings.Contains(k, substr) {
			n += c
		}
	}
	return n
}

func (l *logSink) notableLines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.notable...)
}

func (l *logSink) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]string(nil), l.ring[l.next:]...)
	out = append(out, l.ring[:l.next]...)
	return strings.Join(out, "\n")
}

func (l *logSink) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w != nil {
		_ = l.w.Flush()
		_ = l.file.Close()
		l.w = nil
	}
}

// reportLogs logs the log summary and fails on notable lines, except
// those whose message contains one of allowed (errors the case provokes
// on purpose and reports itself).
func reportLogs(t *testing.T, s *server, allowed ...string) {
	t.Helper()
	t.Logf("%s log (warn and above), by kind:\n%s", s.name, s.logs.summary())
	var lines []string
next:
	for _, l := range s.logs.notableLines() {
		var ll logLine
		_ = json.Unmarshal([]byte(l), &ll)
		for _, a := range allowed {
			if ll.Msg != "" && strings.Contains(ll.Msg, a) {
				continue next
			}
		}
		lines = append(lines, l)
	}
	if len(lines) > 0 {
		t.Errorf("%s logged %d unexpected error line(s), first ones:\n%s", s.name, len(lines), strings.Join(lines, "\n"))
	}
}
