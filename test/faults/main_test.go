// Package faults breaks userd on purpose and checks that it holds: a
// database outage, SIGKILL during writes, SIGTERM under load, overload,
// slow and hostile clients, and (separately) a soak. Every case runs the
// real binary, built once by TestMain, against real databases on
// 127.0.0.1, with loops bounded in request count and in time, and logs
// what it did and what it checked.
//
// The suite is slow by nature, so it runs only when asked:
//
//	USERD_FAULTS=1 go test -count=1 -v ./test/faults       # cases 1-5 (make faults)
//	USERD_SOAK=1 go test -count=1 -v -run TestSoak -timeout 30m ./test/faults  # make soak
//
// USERD_SOAK_DURATION (or -soak.duration) shortens the soak, e.g. 1m.
// The PostgreSQL cases make a private cluster with initdb (found under
// /usr/lib/postgresql/*/bin, USERD_FAULTS_PG_BINDIR or PATH), so that
// stopping it disturbs nothing else on the machine.
package faults

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/userd/userd/test/userdproc"
)

var (
	faultsEnabled = os.Getenv("USERD_FAULTS") == "1"
	soakEnabled   = os.Getenv("USERD_SOAK") == "1"

	// binary is the userd built once for the whole package.
	binary string
	// logDir keeps the full log of every userd process started; it is
	// removed after a passing run and named after a failing one.
	logDir string
	// fileLimit is the RLIMIT_NOFILE soft limit in force for this process
	// and, inherited, for the userd processes it starts.
	fileLimit uint64
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(func() int {
		if !faultsEnabled && !soakEnabled {
			// Each test reports its own skip.
			return m.Run()
		}
		fileLimit = raiseFileLimit()
		dir, err := os.MkdirTemp("", "userd-faults-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() {
			if err := os.RemoveAll(dir); err != nil {
				fmt.Fprintln(os.Stderr, "faults:", err)
			}
		}()
		if binary, err = userdproc.Build(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if logDir, err = os.MkdirTemp("", "userd-faults-logs-"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		code := m.Run()
		if code == 0 {
			if err := os.RemoveAll(logDir); err != nil {
				fmt.Fprintln(os.Stderr, "faults:", err)
			}
		} else {
			fmt.Fprintf(os.Stderr, "faults: the full logs of the userd processes are in %s\n", logDir)
		}
		return code
	}())
}

// requireFaults skips a case unless USERD_FAULTS=1.
func requireFaults(t *testing.T) {
	t.Helper()
	if !faultsEnabled {
		t.Skip("USERD_FAULTS=1 not set: fault-injection case skipped (run `make faults`)")
	}
}

// raiseFileLimit sets the soft RLIMIT_NOFILE to the hard limit. Calling
// Setrlimit explicitly matters: Go raises the soft limit of its own
// process at start but restores the original one in the children it
// starts, unless the program set the limit itself.
func raiseFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "faults: getrlimit:", err)
		return 0
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "faults: setrlimit:", err)
	}
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	return lim.Cur
}
