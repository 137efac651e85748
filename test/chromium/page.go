package chromium

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// UpdateScreenshotsEnv is the variable that, set to 1, makes Screenshots
// and CheckPage write their screenshots into docs/img, to be committed;
// otherwise they go into a temporary directory of the test.
const UpdateScreenshotsEnv = "USERD_UPDATE_SCREENSHOTS"

// Variant is one of the four looks of a page that CheckPage checks and
// photographs.
type Variant struct {
	Viewport Viewport
	Scheme   Scheme
}

// Variants are the looks of every page, in the order CheckPage takes
// them: desktop light, desktop dark, phone light, phone dark.
var Variants = []Variant{{Desktop, Light}, {Desktop, Dark}, {Phone, Light}, {Phone, Dark}}

// file is the name of the screenshot of page in v.
func (v Variant) file(page string) string {
	return page + "-" + v.Viewport.Name + "-" + string(v.Scheme) + ".png"
}

// CheckPage is the check of a page, for a test to call after each page it
// opens or submits: the page's stylesheets load and its console has no
// unexpected error or warning ([Browser.CheckConsole]); then, in each of
// the four [Variants], axe-core finds no violation of WCAG 2.1 A and AA
// ([Browser.CheckAccessibility]; the dark scheme has contrasts of its
// own), nothing passes the side of the phone ([Browser.CheckNoOverflow],
// at Phone), and a full-page screenshot is taken ([Browser.Screenshots]).
// name names the page in messages and in the screenshots' names: lower
// case words joined by hyphens, such as "account-reset-password-error".
// The viewport and the scheme are those of before when it returns.
func (b *Browser) CheckPage(t testing.TB, name string) {
	t.Helper()
	b.CheckStylesheets(t)
	b.CheckConsole(t)
	b.eachVariant(t, name, func(v Variant, dir string) {
		t.Helper()
		b.CheckAccessibility(t, name)
		if v.Viewport.Mobile {
			b.CheckNoOverflow(t)
		}
		b.Screenshot(t, filepath.Join(dir, v.file(name)))
	})
}

// Screenshots takes four full-page PNGs of the page shown, one in each of
// the [Variants], named <name>-desktop-light.png, <name>-desktop-dark.png,
// <name>-phone-light.png and <name>-phone-dark.png: into docs/img when
// USERD_UPDATE_SCREENSHOTS=1 (they are committed, and shown in the docs),
// else into a temporary directory of the test, so that every run takes
// them. The viewport and the scheme are those of before when it returns.
func (b *Browser) Screenshots(t testing.TB, name string) {
	t.Helper()
	b.eachVariant(t, name, func(v Variant, dir string) {
		t.Helper()
		b.Screenshot(t, filepath.Join(dir, v.file(name)))
	})
}

// pageName is the shape of a page's name: it names files.
var pageName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// eachVariant shows the page in each of the Variants in turn and calls
// f, with the directory of the screenshots; then it restores the
// viewport and the scheme.
func (b *Browser) eachVariant(t testing.TB, name string, f func(v Variant, dir string)) {
	t.Helper()
	if !pageName.MatchString(name) {
		t.Fatalf("page name %q: want lower case words joined by hyphens", name)
	}
	dir := ScreenshotDir(t)
	viewport, scheme := b.viewport, b.scheme
	defer func() {
		b.SetViewport(t, viewport)
		b.SetColorScheme(t, scheme)
	}()
	for _, v := range Variants {
		if b.viewport != v.Viewport {
			b.SetViewport(t, v.Viewport)
		}
		if b.scheme != v.Scheme {
			b.SetColorScheme(t, v.Scheme)
		}
		f(v, dir)
	}
}

// ScreenshotDir is where the screenshots of t go: docs/img of the module
// when USERD_UPDATE_SCREENSHOTS=1, else a new temporary directory.
func ScreenshotDir(t testing.TB) string {
	t.Helper()
	if os.Getenv(UpdateScreenshotsEnv) != "1" {
		return t.TempDir()
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "docs", "img")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Screenshot saves a PNG of the whole page shown, as wide as the viewport
// and as long as the page (at least the viewport's height), into path.
func (b *Browser) Screenshot(t testing.TB, path string) {
	t.Helper()
	buf := Run(t, b, chromedp.FullScreenshot(100))
	cfg, err := png.DecodeConfig(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", path, err)
	}
	if cfg.Width != int(b.viewport.Width) || cfg.Height < int(b.viewport.Height) {
		t.Errorf("screenshot %s is %d × %d px, want %d px wide and at least %d px high", path, cfg.Width, cfg.Height, b.viewport.Width, b.viewport.Height)
	}
	if err := os.WriteFile(path, buf, 0o600); err != nil {
		t.Fatal(err)
	}
}

// overflowScript measures what passes the right side of the layout
// viewport (the width of the document element: on a phone that shrinks
// a wide page to fit, innerWidth is the width shown, not the width the
// page was laid out for): the document's width, and the outermost
// elements whose right edge is past it, leaving out those that a
// narrower ancestor clips or scrolls (a wide table in a scrolling box).
const overflowScript = `(() => {
  const vw = document.documentElement.clientWidth, slack = 0.5;
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + [...el.classList].map((c) => "." + c).join("");
  const path = (el) => {
    const parts = [];
    for (let e = el; e && e !== document.body && parts.length < 4; e = e.parentElement) parts.unshift(name(e));
    return parts.join(" > ");
  };
  const clipped = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== "visible" && p.getBoundingClientRect().right + scrollX <= vw + slack) return true;
    }
    return false;
  };
  const wide = new Set(), elements = [];
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.right + scrollX <= vw + slack || clipped(el)) continue;
    wide.add(el);
    let outer = true;
    for (let p = el.parentElement; p; p = p.parentElement) if (wide.has(p)) { outer = false; break; }
    if (outer) elements.push({element: path(el), right: Math.round(r.right + scrollX)});
  }
  return {width: vw, scrollWidth: document.documentElement.scrollWidth, elements};
})()`

// overflow is what overflowScript measures.
type overflow struct {
	Width       int64 `json:"width"` // of the layout viewport
	ScrollWidth int64 `json:"scrollWidth"`
	Elements    []struct {
		Element string `json:"element"`
		Right   int64  `json:"right"`
	} `json:"elements"`
}

// overflows lists what passes the side of the viewport emulated now.
func (b *Browser) overflows(t testing.TB) []string {
	t.Helper()
	o := Evaluate[overflow](t, b, overflowScript)
	if b.viewport.Mobile && o.Width != b.viewport.Width {
		// Without <meta name="viewport" content="width=device-width">
		// a phone lays the page out 980 px wide and shrinks it to fit:
		// nothing overflows, and everything is too small to read.
		return []string{fmt.Sprintf("the page is laid out %d px wide on a phone %d px wide: no <meta name=\"viewport\" content=\"width=device-width\">?", o.Width, b.viewport.Width)}
	}
	var out []string
	if o.ScrollWidth > o.Width {
		out = append(out, fmt.Sprintf("the page is %d px wide, wider than the %d px of the viewport", o.ScrollWidth, o.Width))
	}
	for _, e := range o.Elements {
		out = append(out, fmt.Sprintf("%s reaches %d px, past the %d px of the viewport", e.Element, e.Right, o.Width))
	}
	return out
}

// CheckNoOverflow fails t if anything of the page shown passes the right
// side of the viewport emulated now (CheckPage runs it at Phone, 375 px):
// the document is wider than the viewport, or an element's right edge
// is past it (each outermost such element is named), or, on a phone, the
// page is laid out wider than the screen for want of a viewport meta tag.
// An element that a narrower ancestor clips or scrolls does not count.
func (b *Browser) CheckNoOverflow(t testing.TB) {
	t.Helper()
	for _, o := range b.overflows(t) {
		t.Errorf("at %d px (%s): %s", b.viewport.Width, b.viewport.Name, o)
	}
}

// CheckStylesheets fails t for each stylesheet that the page links and
// that did not load: refused by the Content-Security-Policy, not found,
// or not served as text/css.
func (b *Browser) CheckStylesheets(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, StepTimeout)
	defer cancel()
	missing, err := evaluate[[]string](ctx, `[...document.querySelectorAll('link[rel~="stylesheet"]')].filter((l) => !l.sheet).map((l) => l.href)`)
	if err != nil {
		t.Fatalf("look at the stylesheets: %v", err)
	}
	if len(missing) > 0 {
		t.Errorf("the stylesheets %s did not load", strings.Join(missing, ", "))
	}
}
