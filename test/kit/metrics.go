package kit

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Metric reads one sample of the /metrics of the node at base (asked from
// loopback, which the default USERD_METRICS_ALLOW admits): the series
// name whose labels include labels, given as name, value pairs. found is
// false when no series has them.
func Metric(t testing.TB, base, name string, labels ...string) (value float64, found bool) {
	t.Helper()
	r := Send(t, http.MethodGet, base+"/metrics", nil, "")
	Expect(t, "GET /metrics", r, http.StatusOK, "")
	var want []string
	for i := 0; i+1 < len(labels); i += 2 {
		want = append(want, labels[i]+`="`+labels[i+1]+`"`)
	}
	for line := range strings.Lines(string(r.Body)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		series, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, lbls, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		have := strings.Split(strings.TrimSuffix(lbls, "}"), ",")
		if !containsAll(have, want) {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("metric %s: %v", line, err)
		}
		return v, true
	}
	return 0, false
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
