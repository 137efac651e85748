package chromium

import (
	"bytes"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// strictPolicy is the Content-Security-Policy of userd's pages: no
// script at all, styles from the server only.
const strictPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// page is an HTML document of the test server, under strictPolicy.
type page struct {
	body   string
	policy string // strictPolicy when empty; "-" for none
	status int    // 200 when 0
}

const head = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>probe</title><link rel="stylesheet" href="/style.css"></head>`

// style is the stylesheet of the pages; .dim is legible in the light
// scheme only.
const style = `body { margin: 0; font: 16px/1.5 sans-serif; background: #fff; color: #111; }
main { padding: 1rem; }
.dim { color: #595959; }
:focus-visible { outline: 3px solid #f5b400; }
.scroll { overflow-x: auto; }
.wide { width: 600px; }
@media (prefers-color-scheme: dark) {
  body { background: #111; color: #eee; }
  .dim { color: #aaa; }
  .dark-dim { color: #333; }
}`

var pages = map[string]page{
	"/good": {body: head + `<body><main><h1>Fine</h1><p class="dim">Legible in light and dark.</p>
<form method="post" action="/good"><label for="name">Name</label><input id="name" name="name"><button type="submit">Send</button></form>
<div class="scroll"><table><tr><td class="wide">A wide table, in a box that scrolls.</td></tr></table></div></main></body></html>`},
	"/bad": {body: head + `<body><main><h1>Broken</h1><img src="/missing.png"><input name="nameless">
<p class="dark-dim">Dim in the dark.</p></main></body></html>`},
	"/wide":       {body: head + `<body><main><h1>Wide</h1><div id="banner" class="wide">Six hundred pixels</div></main></body></html>`},
	"/noviewport": {body: strings.Replace(head, `<meta name="viewport" content="width=device-width, initial-scale=1">`, "", 1) + `<body><main><h1>Small</h1></main></body></html>`},
	"/inline":     {body: head + `<body><main><h1>x</h1><p style="color: red">inline</p></main></body></html>`},
	"/long":       {body: head + `<body><main><h1>Long</h1>` + strings.Repeat(`<p>A paragraph of a long page.</p>`, 80) + `</main></body></html>`},
	"/gone":       {body: head + `<body><main><h1>Gone</h1></main></body></html>`, status: http.StatusGone},
	"/script": {policy: "-", body: head + `<body><main><h1>Later</h1><pre id="result"></pre>
<script>setTimeout(() => { document.getElementById("result").textContent = "done"; }, 100);</script></main></body></html>`},
}

func server(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/style.css" {
			w.Header().Set("Content-Type", "text/css; charset=utf-8")
			_, _ = w.Write([]byte(style))
			return
		}
		p, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		switch p.policy {
		case "":
			w.Header().Set("Content-Security-Policy", strictPolicy)
		case "-":
		default:
			w.Header().Set("Content-Security-Policy", p.policy)
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if p.status != 0 {
			w.WriteHeader(p.status)
		}
		_, _ = w.Write([]byte(p.body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestKit checks the checks: each finds what it looks for on a page made
// to fail it, and nothing on a page made to pass. One browser serves the
// subtests, one after the other. Not parallel: it keeps its screenshots
// out of docs/img whatever USERD_UPDATE_SCREENSHOTS says.
func TestKit(t *testing.T) {
	t.Setenv(UpdateScreenshotsEnv, "")
	srv := server(t)
	b := Start(t)

	t.Run("a_good_page_passes", func(t *testing.T) {
		b.Open(t, srv.URL+"/good", http.StatusOK)
		b.WantHeading(t, "Fine")
		b.WantFocusVisible(t, "#name")
		b.CheckPage(t, "good")
		if b.Viewport() != Desktop || b.ColorScheme() != Light {
			t.Errorf("after CheckPage: %s, %s; want desktop, light", b.Viewport().Name, b.ColorScheme())
		}
	})

	t.Run("axe_runs_under_a_strict_policy_and_finds_violations", func(t *testing.T) {
		b.Open(t, srv.URL+"/bad", http.StatusOK)
		b.ConsoleMessages(t) // the missing image
		light := ids(b.violations(t))
		for _, want := range []string{"image-alt", "label"} {
			if !slices.Contains(light, want) {
				t.Errorf("axe found %v, want %s among them", light, want)
			}
		}
		if slices.Contains(light, "color-contrast") {
			t.Errorf("axe found a contrast violation in the light scheme: %v", light)
		}
		b.SetColorScheme(t, Dark)
		defer b.SetColorScheme(t, Light)
		if dark := ids(b.violations(t)); !slices.Contains(dark, "color-contrast") {
			t.Errorf("axe found %v in the dark scheme, want color-contrast among them", dark)
		}
		v := b.violations(t)
		i := slices.IndexFunc(v, func(v Violation) bool { return v.ID == "image-alt" })
		if i < 0 || v[i].Impact == "" || v[i].Help == "" || len(v[i].Nodes) != 1 || !slices.Equal(v[i].Nodes[0].Target, []string{"img"}) {
			t.Errorf("the image-alt violation: %+v", v)
		}
	})

	t.Run("overflow_is_found_on_a_phone", func(t *testing.T) {
		b.Open(t, srv.URL+"/wide", http.StatusOK)
		b.SetViewport(t, Phone)
		defer b.SetViewport(t, Desktop)
		got := b.overflows(t)
		if len(got) != 2 || !strings.Contains(got[0], "the page is") || !strings.Contains(got[1], "div#banner.wide reaches") {
			t.Errorf("overflows %q, want the page and div#banner", got)
		}
		b.Open(t, srv.URL+"/good", http.StatusOK)
		if got := b.overflows(t); len(got) != 0 {
			t.Errorf("a table in a scrolling box overflows: %q", got)
		}
		b.Open(t, srv.URL+"/noviewport", http.StatusOK)
		if got := b.overflows(t); len(got) != 1 || !strings.Contains(got[0], "laid out 980 px wide") {
			t.Errorf("a page without a viewport tag: %q", got)
		}
	})

	t.Run("the_console_sees_a_refusal_of_the_policy", func(t *testing.T) {
		b.Open(t, srv.URL+"/inline", http.StatusOK)
		var seen bool
		for _, m := range b.ConsoleMessages(t) {
			seen = seen || strings.Contains(m.Text, "Content Security Policy")
		}
		if !seen {
			t.Error("an inline style refused by the policy left no message in the console")
		}
		if msgs := b.ConsoleMessages(t); len(msgs) != 0 {
			t.Errorf("the console's messages were taken, and are still there: %v", msgs)
		}
	})

	t.Run("an_expected_error_status_is_no_console_error", func(t *testing.T) {
		b.Open(t, srv.URL+"/gone", http.StatusGone)
		msgs := b.ConsoleMessages(t)
		if len(msgs) != 1 || !b.console.expectedError(msgs[0]) {
			t.Errorf("the console after a 410: %v, want the browser's one error, expected", msgs)
		}
	})

	t.Run("screenshots_are_full_pages", func(t *testing.T) {
		b.Open(t, srv.URL+"/long", http.StatusOK)
		dir := t.TempDir()
		b.Screenshot(t, filepath.Join(dir, "long.png"))
		buf, err := os.ReadFile(filepath.Join(dir, "long.png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(buf))
		if err != nil {
			t.Fatal(err)
		}
		if h := img.Bounds().Dy(); h <= int(Desktop.Height) {
			t.Errorf("the screenshot of a long page is %d px high, no more than the viewport", h)
		}
	})

	t.Run("wait_text_waits_for_a_script", func(t *testing.T) {
		b.Open(t, srv.URL+"/script", http.StatusOK)
		if got := b.WaitText(t, "#result"); got != "done" {
			t.Errorf("#result reads %q", got)
		}
	})

	b.CheckConsole(t)
}

func ids(v []Violation) []string {
	var out []string
	for _, v := range v {
		out = append(out, v.ID)
	}
	return out
}

func TestModuleRoot(t *testing.T) {
	t.Parallel()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "test", "chromium", "chromium.go")); err != nil {
		t.Errorf("the module root %s: %v", root, err)
	}
}

// TestDumpDOM: the DOM of a page is returned after its scripts ran, and a
// refusal of the page's Content-Security-Policy is in the console.
func TestDumpDOM(t *testing.T) {
	t.Parallel()
	srv := server(t)
	dom, _ := DumpDOM(t, srv.URL+"/script")
	if !strings.Contains(dom, `<pre id="result">done</pre>`) {
		t.Errorf("the script's text is not in the DOM:\n%s", LastLines(dom, 5))
	}
	_, console := DumpDOM(t, srv.URL+"/inline")
	if !strings.Contains(console, "Content Security Policy") {
		t.Errorf("the inline style's refusal is not in the console:\n%s", LastLines(console, 10))
	}
}
