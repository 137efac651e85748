package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/fx/fxtest"
)

// A node whose Redis does not answer at start starts anyway, says so in
// its log, and fails as USERD_RATE_LIMIT_FAIL says: closed here, so a
// login gets 503 while /readyz is 200.
func TestServe_starts_without_its_redis_and_fails_as_configured(t *testing.T) {
	addr := freeAddr(t)
	var logs bytes.Buffer
	cfg := testConfig(t, map[string]string{
		"USERD_DB_DRIVER":            "memory",
		"USERD_HTTP_ADDR":            addr,
		"USERD_RATE_LIMIT_REDIS_URL": "redis://:hunter2@" + freeAddr(t) + "/0", // nobody listens
		"USERD_RATE_LIMIT_FAIL":      "closed",
	})
	app := fxtest.New(t, serverOptions(cfg, &logs))
	app.RequireStart()
	defer app.RequireStop()
	if !strings.Contains(logs.String(), "Redis does not answer; the per-IP limits fail closed") {
		t.Fatalf("no word of the missing Redis:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "hunter2") {
		t.Fatalf("the Redis password is in the log:\n%s", logs.String())
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz = %d", resp.StatusCode)
	}
	resp, err = http.Post("http://"+addr+"/auth/login", "application/json",
		strings.NewReader(`{"email":"a@example.com","password":"a wrong guess"}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("login with Redis down, failing closed = %d, want 503", resp.StatusCode)
	}
}
