package webhook_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/webhook"
	"github.com/userd/userd/domain"
)

// testSecret is a Standard Webhooks secret of 32 bytes.
var testSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

type received struct {
	header http.Header
	body   []byte
}

// receiver records what it is sent and answers status.
func receiver(t *testing.T, status int) (*httptest.Server, func() []received) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []received
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Header.Clone(), b})
		mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received { mu.Lock(); defer mu.Unlock(); return append([]received(nil), got...) }
}

func newSender(t *testing.T, url string, timeout time.Duration) *webhook.Sender {
	t.Helper()
	s, err := webhook.New(webhook.Options{URL: url, Secret: testSecret, Clock: clock.System{}, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func event() domain.WebhookEvent {
	return domain.NewWebhookEvent(domain.NewOutboxID(time.Now()), domain.WebhookUserCreated, time.Now(),
		map[string]any{"userId": "6740f1c2a1b2c3d4e5f60718"})
}

// The signature is checked by the Standard Webhooks project's own Go
// library, not by our code.
func TestSend_signature_verifies_with_the_official_library(t *testing.T) {
	t.Parallel()
	srv, got := receiver(t, http.StatusNoContent)
	e := event()
	res, err := newSender(t, srv.URL, 0).Send(context.Background(), e)
	if err != nil || res.Status != http.StatusNoContent {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	r := got()
	if len(r) != 1 {
		t.Fatalf("%d deliveries", len(r))
	}
	wh, err := standardwebhooks.NewWebhook(testSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(r[0].body, r[0].header); err != nil {
		t.Fatalf("official library refuses the delivery: %v", err)
	}
	if id := r[0].header.Get("webhook-id"); id != e.ID || !strings.HasPrefix(id, "msg_") {
		t.Errorf("webhook-id = %q, want %q", id, e.ID)
	}
	var body struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(r[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != domain.WebhookUserCreated || body.Data["userId"] != "6740f1c2a1b2c3d4e5f60718" {
		t.Errorf("body = %s", r[0].body)
	}
	if _, err := time.Parse(time.RFC3339, body.Timestamp); err != nil || !strings.HasSuffix(body.Timestamp, "Z") {
		t.Errorf("timestamp %q is not RFC 3339 UTC", body.Timestamp)
	}
	// Another secret does not verify it.
	other, _ := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString([]byte("another secret of 32 bytes......")))
	if err := other.Verify(r[0].body, r[0].header); err == nil {
		t.Error("a delivery verified under another secret")
	}
}

func TestSend_non_2xx_is_an_error_with_the_answer(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusMovedPermanently, http.StatusBadRequest, http.StatusInternalServerError} {
		srv, _ := receiver(t, status)
		res, err := newSender(t, srv.URL, 0).Send(context.Background(), event())
		if err == nil || res.Status != status {
			t.Errorf("status %d: Send = %+v, %v; want an error with the status", status, res, err)
		}
	}
}

// A slow receiver, or one that answers without end, costs a delivery its
// timeout and a bounded read, never more.
func TestSend_slow_or_huge_answers_are_bounded(t *testing.T) {
	t.Parallel()
	slow := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	start := time.Now()
	if _, err := newSender(t, slow.URL, 200*time.Millisecond).Send(context.Background(), event()); err == nil {
		t.Error("a receiver that never answers was a success")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the delivery took %v with a 200 ms timeout", d)
	}

	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("x", 64<<10))
		for range 16 << 10 { // 1 GiB if read to the end
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(huge.Close)
	start = time.Now()
	res, err := newSender(t, huge.URL, 5*time.Second).Send(context.Background(), event())
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if len(res.Body) > 1<<10 {
		t.Errorf("kept %d bytes of the answer", len(res.Body))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a huge answer held the delivery for %v", d)
	}
}

func TestNew_refuses_bad_settings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, url, secret, want string
	}{
		{"ftp_url", "ftp://example.com/hook", testSecret, "USERD_WEBHOOK_URL"},
		{"relative_url", "/hook", testSecret, "USERD_WEBHOOK_URL"},
		{"credentials_in_url", "https://u:p@example.com/hook", testSecret, "USERD_WEBHOOK_URL"},
		{"no_prefix", "https://example.com/hook", base64.StdEncoding.EncodeToString(make([]byte, 32)), "USERD_WEBHOOK_SECRET"},
		{"not_base64", "https://example.com/hook", "whsec_!!!", "USERD_WEBHOOK_SECRET"},
		{"too_short", "https://example.com/hook", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 23)), "USERD_WEBHOOK_SECRET"},
		{"too_long", "https://example.com/hook", "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, 65)), "USERD_WEBHOOK_SECRET"},
	} {
		_, err := webhook.New(webhook.Options{URL: tc.url, Secret: tc.secret, Clock: clock.System{}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error naming %s", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), tc.secret) && tc.secret != "" {
			t.Errorf("%s: the error shows the secret", tc.name)
		}
	}
	for _, n := range []int{24, 32, 64} {
		secret := "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, n))
		if _, err := webhook.New(webhook.Options{URL: "http://localhost/h", Secret: secret, Clock: clock.System{}}); err != nil {
			t.Errorf("%d-byte secret refused: %v", n, err)
		}
	}
}
