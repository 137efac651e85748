package chromium

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/userd/userd/test/kit"
)

// modulePath is the module whose root holds test/node and docs/img.
const modulePath = "github.com/userd/userd"

// axeDir is where `make node-deps` installs the pinned axe-core, with the
// other Node.js packages of the tests, relative to the module's root.
const axeDir = "test/node"

// axeTags are the rules axe runs: those of WCAG 2.0 and 2.1, levels A and
// AA.
var axeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa"}

// axeScript is axe-core's script, read once for all the tests of the
// binary.
var axeScript struct {
	once    sync.Once
	source  string
	version string
	err     error
}

// loadAxe reads axe.min.js of the pinned axe-core from the module's
// root, and checks that the version installed is the one of
// test/node/package.json.
func loadAxe() (source, version string, _ error) {
	axeScript.once.Do(func() {
		axeScript.source, axeScript.version, axeScript.err = readAxe()
	})
	return axeScript.source, axeScript.version, axeScript.err
}

func readAxe() (source, version string, _ error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", "", err
	}
	var pkg struct {
		Version      string            `json:"version"`
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := readJSON(filepath.Join(root, axeDir, "package.json"), &pkg); err != nil {
		return "", "", err
	}
	pinned := pkg.Dependencies["axe-core"]
	if pinned == "" {
		return "", "", fmt.Errorf("%s/package.json pins no axe-core", axeDir)
	}
	dir := filepath.Join(root, axeDir, "node_modules", "axe-core")
	if err := readJSON(filepath.Join(dir, "package.json"), &pkg); err != nil {
		return "", "", errAxeMissing
	}
	if pkg.Version != pinned {
		return "", "", fmt.Errorf("axe-core %s is installed, %s is pinned: %w", pkg.Version, pinned, errAxeMissing)
	}
	src, err := os.ReadFile(filepath.Join(dir, "axe.min.js")) //nolint:gosec // G304: the module's own axe-core, installed by make node-deps
	if err != nil {
		return "", "", errAxeMissing
	}
	return string(src), pinned, nil
}

// errAxeMissing says how to install axe-core.
var errAxeMissing = errors.New("axe-core is not installed in " + axeDir + "/node_modules (make node-deps, which needs npm)")

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path) //nolint:gosec // G304: a package.json of the module's test/node
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ModuleRoot is the root directory of the module of userd: the nearest
// directory, from the test's working directory up, with the go.mod of
// github.com/userd/userd.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod")) //nolint:gosec // G304: the go.mod files above the test's directory
		if err == nil && slices.Contains(strings.Split(string(data), "\n"), "module "+modulePath) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// Violation is a rule of axe-core that a page breaks.
type Violation struct {
	ID      string          `json:"id"`     // the rule, such as color-contrast
	Impact  string          `json:"impact"` // minor, moderate, serious or critical
	Help    string          `json:"help"`   // what the rule asks for
	HelpURL string          `json:"helpUrl"`
	Nodes   []ViolationNode `json:"nodes"`
}

// ViolationNode is an element that breaks a rule.
type ViolationNode struct {
	Target  []string `json:"target"`  // CSS selectors, one per frame or shadow root on the way
	Summary string   `json:"summary"` // how to fix it, as axe says
}

// axeRun runs axe over the document and returns the violations alone,
// each with the selectors of its elements, small enough to return by
// value.
const axeRun = `axe.run(document, {runOnly: {type: "tag", values: %s}, resultTypes: ["violations"]})
  .then((r) => r.violations.map((v) => ({id: v.id, impact: v.impact || "", help: v.help, helpUrl: v.helpUrl,
    nodes: v.nodes.map((n) => ({target: n.target.map((s) => Array.isArray(s) ? s.join(" >>> ") : String(s)), summary: n.failureSummary || ""}))})))`

// violations injects axe-core into the page shown, unless it is there
// already, and returns the violations of the WCAG 2.1 A and AA rules.
// The script goes in through the DevTools protocol (Runtime.evaluate),
// which the page's Content-Security-Policy does not govern: a policy of
// default-src 'none' lets it run (TestAccessibility_under_a_strict_policy).
func (b *Browser) violations(t testing.TB) []Violation {
	t.Helper()
	source, _, err := loadAxe()
	if err != nil {
		if !errors.Is(err, errAxeMissing) {
			t.Fatalf("the accessibility check: %v", err)
		}
		kit.Missing(t, "the accessibility check: %v", err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	present, err := evaluate[bool](ctx, `typeof axe === "object"`)
	if err != nil {
		t.Fatalf("look for axe-core in the page: %v", err)
	}
	if !present {
		if _, err := evaluate[chromedp.Void](ctx, source); err != nil {
			t.Fatalf("inject axe-core: %v", err)
		}
	}
	tags, err := json.Marshal(axeTags)
	if err != nil {
		t.Fatal(err)
	}
	v, err := evaluate[[]Violation](ctx, fmt.Sprintf(axeRun, tags), chromedp.EvalAwaitPromise)
	if err != nil {
		t.Fatalf("run axe-core: %v", err)
	}
	return v
}

// CheckAccessibility runs axe-core (the version pinned in
// test/node/package.json) over the page shown, as it looks in the
// viewport and the scheme emulated now, and fails t with each violation
// of the WCAG 2.1 A and AA rules: its rule, impact and help, and the
// selectors of the elements that break it. page names the page in the
// messages. Without axe-core installed (make node-deps) it skips t, or
// fails it when CI=true.
func (b *Browser) CheckAccessibility(t testing.TB, page string) {
	t.Helper()
	for _, v := range b.violations(t) {
		var targets []string
		for _, n := range v.Nodes {
			targets = append(targets, "\n\t"+strings.Join(n.Target, " ")+": "+strings.ReplaceAll(n.Summary, "\n", " "))
		}
		t.Errorf("%s (%s, %s): axe %s (%s): %s (%s)%s", page, b.viewport.Name, b.scheme, v.ID, v.Impact, v.Help, v.HelpURL, strings.Join(targets, ""))
	}
}
