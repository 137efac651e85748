package chromium

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
)

// DumpDOM loads url in a headless Chromium of its own, without chromedp,
// lets the page's scripts run for up to ten seconds of virtual time, and
// returns the DOM they left and the browser's console (CSP violations,
// script errors), which Chromium writes to stderr. Only 127.0.0.1 and
// localhost resolve: nothing may come from the network. Without a
// chromium on PATH it skips t, or fails it when CI=true; a browser that
// fails fails t with the end of its console.
func DumpDOM(t testing.TB, url string) (dom, console string) {
	t.Helper()
	bin := kit.Tool(t, "chromium", "chromium", "the page is not rendered in a browser")
	profile, err := os.MkdirTemp("", "userd-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// Best effort: a browser helper may still be writing into it.
	defer func() { _ = os.RemoveAll(profile) }()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, //nolint:gosec // G204: the chromium found on PATH, run headless on the test's own page
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile,
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
		"--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=10000",
		"--dump-dom", url)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, LastLines(errOut.String(), 30))
	}
	return out.String(), errOut.String()
}

// LastLines is the last n lines of s, for a failure message.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
