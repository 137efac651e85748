package web_test

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/userd/userd/adapters/httpapi"
	"github.com/userd/userd/adapters/web"
)

// phoneWidth is the narrowest screen the pages are made for (an iPhone SE
// or mini), in CSS pixels.
const (
	phoneWidth  = 375
	phoneHeight = 812
)

// screenshotDir is where the screenshots go: docs/img when
// USERD_UPDATE_SCREENSHOTS=1 (they are committed, and embedded in
// docs/pages.md), else a directory of the test's own.
func screenshotDir(t *testing.T) string {
	if os.Getenv("USERD_UPDATE_SCREENSHOTS") == "1" {
		return filepath.Join("..", "..", "docs", "img")
	}
	return t.TempDir()
}

// TestPages_in_chromium opens the links of delivered messages in a real
// headless Chromium, phone-sized, and goes through both pages as a person
// does: a click, then typing and Enter. No script of ours runs; the test
// reads the page through the DevTools protocol. Every page must fit the
// width of the phone, load its stylesheet, and make the browser refuse
// nothing under its Content-Security-Policy. Skipped without Chromium,
// except in CI.
func TestPages_in_chromium(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required in CI (.ci/run installs it): %v", err)
		}
		t.Skip("chromium is not installed: the pages are not checked in a browser (apt-get install chromium)")
	}
	e := newEnv(t)
	srv := httptest.NewServer(httpapi.New(e.svc, httpapi.Options{Logger: e.log, Pages: e.pages}))
	defer srv.Close()
	shots := screenshotDir(t)

	b := startBrowser(t, bin)
	console := b.console()

	// The verification link: the button, then the page that says it is done.
	verifyLink := e.register("ada@example.com")
	b.open(srv.URL+verifyLink, http.StatusOK)
	b.wantHeading("Verify your email address")
	b.screenshot(shots, "account-verify-email-375.png")
	b.submit(chromedp.Click(chromedp.CSS(`button[type="submit"]`)), http.StatusOK)
	b.wantHeading("Your email address is verified")
	b.screenshot(shots, "account-verify-email-done-375.png")
	if !e.user("ada@example.com").EmailVerified {
		t.Fatal("the browser's click did not verify the email")
	}

	// The reset link: the form, in the light and the dark scheme.
	resetLink := e.requestReset("ada@example.com")
	b.setColorScheme("dark")
	b.open(srv.URL+resetLink, http.StatusOK)
	if bg := b.eval(`getComputedStyle(document.body).backgroundColor`); bg != "rgb(18, 20, 23)" {
		t.Errorf("the dark scheme's background is %s", bg)
	}
	b.screenshot(shots, "account-reset-password-dark-375.png")
	b.setColorScheme("light")
	b.open(srv.URL+resetLink, http.StatusOK)
	b.wantHeading("Choose a new password")
	b.screenshot(shots, "account-reset-password-375.png")
	b.wantFocusVisible("#password")

	// A password the policy refuses comes back beside its field, typed
	// and sent with Enter, as from a keyboard.
	b.do(chromedp.SendKeys(chromedp.ID("password"), "password"))
	b.submit(chromedp.SendKeys(chromedp.ID("confirm"), "password\n"), http.StatusBadRequest)
	b.wantHeading("Choose a new password")
	if msg := b.text("#password-error"); !strings.Contains(msg, "The new password is too common.") {
		t.Errorf("the field's error reads %q", msg)
	}
	if got := b.eval(`document.getElementById("password").getAttribute("aria-describedby")`); got != "password-hint password-error" {
		t.Errorf("aria-describedby = %q", got)
	}
	b.screenshot(shots, "account-reset-password-error-375.png")

	// The link still works.
	b.do(chromedp.SendKeys(chromedp.ID("password"), newPassword))
	b.submit(chromedp.SendKeys(chromedp.ID("confirm"), newPassword+"\n"), http.StatusOK)
	b.wantHeading("Your password is changed")
	b.screenshot(shots, "account-reset-password-done-375.png")
	if !e.canLogin("ada@example.com", newPassword) {
		t.Fatal("the password set in the browser does not sign in")
	}

	for _, m := range console() {
		// The two errors the browser logs by itself: the form sent back
		// with its field's error is a 400, and the browser asks for a
		// /favicon.ico, which userd does not serve.
		expected := m.Source == "network" && (strings.HasSuffix(m.URL, web.ResetPasswordPath) && strings.Contains(m.Text, "status of 400") ||
			strings.HasSuffix(m.URL, "/favicon.ico") && strings.Contains(m.Text, "status of 404"))
		if !expected {
			t.Errorf("the browser's console: %s (%s, source %q)", m, m.URL, m.Source)
		}
	}
}

// TestPages_in_chromium_console_check_can_fail makes sure that the console
// check above sees what it looks for: a page under the same policy with an
// inline style is refused, and says so.
func TestPages_in_chromium_console_check_can_fail(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required in CI (.ci/run installs it): %v", err)
		}
		t.Skip("chromium is not installed")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Security-Policy", wantHeaders["Content-Security-Policy"])
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><title>probe</title><p style="color: red">inline</p><h1>x</h1>`))
	}))
	defer srv.Close()
	b := startBrowser(t, bin)
	console := b.console()
	b.navigate(srv.URL)
	b.wantHeading("x")
	var seen bool
	for _, m := range console() {
		seen = seen || strings.Contains(m.Text, "Content Security Policy")
	}
	if !seen {
		t.Error("an inline style refused by the policy left no message in the console")
	}
}

// browser is one headless Chromium tab, phone-sized, with the test's
// failures.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func startBrowser(t *testing.T, bin string) *browser {
	t.Helper()
	profile, err := os.MkdirTemp("", "userd-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// Best effort: a browser helper may still be writing into it.
	t.Cleanup(func() { _ = os.RemoveAll(profile) })
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(profile),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true),
		// Only the test server resolves: nothing may come from the network.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	// The first call starts the browser, bound to ctx (no timeout); each
	// step below has its own.
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateMobile)); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Logf("chromium started in %v", time.Since(start).Round(time.Millisecond))
	return &browser{t: t, ctx: ctx}
}

// stepTimeout bounds one step: a page of this size loads in milliseconds.
const stepTimeout = 30 * time.Second

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// open navigates to url and checks the page's status and layout.
func (b *browser) open(url string, status int) {
	b.t.Helper()
	b.checkPage(b.navigate(url), status)
}

// navigate loads url and returns its status.
func (b *browser) navigate(url string) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	res, err := chromedp.Run(ctx, chromedp.NavigateResponse(url))
	if err != nil {
		b.t.Fatalf("open %s: %v", url, err)
	}
	return res.Status
}

// submit runs action, which sends a form, and waits for the page it leads to.
func (b *browser) submit(action chromedp.Action[chromedp.Void], status int) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	res, err := chromedp.RunResponse(ctx, action)
	if err != nil {
		b.t.Fatalf("submit: %v", err)
	}
	b.checkPage(res.Status, status)
}

// checkPage checks the page now shown: its status, that its stylesheet
// applies, and that nothing is wider than the phone.
func (b *browser) checkPage(got int64, want int) {
	b.t.Helper()
	if got != int64(want) {
		b.t.Fatalf("status %d, want %d", got, want)
	}
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	if err != nil {
		b.t.Fatal(err)
	}
	if width > phoneWidth {
		b.t.Errorf("the page is %d px wide, wider than the %d px of the phone", width, phoneWidth)
	}
	if bg := b.eval(`getComputedStyle(document.body).backgroundColor`); bg == "rgba(0, 0, 0, 0)" {
		b.t.Error("the stylesheet does not apply")
	}
}

// eval evaluates a JavaScript expression through the DevTools protocol
// (not in the page, whose policy allows no script) and returns its string.
func (b *browser) eval(expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b *browser) text(css string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", css, err)
	}
	return v
}

func (b *browser) wantHeading(want string) {
	b.t.Helper()
	if got := b.text("h1"); got != want {
		b.t.Errorf("heading %q, want %q", got, want)
	}
}

// wantFocusVisible focuses the element of css and checks that the focus
// shows: an outline of the stylesheet's focus ring.
func (b *browser) wantFocusVisible(css string) {
	b.t.Helper()
	b.do(chromedp.Focus(chromedp.CSS(css)))
	if style := b.eval(`getComputedStyle(document.activeElement).outlineStyle`); style != "solid" {
		b.t.Errorf("the focused %s has outline-style %q", css, style)
	}
}

// setColorScheme emulates the reader's preference for a light or dark
// scheme.
func (b *browser) setColorScheme(scheme string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
	if err != nil {
		b.t.Fatal(err)
	}
}

// screenshot saves the viewport as a PNG named name in dir, and checks it.
func (b *browser) screenshot(dir, name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		b.t.Fatalf("screenshot %s is not a PNG: %v", name, err)
	}
	if w := img.Bounds().Dx(); w != phoneWidth {
		b.t.Errorf("screenshot %s is %d px wide, want %d", name, w, phoneWidth)
	}
	if err := os.WriteFile(filepath.Join(dir, name), buf, 0o600); err != nil {
		b.t.Fatal(err)
	}
}

// console collects what the page writes to the console from now on; the
// func it returns stops and returns the messages that are errors or
// warnings (a refusal of the Content-Security-Policy is an error).
func (b *browser) console() func() []chromedp.ConsoleMessage {
	ctx, stop := context.WithCancel(b.ctx)
	messages := chromedp.Console(ctx)
	var (
		mu   sync.Mutex
		got  []chromedp.ConsoleMessage
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException() {
				mu.Lock()
				got = append(got, m)
				mu.Unlock()
			}
		}
	}()
	return func() []chromedp.ConsoleMessage {
		// The browser reports a refusal as it happens, before the load
		// that the last step waited for; a moment more covers a late one.
		time.Sleep(200 * time.Millisecond)
		stop()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}
