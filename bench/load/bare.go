package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// bareBodyEnv names the file with the body the bare reference server
// answers; its presence makes the binary that server.
const bareBodyEnv = "USERD_LOAD_BARE_BODY"

// bareServer is the reference: the loader's own binary started again as a
// bare net/http server in its own process, like userd.
type bareServer struct {
	base   string
	cmd    *exec.Cmd
	stdin  interface{ Close() error }
	exited chan struct{} // closed when the process has exited
}

func startBare(body []byte, dir string) (*bareServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "bare-body.json")
	if err := os.WriteFile(path, body, 0o600); err != nil { //nolint:gosec // G703: dir is the run's own os.MkdirTemp directory, the name a constant
		return nil, err
	}
	cmd := exec.Command(exe) //nolint:gosec // G204: the loader starts its own executable again as the bare reference server
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
	b := &bareServer{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go func() {
		// Its exit status is of no interest: stop only waits for it to be
		// gone, and a server that failed shows in the figures.
		_ = cmd.Wait()
		close(b.exited)
	}()
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
	body, err := os.ReadFile(os.Getenv(bareBodyEnv)) //nolint:gosec // G703: startBare, the parent loader, names the body file it wrote in its temporary directory
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
	// The parent reads the address from the first line; without it the
	// server is of no use.
	if _, err := fmt.Fprintln(stdout, ln.Addr().String()); err != nil {
		return err
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
