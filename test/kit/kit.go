// Package kit is what the suites that test userd from outside share, so
// that a new flow does not copy it: requests and their answers over HTTP
// (http.go), what an answer must be (want.go), the claims of an access
// token (claims.go), the accounts every flow starts with (accounts.go),
// samples of /metrics (metrics.go), waiting for a condition (wait.go),
// and the tools and services a test needs, which skip it when missing or
// fail it in CI (missing.go).
//
// It imports nothing of userd and no test-only dependency, and only tests
// import it (_test.go files and the packages under test/): the real
// binary is test/userdproc's, the browser test/chromium's.
package kit
