package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL driver, to create and drop the run's schema
)

// Machine describes where the figures were taken.
type Machine struct {
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	CPUModel   string `json:"cpu_model"`
	MemoryMiB  int64  `json:"memory_mib,omitempty"`
	Commit     string `json:"userd_commit"`
	Dirty      bool   `json:"userd_dirty"`   // built from a tree with uncommitted changes
	Version    string `json:"userd_version"` // what `userd version` says
}

func describeMachine() Machine {
	m := Machine{
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		CPUModel:   "unknown",
		Commit:     "unknown",
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64); err == nil {
					m.MemoryMiB = kib / 1024
				}
			}
		}
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
			m.Dirty = len(bytes.TrimSpace(st)) > 0
		}
	}
	return m
}

// loadAverage is the one-minute load average, 0 where unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// identify asks the binary for its version and, when it was built with a
// commit, takes that as the commit measured: a binary given with --userd
// need not come from the tree the loader runs in.
func (m *Machine) identify(binary string, built bool) {
	out, err := exec.Command(binary, "version").Output()
	if err != nil {
		return
	}
	m.Version = strings.TrimSpace(string(out))
	if built {
		return
	}
	if _, rest, ok := strings.Cut(m.Version, "(commit "); ok {
		if c, _, ok := strings.Cut(rest, ","); ok && c != "unknown" && c != "" {
			m.Commit, m.Dirty = c, false
		}
	}
}

// buildUserd compiles the service as `make build` does, into dir.
func buildUserd(ctx context.Context, dir, commit string) (string, error) {
	bin := filepath.Join(dir, "userd")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.commit="+commit, "-o", bin, "github.com/userd/userd/cmd/userd")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build userd (run from inside the userd module, or pass --userd): %v\n%s", err, out.String())
	}
	return bin, nil
}

// server is a userd process started by the loader.
type server struct {
	base    string
	cmd     *exec.Cmd
	exited  chan error
	logPath string
	cleanup []func()
}

const (
	bootstrapEmail    = "load-admin@example.com"
	bootstrapPassword = "Load-admin-passphrase-42"
)

// startUserd starts binary on a free loopback port with the backend's
// database. The environment is the caller's without any USERD_ variable,
// so that the figures are those of the defaults plus the settings below.
func startUserd(ctx context.Context, binary, backend, dsn, dir string, argon argonParams) (*server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &server{base: "http://" + addr, exited: make(chan error, 1), logPath: filepath.Join(dir, "userd-"+backend+".log")}
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "USERD_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"USERD_HTTP_ADDR="+addr,
		"USERD_AUTH_IP_LIMIT=0", // all load comes from 127.0.0.1
		"USERD_LOG_LEVEL=warn",
		"USERD_BOOTSTRAP_ADMIN_EMAIL="+bootstrapEmail,
		"USERD_BOOTSTRAP_ADMIN_PASSWORD="+bootstrapPassword,
		fmt.Sprintf("USERD_ARGON2_MEMORY_KIB=%d", argon.MemoryKiB),
		fmt.Sprintf("USERD_ARGON2_ITERATIONS=%d", argon.Iterations),
		fmt.Sprintf("USERD_ARGON2_PARALLELISM=%d", argon.Parallelism),
	)
	switch backend {
	case "sqlite":
		env = append(env, "USERD_DB_DRIVER=sqlite", "USERD_DB_DSN="+filepath.Join(dir, "userd-load.db"))
	case "postgres":
		scoped, drop, err := freshSchema(ctx, dsn)
		if err != nil {
			return nil, err
		}
		s.cleanup = append(s.cleanup, drop)
		env = append(env, "USERD_DB_DRIVER=postgres", "USERD_DB_DSN="+scoped)
	default:
		return nil, fmt.Errorf("unknown backend %q", backend)
	}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		s.stop()
		return nil, err
	}
	s.cmd = exec.Command(binary, "serve")
	s.cmd.Env = env
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		s.stop()
		return nil, fmt.Errorf("start userd: %w", err)
	}
	go func() { s.exited <- s.cmd.Wait(); logFile.Close() }()
	if err := s.waitReady(ctx, 60*time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			s.exited <- err
			return fmt.Errorf("userd exited during start (%v):\n%s", err, s.logTail(20))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		res, err := http.Get(s.base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("userd not ready after %v:\n%s", limit, s.logTail(20))
}

func (s *server) pid() int {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// stop ends the server with SIGTERM (SIGKILL after 20 s) and drops what
// the run created.
func (s *server) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	}
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
	s.cleanup = nil
}

// logTail returns the last n lines of the server's output.
func (s *server) logTail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freshSchema creates a private schema for one run and returns the DSN
// that selects it (search_path), and a function that drops it.
func freshSchema(ctx context.Context, dsn string) (string, func(), error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: %w", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "userd_load_" + hex.EncodeToString(b)
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		db.Close()
		return "", nil, fmt.Errorf("postgres: create schema: %w", err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			fmt.Fprintf(os.Stderr, "userd-load: drop schema %s: %v\n", schema, err)
		}
		db.Close()
	}
	return withSearchPath(dsn, schema), drop, nil
}

func withSearchPath(dsn, schema string) string {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return strings.TrimSpace(dsn) + " search_path=" + schema // key=value form
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// procMon samples a process's resident set size and CPU time from /proc.
// Figures are zero where /proc is not available (not Linux, or no pid).
type procMon struct {
	pid  int
	peak atomic.Int64 // KiB since the last resetPeak
	stop chan struct{}
	done sync.WaitGroup
}

func newProcMon(pid int) *procMon {
	m := &procMon{pid: pid, stop: make(chan struct{})}
	if pid <= 0 {
		return m
	}
	m.done.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			m.sample()
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	})
	return m
}

func (m *procMon) sample() int64 {
	rss, _ := readRSS(m.pid)
	for {
		p := m.peak.Load()
		if rss <= p || m.peak.CompareAndSwap(p, rss) {
			return rss
		}
	}
}

// resetPeak starts a new peak at the current RSS.
func (m *procMon) resetPeak() {
	m.peak.Store(0)
	m.sample()
}

// rssMiB returns the current RSS and the peak since resetPeak, in MiB.
func (m *procMon) rssMiB() (now, peak float64) {
	if m.pid <= 0 {
		return 0, 0
	}
	rss := m.sample()
	return float64(rss) / 1024, float64(m.peak.Load()) / 1024
}

// hwmMiB is the process's lifetime peak RSS (VmHWM).
func (m *procMon) hwmMiB() float64 {
	if m.pid <= 0 {
		return 0
	}
	_, hwm := readRSS(m.pid)
	return float64(hwm) / 1024
}

func (m *procMon) cpu() time.Duration {
	if m.pid <= 0 {
		return 0
	}
	return readCPU(m.pid)
}

func (m *procMon) close() {
	close(m.stop)
	m.done.Wait()
}

// readRSS returns VmRSS and VmHWM of pid in KiB.
func readRSS(pid int) (rss, hwm int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	field := func(name string) int64 {
		i := bytes.Index(b, []byte(name))
		if i < 0 {
			return 0
		}
		rest := b[i+len(name):]
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			rest = rest[:j]
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
		return n
	}
	return field("VmRSS:"), field("VmHWM:")
}

// readCPU returns the user plus system CPU time of pid. /proc reports it
// in USER_HZ ticks, which is 100 a second on Linux.
func readCPU(pid int) time.Duration {
	return readCPUFields(pid, false)
}

// readCPUFields is readCPU, plus with children the CPU of the children
// the process has reaped: for the PostgreSQL postmaster, that of backends
// that ended (a pool that closes and opens connections forks new ones).
func readCPUFields(pid int, children bool) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name in parentheses may hold spaces: split after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is the state (field 3); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0
	}
	ticks := int64(0)
	fields := []int{11, 12} // utime, stime
	if children {
		fields = append(fields, 13, 14) // cutime, cstime
	}
	for _, i := range fields {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100)
}

// machineCPU is the CPU time all processes of the machine have spent
// (user, nice, system, irq, softirq, steal; not idle or iowait), from
// /proc/stat. What the server and the loader did not spend of it, others
// did: the figure that tells a point taken on a busy machine.
func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100)
}

// commandCPU returns the CPU time of every process whose command name is
// comm (for a local PostgreSQL server: "postgres"), by pid, with the
// children each has reaped.
func commandCPU(comm string) map[int]time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := map[int]time.Duration{}
	want := "(" + comm + ") "
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if _, rest, ok := strings.Cut(string(b), " "); ok && strings.HasPrefix(rest, want) {
			out[pid] = readCPUFields(pid, true)
		}
	}
	return out
}

// cpuGrowth is the CPU the processes spent between the two snapshots. A
// process that started meanwhile counts whole. One that ended meanwhile
// comes back whole in its parent's reaped-children time, so what it had
// spent before is taken off again.
func cpuGrowth(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, t := range after {
		d += max(0, t-before[pid])
	}
	for pid, t := range before {
		if _, ok := after[pid]; !ok {
			d -= t
		}
	}
	return max(0, d)
}

// selfCPU is the loader's own user plus system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bareBodyEnv names the file with the body the bare reference server
// answers; its presence makes the binary that server.
const bareBodyEnv = "USERD_LOAD_BARE_BODY"

// bareServer is the reference: the loader's own binary started again as a
// bare net/http server in its own process, like userd.
type bareServer struct {
	base   string
	cmd    *exec.Cmd
	stdin  interface{ Close() error }
	exited chan error
}

func startBare(body []byte, dir string) (*bareServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "bare-body.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), bareBodyEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bare server: %w", err)
	}
	b := &bareServer{cmd: cmd, stdin: stdin, exited: make(chan error, 1)}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go func() { b.exited <- cmd.Wait() }()
	if err != nil {
		b.stop()
		return nil, fmt.Errorf("bare server did not report its address: %v", err)
	}
	b.base = "http://" + strings.TrimSpace(line)
	return b, nil
}

// stop closes the server's stdin, on which it exits.
func (b *bareServer) stop() {
	_ = b.stdin.Close()
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.exited
	}
}

// serveBare is the bare server's main: it answers every request with the
// body from the file named by bareBodyEnv, prints its address and serves
// until stdin is closed.
func serveBare(stdin *os.File, stdout *os.File) error {
	body, err := os.ReadFile(os.Getenv(bareBodyEnv))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() {
		_, _ = io.Copy(io.Discard, stdin) // returns at EOF: the parent is done or gone
		_ = srv.Close()
	}()
	fmt.Fprintln(stdout, ln.Addr().String())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
