package faults

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/userd/userd/adapters/secretbox"
)

// pgCluster is a private PostgreSQL cluster in a temporary folder, on its
// own port of 127.0.0.1, so that a case may stop it without disturbing
// anything else on the machine.
type pgCluster struct {
	t       *testing.T
	bindir  string
	base    string // owned by the cluster's user: data/, the socket, the log
	port    int
	running bool
	// runAs is "postgres" when this process is root: initdb and postgres
	// refuse to run as root.
	runAs string
}

// pgBindir finds the PostgreSQL server binaries: USERD_FAULTS_PG_BINDIR,
// the newest /usr/lib/postgresql/<version>/bin, or initdb on PATH.
func pgBindir() string {
	if d := os.Getenv("USERD_FAULTS_PG_BINDIR"); d != "" {
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(dirs[i]))), 64)
		vj, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(filepath.Dir(dirs[j]))), 64)
		return vi > vj
	})
	if len(dirs) > 0 {
		return filepath.Dir(dirs[0])
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// newPGCluster runs initdb (trust authentication, fsync on) and starts the
// cluster. Without the binaries the case is skipped, or failed in CI.
func newPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	bindir := pgBindir()
	if bindir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("PostgreSQL server binaries (initdb) not found in CI: set USERD_FAULTS_PG_BINDIR")
		}
		t.Skip("PostgreSQL server binaries (initdb) not found: PostgreSQL fault case skipped")
	}
	c := &pgCluster{t: t, bindir: bindir}
	base, err := os.MkdirTemp("", "userd-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c.base = base
	t.Cleanup(c.destroy)
	if os.Geteuid() == 0 {
		u, err := osuser.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, and no postgres user to run initdb as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(base, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.runAs = "postgres"
	}
	if err := os.Chmod(base, 0o700); err != nil { //nolint:gosec // G302: base is a directory, which needs x to be entered; 0700 is owner-only, as PostgreSQL requires
		t.Fatal(err)
	}
	port, err := strconv.Atoi(strings.TrimPrefix(freeAddr(t), "127.0.0.1:"))
	if err != nil {
		t.Fatal(err)
	}
	c.port = port
	start := time.Now()
	if out, err := c.run("initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8",
		"--locale=C", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.start()
	t.Logf("private PostgreSQL cluster (%s) on 127.0.0.1:%d in %s, ready in %s",
		bindir, c.port, c.base, time.Since(start).Round(time.Millisecond))
	return c
}

func (c *pgCluster) data() string { return filepath.Join(c.base, "data") }

// run runs a PostgreSQL binary, as the postgres user when root.
func (c *pgCluster) run(name string, args ...string) ([]byte, error) {
	bin := filepath.Join(c.bindir, name)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var cmd *exec.Cmd
	if c.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.runAs, "--", bin}, args...)...) //nolint:gosec // G204: a PostgreSQL tool (initdb, pg_ctl) of the bindir the suite found, with the suite's own arguments, as the postgres user
	} else {
		cmd = exec.CommandContext(ctx, bin, args...) //nolint:gosec // G204: a PostgreSQL tool (initdb, pg_ctl) of the bindir the suite found, with the suite's own arguments
	}
	// Not in the cluster's folder, which root's tools may not read.
	cmd.Dir = "/"
	return cmd.CombinedOutput()
}

// start starts the cluster and waits until it accepts connections.
func (c *pgCluster) start() {
	c.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=200", c.port, c.base)
	if out, err := c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.base, "postgres.log"),
		"-o", opts, "-w", "-t", "60", "start"); err != nil {
		c.t.Fatalf("pg_ctl start: %v\n%s\nserver log:\n%s", err, out, c.serverLog())
	}
	c.running = true
}

// stop stops the cluster: mode is fast (active sessions are terminated,
// a clean shutdown) or immediate.
func (c *pgCluster) stop(mode string) {
	c.t.Helper()
	if out, err := c.run("pg_ctl", "-D", c.data(), "-m", mode, "-w", "-t", "60", "stop"); err != nil {
		c.t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
	c.running = false
}

func (c *pgCluster) serverLog() string {
	b, _ := os.ReadFile(filepath.Join(c.base, "postgres.log"))
	return truncate(string(b), 4000)
}

func (c *pgCluster) destroy() {
	if c.running {
		_, _ = c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "-t", "30", "stop")
		c.running = false
	}
	_ = os.RemoveAll(c.base)
}

// dsn is the URL of database db on the cluster.
func (c *pgCluster) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", c.port, db)
}

// createDB creates database name and returns a connection pool to it.
func (c *pgCluster) createDB(name string) *sql.DB {
	c.t.Helper()
	admin, err := sql.Open("pgx", c.dsn("postgres"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer mustClose(c.t, admin)
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		c.t.Fatalf("create database %s: %v", name, err)
	}
	db, err := sql.Open("pgx", c.dsn(name))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { mustClose(c.t, db) })
	return db
}

// newSecretKey returns a USERD_SECRET_KEY for one deployment: userd refuses
// to start on PostgreSQL without one, and every node of the deployment
// must have the same.
func newSecretKey() string { return secretbox.EncodeKey(secretbox.NewKey()) }
