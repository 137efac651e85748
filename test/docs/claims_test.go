package docs_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/webhook"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/upstream"
)

// claimsDoc holds the receivers of the claims hook.
const claimsDoc = "docs/claims.md"

// TestClaimsDoc_go_receiver_answers_userd builds the Go receiver of
// docs/claims.md as it is written, runs it, and calls it with userd's own
// client: a user of acme.example gets tenant acme.example, a client its
// id, and a user of blocked.example the refusal.
func TestClaimsDoc_go_receiver_answers_userd(t *testing.T) {
	src := fencedBlock(t, "\n## A receiver in Go\n", "go")
	// Inside the module, so that the build finds the Standard Webhooks
	// library in go.mod.
	dir, err := os.MkdirTemp(".", "claimsreceiver")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "receiver")
	if out, err := exec.Command("go", "build", "-o", bin, "./"+dir).CombinedOutput(); err != nil { //nolint:gosec // G204: go build of the test's own copy of the documented block
		t.Fatalf("go build of the documented receiver: %v\n%s", err, out)
	}

	addr := freeAddr(t)
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("documented-receiver-secret-0123"))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin) //nolint:gosec // G204: the receiver the test just built
	cmd.Env = append(os.Environ(), "HOOK_SECRET="+secret, "HOOK_ADDR="+addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	waitListening(t, addr)

	checkReceiver(t, "http://"+addr+"/claims", secret)
}

// TestClaimsDoc_typescript_receiver_answers_userd transpiles the
// TypeScript receiver of docs/claims.md with the pinned typescript, runs
// it with node and the pinned standardwebhooks, and calls it as the Go
// one.
func TestClaimsDoc_typescript_receiver_answers_userd(t *testing.T) {
	node := kit.Tool(t, "node", "nodejs", "the TypeScript receiver of docs/claims.md is not run")
	modules := upstream.NodeModules(t, "standardwebhooks", "typescript")
	src := fencedBlock(t, "\n## A receiver in TypeScript\n", "ts")
	work := t.TempDir()
	if err := os.Symlink(modules, filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"receiver.ts": src, "transpile.cjs": `const ts = require("typescript");
const fs = require("fs");
const out = ts.transpileModule(fs.readFileSync(process.argv[2], "utf8"),
  { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 }, reportDiagnostics: true });
if (out.diagnostics.length > 0) { console.error(out.diagnostics.map((d) => d.messageText)); process.exit(1); }
fs.writeFileSync(process.argv[3], out.outputText);
`}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	transpile := exec.Command(node, "transpile.cjs", "receiver.ts", "receiver.mjs") //nolint:gosec // G204: node on the test's own files
	transpile.Dir = work
	if out, err := transpile.CombinedOutput(); err != nil {
		t.Fatalf("transpiling the documented receiver: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("documented-receiver-secret-0123"))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, "receiver.mjs") //nolint:gosec // G204: node on the transpiled receiver
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOOK_SECRET="+secret, "HOOK_PORT="+port)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	waitListening(t, addr)
	checkReceiver(t, "http://"+addr+"/claims", secret)
	if t.Failed() {
		t.Logf("receiver's stderr:\n%s", stderr.String())
	}
}

// fencedBlock is the first fenced block of lang after heading in
// docs/claims.md.
func fencedBlock(t *testing.T, heading, lang string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, claimsDoc))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), heading)
	if !ok {
		t.Fatalf("docs/claims.md has no section %q", heading)
	}
	m := regexp.MustCompile("(?s)```" + lang + "\\n(.*?)```").FindStringSubmatch(section)
	if m == nil {
		t.Fatalf("no %s block in the section %q", lang, heading)
	}
	return m[1]
}

// checkReceiver calls the receiver at url with userd's own client: a user
// of acme.example gets tenant acme.example, a client its id, and a user
// of blocked.example the refusal.
func checkReceiver(t *testing.T, url, secret string) {
	t.Helper()
	ctx := context.Background()
	hook, err := webhook.NewClaimsHook(webhook.HookOptions{URL: url, Secret: secret,
		Clock: clock.System{}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	user := func(email string) domain.ClaimsRequest {
		return domain.ClaimsRequest{UserID: "6740f1c2a1b2c3d4e5f60718", User: map[string]any{"email": email},
			SessionID: "s1", AMR: domain.AMRPassword, Grant: domain.ClaimsGrantSignIn}
	}
	claims, err := hook.Claims(ctx, user("ada@acme.example"))
	if err != nil || string(claims.JSON()) != `{"tenant":"acme.example"}` {
		t.Errorf("user of acme.example: %s, %v", claims.JSON(), err)
	}
	claims, err = hook.Claims(ctx, domain.ClaimsRequest{ClientID: "cli_1", Grant: domain.ClaimsGrantClientCredentials})
	if err != nil || string(claims.JSON()) != `{"tenant":"cli_1"}` {
		t.Errorf("client: %s, %v", claims.JSON(), err)
	}
	_, err = hook.Claims(ctx, user("eve@blocked.example"))
	var refused *domain.SignInRefusedError
	if !errors.As(err, &refused) || refused.Message != "Your organisation's plan has ended." {
		t.Errorf("user of blocked.example: %v", err)
	}
}

// freeAddr is a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// waitListening waits until addr takes connections.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}
