package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/userd/userd/domain"
)

// tokensDoc tells secret scanners how to find and check a leaked personal
// access token.
const tokensDoc = "docs/tokens.md"

// TestTokensDoc_scanner_section_matches_the_code reads the regular
// expression and the test vector from docs/tokens.md's section for secret
// scanners and checks them against the domain: the expression matches a
// fresh token and the vector, and nothing longer; the 32 bytes 0x00..0x1f
// make the documented vector, which WellFormedPersonalToken takes, and
// which it refuses with any other checksum.
func TestTokensDoc_scanner_section_matches_the_code(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root, tokensDoc))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## For secret scanners\n")
	if !ok {
		t.Fatal("docs/tokens.md has no section \"For secret scanners\"")
	}
	// The expression is the fenced block after "Regular expression:".
	m := regexp.MustCompile("(?s)Regular expression:\\s*```\\n([^\\n]+)\\n```").FindStringSubmatch(section)
	if m == nil {
		t.Fatal("no regular expression in a fenced block after \"Regular expression:\"")
	}
	expr, err := regexp.Compile(`^` + m[1] + `$`)
	if err != nil {
		t.Fatalf("the documented expression %q: %v", m[1], err)
	}
	// The vector is the code span, alone on its line, after "Test vector".
	_, afterVector, ok := strings.Cut(section, "Test vector")
	if !ok {
		t.Fatal("no \"Test vector\"")
	}
	v := regexp.MustCompile("(?m)^`(udp_[^`]+)`$").FindStringSubmatch(afterVector)
	if v == nil {
		t.Fatal("no token in a code span alone on its line after \"Test vector\"")
	}
	vector := v[1]

	random := make([]byte, 32)
	for i := range random {
		random[i] = byte(i)
	}
	if got := domain.PersonalTokenFromBytes(random); got != vector {
		t.Errorf("the bytes 0x00..0x1f make %s, the doc says %s", got, vector)
	}
	if !domain.WellFormedPersonalToken(vector) {
		t.Errorf("WellFormedPersonalToken refuses the documented vector %s", vector)
	}
	fresh := domain.NewPersonalTokenSecret()
	for _, tok := range []string{vector, fresh} {
		if !expr.MatchString(tok) {
			t.Errorf("the documented expression %s does not match %s", m[1], tok)
		}
	}
	if expr.MatchString(fresh+"0") || expr.MatchString(fresh[:len(fresh)-1]) {
		t.Errorf("the documented expression %s matches a token of the wrong length", m[1])
	}
	// A changed checksum: the expression still matches (it is the form),
	// the check refuses it.
	last := vector[len(vector)-1]
	wrong := vector[:len(vector)-1] + map[bool]string{true: "Q", false: "P"}[last == 'P']
	if !expr.MatchString(wrong) || domain.WellFormedPersonalToken(wrong) {
		t.Errorf("%s: the expression should match and the checksum refuse it", wrong)
	}
	// The documented intermediate steps: the body and its CRC-32.
	for _, want := range []string{vector[4:47], vector[47:], "1430474255", "0x55434e0f"} {
		if !strings.Contains(section, want) {
			t.Errorf("the section does not show %s", want)
		}
	}
}
