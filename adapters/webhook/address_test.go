package webhook_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/clock"
	"github.com/userd/userd/adapters/webhook"
)

// A receiver on a link-local or unspecified address is refused at the
// start, naming the setting, in every form that reaches one; loopback and
// private receivers stay allowed.
func TestCheckURL_refuses_link_local_and_unspecified_hosts(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"http://169.254.169.254/latest/meta-data/", "https://169.254.0.1:8443/hook",
		"http://[fe80::1]/hook", "http://[fe80::a9fe:a9fe%25eth0]/hook", "http://[febf::1]/hook",
		"http://[::ffff:169.254.169.254]/hook", "http://[::ffff:a9fe:a9fe]/hook",
		"http://0.0.0.0:8080/hook", "http://0.1.2.3/hook", "http://[::]/hook", "http://[::ffff:0.0.0.0]/hook",
		"http://224.0.0.251/hook", "http://[ff02::1]/hook",
		// Numbers that getaddrinfo (inet_aton) reads as an IPv4 address.
		"http://0/hook", "http://2852039166/hook", "http://0xa9fea9fe/hook", "http://0XA9FEA9FE/hook",
		"http://0251.0376.0251.0376/hook", "http://169.254.43518/hook", "http://169.254.169.254./hook",
		"http://0x7f.1/hook", "http://127.1/hook",
		// No host name at all: a dial of ":80" reaches this host.
		"http://:80/hook",
	} {
		_, err := webhook.New(webhook.Options{URL: raw, Secret: testSecret, Clock: clock.System{}})
		if err == nil || !strings.Contains(err.Error(), "USERD_WEBHOOK_URL") {
			t.Errorf("New(%s) = %v, want an error naming USERD_WEBHOOK_URL", raw, err)
		}
	}
	for _, raw := range []string{
		"http://127.0.0.1:9000/hook", "http://[::1]/hook", "http://localhost/hook", "http://10.0.0.7/hook",
		"http://172.16.5.4/hook", "http://192.168.1.20/hook", "http://[fd00::7]/hook", "http://100.64.0.1/hook",
		"https://hooks.example.com/userd", "https://1.2.3.4.nip.io/hook", "https://hooks.example.com./userd",
		"https://0x.example/hook", "https://9.example/hook",
	} {
		if err := webhook.CheckURL(raw); err != nil {
			t.Errorf("CheckURL(%s) = %v, want it allowed", raw, err)
		}
	}
}

// The sender's own dialer refuses a link-local or unspecified address
// whatever name led to it: a receiver's host name whose DNS answer is
// 169.254.169.254 is refused when it is dialled. 0.0.0.0 is the case
// that shows it: Linux connects it to this host, where the receiver
// listens.
func TestSend_dialer_refuses_link_local_and_unspecified_addresses(t *testing.T) {
	t.Parallel()
	srv, got := receiver(t, http.StatusNoContent)
	port := srv.Listener.Addr().String()[strings.LastIndex(srv.Listener.Addr().String(), ":"):]
	// Loopback through the guarded dialer: delivered.
	if _, err := newSender(t, "http://localhost"+port+"/hook", 5*time.Second).Send(context.Background(), event()); err != nil {
		t.Fatalf("Send to a loopback receiver: %v", err)
	}
	dial := webhook.DialContextOf(t, newSender(t, "http://localhost"+port+"/hook", 5*time.Second))
	for _, addr := range []string{"0.0.0.0" + port, "[::ffff:0.0.0.0]" + port, "169.254.169.254:80", "[fe80::1]:80",
		"[::ffff:169.254.169.254]:80"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := dial(ctx, "tcp", addr)
		cancel()
		if err == nil {
			_ = conn.Close()
			t.Errorf("the sender's dialer connected to %s", addr)
			continue
		}
		if !strings.Contains(err.Error(), "not connected") {
			t.Errorf("dial %s: %v, want the guard's refusal", addr, err)
		}
	}
	if n := len(got()); n != 1 {
		t.Errorf("the receiver got %d requests, want the one delivery", n)
	}
}
