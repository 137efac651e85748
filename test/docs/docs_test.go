// Package docs_test checks the documentation that a newcomer reads first:
// README.md stays short, and every link in README.md and docs/*.md leads
// to a file of this repository, so a fresh clone has no dead link.
package docs_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, seen from this package's directory.
const root = "../.."

// maxReadmeBytes is the README's budget: 20 KB, counted as 20,000 bytes so
// that it holds under either reading of "KB".
const maxReadmeBytes = 20_000

func TestReadme_is_short(t *testing.T) {
	info, err := os.Stat(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > maxReadmeBytes {
		t.Errorf("README.md is %d bytes, over the budget of %d: move detail into docs/", info.Size(), maxReadmeBytes)
	}
}

// TestLinks_stay_in_the_repository checks every link of README.md and
// docs/*.md: no URL with a scheme or absolute path, no way out of the
// repository, and a relative target that exists, down to the heading when
// the link names one. Code blocks and code spans are not links.
func TestLinks_stay_in_the_repository(t *testing.T) {
	files := markdownFiles(t)
	for _, file := range files {
		doc := readDoc(t, file)
		if strings.Contains(doc.raw, "../shared/") {
			t.Errorf("%s mentions ../shared/, which a clone of the repository does not have", file)
		}
		for _, l := range doc.links {
			if err := checkLink(file, l.target); err != nil {
				t.Errorf("%s:%d: link %q: %v", file, l.line, l.target, err)
			}
		}
	}
}

// TestDocs_are_linked_from_the_readme: a newcomer finds every document of
// docs/ from the README.
func TestDocs_are_linked_from_the_readme(t *testing.T) {
	linked := map[string]bool{}
	for _, l := range readDoc(t, "README.md").links {
		if path, _, _ := strings.Cut(l.target, "#"); path != "" {
			linked[filepath.ToSlash(filepath.Clean(path))] = true
		}
	}
	for _, file := range markdownFiles(t) {
		if file != "README.md" && !linked[file] {
			t.Errorf("README.md does not link %s", file)
		}
	}
}

// TestLinkCheck_catches_bad_links makes sure the check above can fail.
func TestLinkCheck_catches_bad_links(t *testing.T) {
	for _, tt := range []struct {
		file, target string
		ok           bool
	}{
		{"README.md", "docs/security.md", true},
		{"README.md", "docs/security.md#key-rotation", true},
		{"docs/security.md", "../LICENSE", true},
		{"docs/security.md", "#key-rotation", true},
		{"README.md", "adapters/httpapi/openapi.yaml", true},
		{"README.md", "../shared/contract.md", false},
		{"docs/security.md", "../../shared/contract.md", false},
		{"README.md", "https://example.com/", false},
		{"README.md", "mailto:someone@example.com", false},
		{"README.md", "/docs/security.md", false},
		{"README.md", "docs/nope.md", false},
		{"README.md", "docs/security.md#no-such-heading", false},
		{"docs/security.md", "#no-such-heading", false},
	} {
		err := checkLink(tt.file, tt.target)
		if tt.ok && err != nil {
			t.Errorf("%s → %s refused: %v", tt.file, tt.target, err)
		}
		if !tt.ok && err == nil {
			t.Errorf("%s → %s accepted", tt.file, tt.target)
		}
	}

	doc := parseDoc("# Title\n\nSee [a](a.md), ![b](b.svg) and [c][].\n\n[c]: c.md \"C\"\n\n" +
		"```sh\n[not](code.md)\n# not a heading\n```\n\nAnd `[not](span.md)`, <https://example.com>, <a href=\"d.md\">d</a>.\n")
	var got []string
	for _, l := range doc.links {
		got = append(got, fmt.Sprintf("%d:%s", l.line, l.target))
	}
	want := []string{"3:a.md", "3:b.svg", "5:c.md", "12:https://example.com", "12:d.md"}
	if !slices.Equal(got, want) {
		t.Errorf("links = %v, want %v", got, want)
	}
	if !slices.Equal(doc.anchors, []string{"title"}) {
		t.Errorf("anchors = %v", doc.anchors)
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"The userd command":                      "the-userd-command",
		"Decisions where the contract is silent": "decisions-where-the-contract-is-silent",
		"`GET /api/audit` pages":                 "get-apiaudit-pages",
		"Crash (SIGKILL), then restart":          "crash-sigkill-then-restart",
		"Import rules":                           "import-rules",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// markdownFiles lists README.md and docs/*.md, relative to the root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files
}

type link struct {
	line   int
	target string
}

type doc struct {
	raw     string
	links   []link
	anchors []string
}

func readDoc(t *testing.T, file string) doc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	return parseDoc(string(b))
}

var (
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$`)
	autolink   = regexp.MustCompile(`<([a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]+)>`)
	htmlRef    = regexp.MustCompile(`(?i)\b(?:href|src)\s*=\s*"([^"]*)"`)
	bareURL    = regexp.MustCompile(`(?i)\bhttps?://[^\s)>\]]+`)
	heading    = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
)

// parseDoc finds the links and the heading anchors of a Markdown file,
// outside fenced code blocks and code spans.
func parseDoc(raw string) doc {
	d := doc{raw: raw}
	lines := strings.Split(raw, "\n")
	fence := ""
	seen := map[string]int{}
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			lines[i] = ""
			continue
		}
		lines[i] = blankCodeSpans(line)
		if m := heading.FindStringSubmatch(line); m != nil {
			a := slug(m[1])
			if n := seen[a]; n > 0 {
				seen[a] = n + 1
				a = fmt.Sprintf("%s-%d", a, n)
			} else {
				seen[a] = 1
			}
			d.anchors = append(d.anchors, a)
		}
	}
	text := strings.Join(lines, "\n")
	type hit struct {
		at     int
		target string
	}
	var hits []hit
	covered := map[int]bool{}
	for _, re := range []*regexp.Regexp{inlineLink, refDef, autolink, htmlRef} {
		for _, m := range re.FindAllStringSubmatchIndex(text, -1) {
			hits = append(hits, hit{m[0], text[m[2]:m[3]]})
			for j := m[0]; j < m[1]; j++ {
				covered[j] = true
			}
		}
	}
	for _, m := range bareURL.FindAllStringIndex(text, -1) {
		if !covered[m[0]] {
			hits = append(hits, hit{m[0], text[m[0]:m[1]]})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return a.at - b.at })
	for _, h := range hits {
		d.links = append(d.links, link{line: strings.Count(text[:h.at], "\n") + 1, target: h.target})
	}
	return d
}

// blankCodeSpans replaces the content of code spans with spaces, keeping
// the line's length.
func blankCodeSpans(line string) string {
	b := []byte(line)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(b) && b[i+n] == '`' {
			n++
		}
		ticks := strings.Repeat("`", n)
		end := -1
		for j := i + n; j < len(b); {
			k := strings.Index(string(b[j:]), ticks)
			if k < 0 {
				break
			}
			k += j
			if (k+n == len(b) || b[k+n] != '`') && (k == 0 || b[k-1] != '`') {
				end = k
				break
			}
			j = k + n
			for j < len(b) && b[j] == '`' {
				j++
			}
		}
		if end < 0 {
			i += n
			continue
		}
		for j := i + n; j < end; j++ {
			b[j] = ' '
		}
		i = end + n
	}
	return string(b)
}

// slug is the anchor GitHub gives a heading: lower case, punctuation
// dropped, spaces turned into hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

// checkLink reports why target, a link in file (relative to the root), does
// not lead to a file of the repository.
func checkLink(file, target string) error {
	switch {
	case target == "":
		return fmt.Errorf("empty")
	case scheme.MatchString(target):
		return fmt.Errorf("points outside the repository; name the document in the text instead")
	case strings.HasPrefix(target, "/"):
		return fmt.Errorf("an absolute path; use a path relative to %s", file)
	}
	path, fragment, _ := strings.Cut(target, "#")
	if path == "" {
		return checkAnchor(file, fragment)
	}
	path, err := url.PathUnescape(path)
	if err != nil {
		return err
	}
	rel := filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(file), path)))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("leads out of the repository (to %s)", rel)
	}
	if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
		return fmt.Errorf("%s does not exist", rel)
	}
	if fragment != "" && strings.HasSuffix(rel, ".md") {
		return checkAnchor(rel, fragment)
	}
	return nil
}

func checkAnchor(file, fragment string) error {
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return err
	}
	if !slices.Contains(parseDoc(string(b)).anchors, fragment) {
		return fmt.Errorf("%s has no heading #%s", file, fragment)
	}
	return nil
}
