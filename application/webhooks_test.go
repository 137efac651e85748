package application_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/userd/userd/adapters/webhook"
	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

var webhookSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("application webhook test secret!"))

type delivery struct {
	id, typ string
	data    map[string]any
	body    []byte
	header  http.Header
}

// hookReceiver answers the first failFirst deliveries with 503, then 200,
// and keeps every delivery, checked with the official library.
type hookReceiver struct {
	mu        sync.Mutex
	failFirst int
	got       []delivery
	srv       *httptest.Server
}

func newHookReceiver(t *testing.T, failFirst int) *hookReceiver {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(webhookSecret)
	if err != nil {
		t.Fatal(err)
	}
	h := &hookReceiver{failFirst: failFirst}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// The timestamp header is the attempt's (the library refuses one
		// more than 5 minutes off the wall clock): checked apart from it.
		if err := wh.VerifyIgnoringTimestamp(body, r.Header); err != nil {
			t.Errorf("the official library refuses a delivery: %v", err)
		}
		var b struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		_ = json.Unmarshal(body, &b)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.got = append(h.got, delivery{r.Header.Get("webhook-id"), b.Type, b.Data, body, r.Header.Clone()})
		if len(h.got) <= h.failFirst {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) deliveries() []delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

func withWebhooks(t *testing.T, url string, events ...string) envOption {
	return func(c *application.Config, d *application.Deps) {
		s, err := webhook.New(webhook.Options{URL: url, Secret: webhookSecret, Clock: d.Clock})
		if err != nil {
			t.Fatal(err)
		}
		d.Webhooks, c.WebhookEvents = s, events
	}
}

// A receiver that fails its first three answers gets the event on the
// fourth, with the same webhook-id, after waits of 1 s, 5 s and 30 s.
func TestWebhooks_retried_with_the_same_id(t *testing.T) {
	t.Parallel()
	h := newHookReceiver(t, 3)
	e := newEnv(t, withWebhooks(t, h.srv.URL, domain.WebhookUserCreated))
	u, err := e.users.Register(ctx, nil, application.RegisterInput{Name: "Ada", Email: "ada@example.com", Password: "correct horse battery"})
	if err != nil {
		t.Fatal(err)
	}
	for i, wait := range []time.Duration{0, time.Second, 5 * time.Second, 30 * time.Second} {
		if wait > 0 {
			// Just before the wait is over, nothing is due.
			e.clock.Advance(wait - 100*time.Millisecond)
			if _, err := e.svc.Delivery.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(h.deliveries()); n != i {
				t.Fatalf("attempt %d came %v early", i+1, 100*time.Millisecond)
			}
			e.clock.Advance(100 * time.Millisecond)
		}
		if _, err := e.svc.Delivery.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(h.deliveries()); n != i+1 {
			t.Fatalf("after attempt %d the receiver has %d deliveries", i+1, n)
		}
	}
	got := h.deliveries()
	for _, d := range got {
		if d.id != got[0].id || d.typ != domain.WebhookUserCreated || d.data["userId"] != u.ID.String() {
			t.Errorf("delivery %+v, want user.created of %s with id %s", d, u.ID, got[0].id)
		}
	}
	// Delivered: nothing is left to send.
	e.clock.Advance(2 * time.Hour)
	if _, err := e.svc.Delivery.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(h.deliveries()); n != 4 {
		t.Errorf("%d deliveries after success, want 4", n)
	}
}

// The events of an account's life, each once, with its userId and never a
// secret; USERD_WEBHOOK_EVENTS unset sends all.
func TestWebhooks_events_of_an_account(t *testing.T) {
	t.Parallel()
	h := newHookReceiver(t, 0)
	e := newEnv(t, withWebhooks(t, h.srv.URL))
	_, adminP := e.seed(t, "admin@example.com", domain.ProfileAdmin)
	u, err := e.users.Register(ctx, nil, application.RegisterInput{Name: "Ada", Email: "ada@example.com", Password: "correct horse battery"})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tokensOf(e.auth.Login(ctx, application.LoginInput{Email: "ada@example.com", Password: "correct horse battery"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.users.Update(ctx, adminP, u.ID.String(), application.UpdateInput{Disabled: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.users.Update(ctx, adminP, u.ID.String(), application.UpdateInput{Disabled: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if err := e.users.Delete(ctx, adminP, u.ID.String()); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := e.svc.Delivery.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var types []string
	ids := map[string]bool{}
	for _, d := range h.deliveries() {
		types = append(types, d.typ)
		if ids[d.id] {
			t.Errorf("webhook-id %s delivered twice", d.id)
		}
		ids[d.id] = true
		if d.data["userId"] != u.ID.String() {
			t.Errorf("%s: userId %v, want %s", d.typ, d.data["userId"], u.ID)
		}
		for _, secret := range []string{pair.RefreshToken, pair.Access.Token, "correct horse battery", "fake$"} {
			if strings.Contains(string(d.body), secret) {
				t.Errorf("%s carries a secret: %s", d.typ, d.body)
			}
		}
	}
	want := []string{
		domain.WebhookUserCreated, domain.WebhookSessionCreated,
		domain.WebhookUserUpdated, domain.WebhookUserDisabled, domain.WebhookSessionRevoked,
		domain.WebhookUserUpdated, domain.WebhookUserEnabled,
		domain.WebhookUserDeleted,
	}
	slices.Sort(types)
	slices.Sort(want)
	if !slices.Equal(types, want) {
		t.Errorf("event types %v, want %v", types, want)
	}
}

// Without a receiver nothing is queued; with a filter only its types are.
func TestWebhooks_off_and_filtered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.users.Register(ctx, nil, application.RegisterInput{Name: "Ada", Email: "ada@example.com", Password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	n, _, err := e.store.Outbox(nil).Backlog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 { // the verification mail alone
		t.Errorf("outbox holds %d messages without a receiver, want the verification mail alone", n)
	}

	h := newHookReceiver(t, 0)
	f := newEnv(t, withWebhooks(t, h.srv.URL, domain.WebhookUserDeleted))
	_, adminP := f.seed(t, "admin@example.com", domain.ProfileAdmin)
	u, err := f.users.Register(ctx, nil, application.RegisterInput{Name: "Ada", Email: "ada@example.com", Password: "correct horse battery"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.users.Delete(ctx, adminP, u.ID.String()); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := f.svc.Delivery.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := h.deliveries()
	if len(got) != 1 || got[0].typ != domain.WebhookUserDeleted {
		t.Errorf("deliveries %+v, want user.deleted alone", got)
	}
}
