// Package chromium is the browser kit of the tests: one headless Chromium
// per test, driven with chromedp, and the checks every page of userd must
// pass in it: its status, its console, its accessibility (axe-core, WCAG
// 2.1 A and AA), its fit on a phone 375 px wide, and its screenshots in
// the light and the dark scheme (docs/testing.md, "The browser kit").
//
// It is test support, never shipped: only tests import it. Each method
// takes the testing.TB to fail, so that subtests can share one browser.
package chromium

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/userd/userd/test/kit"
)

// StepTimeout bounds one step of a test in the browser (a navigation, a
// click, an evaluation, an axe run): a page of userd loads in
// milliseconds, so a step that takes this long is stuck.
const StepTimeout = 30 * time.Second

// startTimeout bounds the start of Chromium, slower on a busy machine.
const startTimeout = 60 * time.Second

// Viewport is a size of the browser's window, in CSS pixels.
type Viewport struct {
	// Name names the viewport in screenshot names: "desktop" or "phone".
	Name          string
	Width, Height int64
	// Mobile emulates a phone: the page's <meta name="viewport"> applies.
	Mobile bool
}

// The two viewports of the pages: a laptop's window, and the narrowest
// phone the pages are made for (an iPhone SE or mini).
var (
	Desktop = Viewport{Name: "desktop", Width: 1280, Height: 800}
	Phone   = Viewport{Name: "phone", Width: 375, Height: 812, Mobile: true}
)

// Scheme is the reader's preferred color scheme, as
// prefers-color-scheme sees it.
type Scheme string

// The two schemes every page follows.
const (
	Light Scheme = "light"
	Dark  Scheme = "dark"
)

// Browser is one tab of a headless Chromium started for one test, with
// the viewport and the color scheme it emulates.
type Browser struct {
	ctx      context.Context
	viewport Viewport
	scheme   Scheme
	console  *consoleLog
}

// Start starts a headless Chromium with a fresh profile, at the Desktop
// viewport in the Light scheme, for the life of t. Without a chromium on
// PATH it skips t, or fails it when CI=true (.ci/run installs Chromium).
// Only 127.0.0.1 and localhost resolve: nothing comes from the network.
func Start(t testing.TB) *Browser {
	t.Helper()
	bin := kit.Tool(t, "chromium", "chromium", "the pages are not checked in a browser")
	profile, err := os.MkdirTemp("", "userd-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// Best effort: a helper process of the browser may still be writing
	// into it as the browser ends.
	t.Cleanup(func() { _ = os.RemoveAll(profile) })
	// chromedp's defaults (Puppeteer's), then the flags that the tests
	// rely on, named even where a default sets them: no window, no sandbox
	// (containers), nothing fetched in the background and, since the
	// machine's network may be closed, only the test's servers resolving.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.UserDataDir(profile),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)

	// The first action starts the browser, bound to the context it gets:
	// ctx itself, which has no deadline, so a timer bounds the start
	// instead; the cleanups above end a browser that hangs.
	b := &Browser{ctx: ctx}
	start := time.Now()
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx, chromedp.Navigate("about:blank")) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start chromium: %v", err)
		}
	case <-time.After(startTimeout):
		t.Fatalf("chromium did not start in %v", startTimeout)
	}
	b.console = watchConsole(ctx)
	// The page of a headless tab does not have the focus
	// (document.hasFocus() is false) unless told: without it, :focus and
	// :focus-visible match nothing and no focus ring shows.
	Call(t, b, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
	b.SetViewport(t, Desktop)
	b.SetColorScheme(t, Light)
	t.Logf("chromium started in %v", time.Since(start).Round(time.Millisecond))
	return b
}

// Context is the context of the browser's tab, for the chromedp actions
// and DevTools commands the kit has no method for; bound each call with
// [StepTimeout] or use [Run].
func (b *Browser) Context() context.Context { return b.ctx }

// Run runs one chromedp action in b's tab within [StepTimeout] and
// returns its result, failing t on an error.
func Run[T any](t testing.TB, b *Browser, action chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Call sends one DevTools command to b's tab within [StepTimeout] and
// returns its result, failing t on an error.
func Call[P, R any](t testing.TB, b *Browser, cmd cdp.Command[P, R], params P) R {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	r, err := chromedp.Call(ctx, cmd, params)
	if err != nil {
		t.Fatalf("%s: %v", cmd.Method, err)
	}
	return r
}

// Do runs actions in b's tab within [StepTimeout], failing t on an error.
func (b *Browser) Do(t testing.TB, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	Run(t, b, chromedp.Steps(actions...))
}

// Navigate loads url and returns the status of its document.
func (b *Browser) Navigate(t testing.TB, url string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	res, err := chromedp.Run(ctx, chromedp.NavigateResponse(url))
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	b.console.expect(res.URL, int(res.Status))
	return int(res.Status)
}

// Open loads url and fails t unless its status is status.
func (b *Browser) Open(t testing.TB, url string, status int) {
	t.Helper()
	if got := b.Navigate(t, url); got != status {
		t.Fatalf("open %s: status %d, want %d", url, got, status)
	}
}

// Submit runs action, which sends a form (a click, or Enter in a field),
// waits for the page it leads to, and fails t unless its status is
// status.
func (b *Browser) Submit(t testing.TB, action chromedp.Action[chromedp.Void], status int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	res, err := chromedp.RunResponse(ctx, action)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	b.console.expect(res.URL, int(res.Status))
	if res.Status != int64(status) {
		t.Fatalf("submit to %s: status %d, want %d", res.URL, res.Status, status)
	}
}

// Evaluate evaluates a JavaScript expression in the page of b's tab and
// decodes its value into T, failing t on an error or an exception. It
// runs through the DevTools protocol, so a Content-Security-Policy that
// allows no script does not stop it. An evaluation that meets the
// execution context of a page being replaced ("Cannot find context with
// specified id", seen in CI just after a navigation) is tried again in
// the new one.
func Evaluate[T any](t testing.TB, b *Browser, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	v, err := evaluate[T](ctx, expr, opts...)
	if err != nil {
		t.Fatalf("evaluate %s: %v", abbreviate(expr), err)
	}
	return v
}

// evaluate is Evaluate with errors, tried again while the page's
// execution context is being replaced.
func evaluate[T any](ctx context.Context, expr string, opts ...chromedp.EvaluateOption) (T, error) {
	return runAcrossNavigation(ctx, chromedp.Evaluate[T](expr, opts...))
}

// runAcrossNavigation runs action, tried again while the page it met is
// being replaced by the next (contextReplaced).
func runAcrossNavigation[T any](ctx context.Context, action chromedp.Action[T]) (v T, err error) {
	for range 5 {
		v, err = chromedp.Run(ctx, action)
		if err == nil || !contextReplaced(err) || ctx.Err() != nil {
			break
		}
		// The new page is on its way: give it a moment to arrive.
		time.Sleep(50 * time.Millisecond)
	}
	return v, err
}

// contextReplaced tells whether err is that of an evaluation in an
// execution context that a navigation destroyed, or that met the
// navigation under way (a page that moves on by itself, meta refresh),
// or of a query whose node went with the document that held it ("No
// node with given id found": a Text just after a redirect's last hop,
// seen once in CI).
func contextReplaced(err error) bool {
	var ex *chromedp.ExceptionError
	if errors.As(err, &ex) {
		return false // the script's own exception
	}
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") ||
		strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Inspected target navigated or closed") ||
		strings.Contains(msg, "No node with given id found")
}

// abbreviate shortens a script for an error message.
func abbreviate(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// Eval evaluates a JavaScript expression whose value is a string (see
// [Evaluate]).
func (b *Browser) Eval(t testing.TB, expr string) string {
	t.Helper()
	return Evaluate[string](t, b, expr)
}

// Text is the text of the first element of the CSS selector css, as
// shown (innerText).
func (b *Browser) Text(t testing.TB, css string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	text, err := runAcrossNavigation(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// WaitText waits until the first element of the CSS selector css has
// text, and returns it: for a page whose script writes its result into
// an element. The wait is a poll from the test, not a script of the page
// (chromedp.Poll compiles its predicate with new Function, which a strict
// Content-Security-Policy refuses), bounded by [StepTimeout]; it goes
// through the navigation that brings the element.
func (b *Browser) WaitText(t testing.TB, css string) string {
	t.Helper()
	sel, err := json.Marshal(css)
	if err != nil {
		t.Fatal(err)
	}
	expr := fmt.Sprintf(`document.querySelector(%s)?.textContent ?? ""`, sel)
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		text, err := evaluate[string](ctx, expr)
		if err != nil {
			t.Fatalf("wait for the text of %s: %v", css, err)
		}
		if text != "" {
			return text
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s has no text after %v", css, StepTimeout)
		case <-tick.C:
		}
	}
}

// WantHeading fails t unless the page's h1 reads want.
func (b *Browser) WantHeading(t testing.TB, want string) {
	t.Helper()
	if got := b.Text(t, "h1"); got != want {
		t.Errorf("heading %q, want %q", got, want)
	}
}

// WantFocusVisible focuses the element of the CSS selector css and fails
// t unless the focus shows: the solid outline of the stylesheets' focus
// ring.
func (b *Browser) WantFocusVisible(t testing.TB, css string) {
	t.Helper()
	b.Do(t, chromedp.Focus(chromedp.CSS(css)))
	if style := b.Eval(t, `getComputedStyle(document.activeElement).outlineStyle`); style != "solid" {
		t.Errorf("the focused %s has outline-style %q, want solid", css, style)
	}
}

// SetViewport resizes the tab to v. The page is not reloaded; its layout
// follows at once.
func (b *Browser) SetViewport(t testing.TB, v Viewport) {
	t.Helper()
	var opts []chromedp.EmulateViewportOption
	if v.Mobile {
		opts = append(opts, chromedp.EmulateMobile)
	}
	b.Do(t, chromedp.EmulateViewport(v.Width, v.Height, opts...))
	b.viewport = v
}

// Viewport is the viewport the tab emulates.
func (b *Browser) Viewport() Viewport { return b.viewport }

// SetColorScheme emulates the reader's preference for the light or the
// dark scheme.
func (b *Browser) SetColorScheme(t testing.TB, s Scheme) {
	t.Helper()
	Call(t, b, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: string(s)}}})
	b.scheme = s
}

// ColorScheme is the scheme the tab emulates.
func (b *Browser) ColorScheme() Scheme { return b.scheme }
