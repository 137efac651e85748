package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/test/chromium"
)

func TestDocs_page_is_self_contained(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	res := s.do("GET", "/docs", nil, withHeader("Accept", "text/html"))
	if res.Status != http.StatusOK || mediaType(res.Header) != "text/html" {
		t.Fatalf("GET /docs: %d %s", res.Status, res.Header.Get("Content-Type"))
	}
	page := string(res.Body)

	csp := res.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self';", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	for _, bad := range []string{"unsafe-inline", "unsafe-eval", "http:", "https:", "*", "blob:"} {
		if strings.Contains(csp, bad) {
			t.Errorf("Content-Security-Policy %q allows %q", csp, bad)
		}
	}
	nonce := regexp.MustCompile(`'nonce-([A-Za-z0-9_-]{22})'`).FindStringSubmatch(csp)
	if nonce == nil {
		t.Fatalf("no nonce in %q", csp)
	}
	if !strings.Contains(page, `nonce="`+nonce[1]+`"`) || !strings.Contains(page, `data-nonce="`+nonce[1]+`"`) {
		t.Error("the page does not use the nonce of its Content-Security-Policy")
	}
	if again := s.do("GET", "/docs", nil).Header.Get("Content-Security-Policy"); again == csp {
		t.Error("two answers share a nonce")
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q: a page with a nonce must not be cached", cc)
	}
	if regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).MatchString(page) {
		t.Error("the page refers to another origin")
	}

	// Every script of the page is served, cacheable, by the handler.
	scripts := regexp.MustCompile(`<script src="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(scripts) == 0 {
		t.Fatal("no script in the page")
	}
	for _, m := range scripts {
		res := s.do("GET", "/"+m[1], nil, withHeader("Accept", "*/*"))
		if res.Status != http.StatusOK || mediaType(res.Header) != "text/javascript" || len(res.Body) == 0 {
			t.Errorf("GET /%s: %d %s, %d bytes", m[1], res.Status, res.Header.Get("Content-Type"), len(res.Body))
			continue
		}
		if etag := res.Header.Get("ETag"); s.do("GET", "/"+m[1], nil, withHeader("If-None-Match", etag)).Status != http.StatusNotModified {
			t.Errorf("GET /%s with If-None-Match %s is not a 304", m[1], etag)
		}
	}
	// The licences of the bundle are served beside it.
	for _, f := range []string{"LICENSE.txt", "redoc.standalone.js.LICENSE.txt"} {
		if res := s.do("GET", "/docs/"+f, nil); res.Status != http.StatusOK || mediaType(res.Header) != "text/plain" {
			t.Errorf("GET /docs/%s: %d %s", f, res.Status, res.Header.Get("Content-Type"))
		}
	}
	for _, path := range []string{"/docs/nope.js", "/docs/", "/docs/init.js/x", "/docs/..%2fopenapi.yaml"} {
		wantProblem(t, s.do("GET", path, nil), http.StatusNotFound, "not_found")
	}
}

// TestDocs_rendered_in_chromium loads /docs in a real headless Chromium and
// looks for every operation of the document on the rendered page. The
// browser may reach 127.0.0.1 only, so the page must render from what
// userd serves. Skipped without Chromium, except in CI.
func TestDocs_rendered_in_chromium(t *testing.T) {
	t.Parallel()
	v := docValidatorFor(t)
	srv := httptest.NewServer(newTestServer(t).handler)
	defer srv.Close()

	start := time.Now()
	page, console := chromium.DumpDOM(t, srv.URL+"/docs")
	t.Logf("chromium rendered /docs in %v (%d bytes of DOM)", time.Since(start).Round(time.Millisecond), len(page))

	if strings.Contains(page, "Something went wrong") {
		t.Fatalf("Redoc failed to render the document:\n%s", chromium.LastLines(page, 20))
	}
	// Redoc lists each operation as <span class="… http-verb get">get</span><span …>/path</span>.
	for _, op := range v.operations() {
		method, path, _ := strings.Cut(op, " ")
		m := strings.ToLower(method)
		listed := regexp.MustCompile(`http-verb ` + m + `"[^>]*>` + m + `</span><span[^>]*>` + regexp.QuoteMeta(path) + `</span>`)
		if !listed.MatchString(page) {
			t.Errorf("%s is not listed on the rendered /docs page", op)
		}
	}
	// The Content-Security-Policy refused nothing but the logo of Redoc's
	// "API docs by Redocly" link, which would come from the network.
	for _, line := range strings.Split(console, "\n") {
		if strings.Contains(line, "Content Security Policy") && !strings.Contains(line, "https://cdn.redoc.ly/redoc/logo-mini.svg") {
			t.Errorf("refused by the Content-Security-Policy: %s", line)
		}
		if strings.Contains(line, "Uncaught") {
			t.Errorf("script error: %s", line)
		}
	}
}
