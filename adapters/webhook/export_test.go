package webhook

import (
	"context"
	"net"
	"net/http"
	"testing"
)

// DialContextOf is the dialer of s's transport, for the test that dials
// addresses no URL check would let through.
func DialContextOf(t *testing.T, s *Sender) func(ctx context.Context, network, addr string) (net.Conn, error) {
	t.Helper()
	tr, ok := s.client.Transport.(*http.Transport)
	if !ok || tr.DialContext == nil {
		t.Fatalf("the sender's transport is %T, without a dialer of its own", s.client.Transport)
	}
	return tr.DialContext
}
