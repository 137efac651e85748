package main

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// `userd webhooks test` posts a ping the official library verifies, prints
// the answer, and exits 1 when the receiver refuses it.
func TestRun_webhooks_test(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("cli webhook test secret, 32 b..."))
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil || !strings.Contains(string(body), `"type":"ping"`) {
			t.Errorf("ping %s: %v", body, err)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte("pong"))
	}))
	defer srv.Close()
	t.Setenv("USERD_WEBHOOK_URL", srv.URL+"/hook")
	t.Setenv("USERD_WEBHOOK_SECRET", secret)

	code, out, errOut := runCLI(t, "", "webhooks", "test")
	if code != exitOK || !strings.Contains(out, ": 200\npong") || !strings.Contains(out, "webhook-id msg_") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	status = http.StatusInternalServerError
	code, out, errOut = runCLI(t, "", "webhooks", "test")
	if code == exitOK || !strings.Contains(out, ": 500") || !strings.Contains(errOut, "500") {
		t.Errorf("refused ping: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if strings.Contains(out+errOut, secret) {
		t.Error("the secret was printed")
	}

	t.Setenv("USERD_WEBHOOK_SECRET", "whsec_short")
	if code, _, errOut := runCLI(t, "", "webhooks", "test"); code == exitOK || !strings.Contains(errOut, "USERD_WEBHOOK_SECRET") {
		t.Errorf("bad secret: exit %d, stderr %q", code, errOut)
	}
}
