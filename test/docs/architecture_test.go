package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// architectureDoc is the map of the code a newcomer reads first.
const architectureDoc = "docs/architecture.md"

// packageRow is the first cell of a row of a table in
// docs/architecture.md, where each package is named in backquotes.
var packageRow = regexp.MustCompile("(?m)^\\| *((?:`[^`]+`(?:, *)?)+) *\\|")

// tabledPackages returns the packages named in the first cell of the rows
// of the document's tables.
func tabledPackages(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, architectureDoc))
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, m := range packageRow.FindAllStringSubmatch(string(raw), -1) {
		for _, cell := range strings.Split(m[1], ",") {
			name := strings.Trim(strings.TrimSpace(cell), "`")
			named[strings.TrimSuffix(name, "/")] = true
		}
	}
	return named
}

// TestArchitecture_names_every_adapter: every folder of adapters/ has a
// row in docs/architecture.md's table of packages, so that the map says
// where each thing lives.
func TestArchitecture_names_every_adapter(t *testing.T) {
	named := tabledPackages(t)
	entries, err := os.ReadDir(filepath.Join(root, "adapters"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !named["adapters/"+e.Name()] {
			t.Errorf("%s has no row for adapters/%s", architectureDoc, e.Name())
		}
	}
}

// TestArchitecture_names_every_service: every service of application (an
// exported type named …Service) is named in docs/architecture.md, with
// the file that holds it, so that a reader finds each use case's home.
func TestArchitecture_names_every_service(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, architectureDoc))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(root, "application", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gen, ok := d.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				name := spec.(*ast.TypeSpec).Name.Name
				if !ast.IsExported(name) || !strings.HasSuffix(name, "Service") {
					continue
				}
				found++
				if !strings.Contains(doc, "`"+name+"`") {
					t.Errorf("%s does not name the service %s (application/%s)", architectureDoc, name, filepath.Base(file))
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("no service found in application/: the test looks in the wrong place")
	}
}
