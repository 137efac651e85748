// Package kit is what the suites that test userd from outside share, so
// that a new flow does not copy it: requests and their answers over HTTP
// (http.go), what an answer must be (want.go), the claims of an access
// token (claims.go), the accounts every flow starts with (accounts.go),
// samples of /metrics (metrics.go), waiting for a condition (wait.go), a
// webhook receiver that keeps what it is sent (webhooks.go),
// the tools and services a test needs, which skip it when missing or
// fail it in CI (missing.go), and the application itself over memory
// stores, for the suites that drive its services or its real router
// without a binary (app.go).
//
// Only tests import it (_test.go files and the packages under test/); of
// userd it imports the application and the adapters app.go wires, and
// no test-only dependency. The real binary is test/userdproc's, the
// browser test/chromium's.
package kit
