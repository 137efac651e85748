package httpapi

import (
	"crypto/rand"
	"embed"
	"encoding/base64"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
)

// docsFiles are the files of the /docs page: the Redoc standalone bundle
// (vendored from npm, see docs/README.md), its licences, and the script
// that starts it. Nothing of the page comes from the network.
//
//go:embed docs/redoc.standalone.js docs/redoc.standalone.js.LICENSE.txt docs/LICENSE.txt docs/init.js
var docsFiles embed.FS

// docsAssets maps a file name under /docs/ to its content.
var docsAssets = sync.OnceValue(func() map[string]staticFile {
	entries, err := docsFiles.ReadDir("docs")
	if err != nil {
		panic("httpapi: embedded docs: " + err.Error())
	}
	out := make(map[string]staticFile, len(entries))
	for _, e := range entries {
		body, err := docsFiles.ReadFile(path.Join("docs", e.Name()))
		if err != nil {
			panic("httpapi: embedded docs: " + err.Error())
		}
		ct := "text/plain; charset=utf-8"
		if strings.HasSuffix(e.Name(), ".js") {
			ct = "text/javascript; charset=utf-8"
		}
		out[e.Name()] = newStaticFile(body, ct)
	}
	return out
})

// docsPage is the HTML of /docs; nonceMarker is replaced by each answer's
// nonce. URLs are relative, so that the page works behind a proxy that
// serves userd under a path prefix.
const (
	nonceMarker = "{{nonce}}"
	docsPage    = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>userd API reference</title>
<style nonce="{{nonce}}">body { margin: 0; padding: 0; }</style>
</head>
<body>
<noscript>This page needs JavaScript. The OpenAPI document it renders is at <a href="openapi.json">openapi.json</a>.</noscript>
<div id="redoc" data-spec-url="openapi.json" data-nonce="{{nonce}}"></div>
<script src="docs/redoc.standalone.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`
)

// docsCSP confines the page to its own origin. Redoc injects its styles
// as <style> elements, which carry the nonce once init.js has passed it to
// Redoc; the two it injects while its bundle loads, before it knows the
// nonce, are allowed by their hashes (the scroll bars' CSS, and an empty
// element). No inline script runs at all. Search is off in init.js: it
// would run in a worker made from a blob: URL. The one thing the bundle
// would fetch from elsewhere, the logo of its "API docs by Redocly" link,
// is refused by img-src and not shown.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'nonce-" + nonceMarker + "' " +
	"'" + redocScrollbarCSSHash + "' 'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='; " +
	"img-src 'self' data:; font-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// redocScrollbarCSSHash is the CSP hash of the perfect-scrollbar CSS that
// redoc.standalone.js 2.5.4 injects as it loads. A new bundle may change
// it: the Chromium test of /docs fails on any refused style.
const redocScrollbarCSSHash = "sha256-QMIg+bpjm3JdElJ388KYke01izlUW0UoNOeKjpMxdgc="

// docs answers GET /docs: a reference page that renders /openapi.json.
func (h *handler) docs(c *gin.Context) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	nonce := base64.RawURLEncoding.EncodeToString(b[:])
	c.Header("Cache-Control", "no-store") // the nonce must not be reused
	c.Header("Content-Security-Policy", strings.ReplaceAll(docsCSP, nonceMarker, nonce))
	c.Header("Referrer-Policy", "no-referrer")
	c.Data(http.StatusOK, "text/html; charset=utf-8", []byte(strings.ReplaceAll(docsPage, nonceMarker, nonce)))
}

// docsAsset answers GET /docs/:file with one of the page's files.
func (h *handler) docsAsset(c *gin.Context) {
	f, ok := docsAssets()[c.Param("file")]
	if !ok {
		h.noRoute(c)
		return
	}
	serveStatic(c, f)
}
