package httpapi

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	"gopkg.in/yaml.v3"
)

// openAPIYAML is the OpenAPI 3.1 document of every route of this handler.
// The HTTP tests validate each response they receive against it, so it
// cannot drift from the code unnoticed.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// openAPIDocument is the document as served at /openapi.json: converted
// from YAML once, when the first handler is built. The YAML is part of the
// binary and loaded by the tests, so a failure is a build defect.
var openAPIDocument = sync.OnceValue(func() staticFile {
	body, err := yamlToJSON(openAPIYAML)
	if err != nil {
		panic(fmt.Sprintf("httpapi: the embedded openapi.yaml: %v", err))
	}
	return newStaticFile(body, "application/json")
})

// OpenAPI returns the OpenAPI document of the handler as JSON, as served at
// GET /openapi.json. The caller must not modify it.
func OpenAPI() []byte { return openAPIDocument().body }

func (h *handler) openAPI(c *gin.Context) {
	serveStatic(c, openAPIDocument())
}

// staticFile is content that never changes while the process runs, with a
// strong validator for conditional requests.
type staticFile struct {
	body        []byte
	contentType string
	etag        string
}

func newStaticFile(body []byte, contentType string) staticFile {
	sum := sha256.Sum256(body)
	return staticFile{body: body, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

// staticCacheControl lets caches keep static content for five minutes and
// revalidate it with the ETag after that: a new version of userd may serve
// a new document under the same URL.
const staticCacheControl = "public, max-age=300"

// serveStatic answers with f, or with 304 when the client's copy is current.
func serveStatic(c *gin.Context, f staticFile) {
	c.Header("Cache-Control", staticCacheControl)
	c.Header("ETag", f.etag)
	if etagMatches(c.Request.Header.Values("If-None-Match"), f.etag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, f.contentType, f.body)
}

// etagMatches applies If-None-Match (RFC 9110, 13.1.2): "*" or a list of
// entity tags, compared weakly.
func etagMatches(values []string, etag string) bool {
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == etag {
				return true
			}
		}
	}
	return false
}

// yamlToJSON converts a YAML document to JSON, keeping the order of
// mapping keys (a map would sort them, and the rendered reference follows
// the document's order). Anchors and aliases are expanded; merge keys and
// duplicate keys are refused.
func yamlToJSON(src []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeYAMLNodeAsJSON(&buf, &doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeYAMLNodeAsJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return errors.New("not a single YAML document")
		}
		return writeYAMLNodeAsJSON(buf, n.Content[0])
	case yaml.AliasNode:
		return writeYAMLNodeAsJSON(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				return fmt.Errorf("line %d: mapping keys must be plain scalars", k.Line)
			}
			if seen[k.Value] {
				return fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				buf.WriteByte(',')
			}
			key, _ := json.Marshal(k.Value) // a string always encodes
			buf.Write(key)
			buf.WriteByte(':')
			if err := writeYAMLNodeAsJSON(buf, v); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeYAMLNodeAsJSON(buf, item); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.ScalarNode:
		var v any
		switch n.ShortTag() {
		case "!!null", "!!bool", "!!int", "!!float":
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
		default:
			// Strings, and what YAML would read as a timestamp or binary:
			// in a JSON document they are the text as written.
			v = n.Value
		}
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		buf.Write(b)
		return nil
	}
	return fmt.Errorf("line %d: unsupported YAML node", n.Line)
}
