package domain

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestAuditID(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	a, b := NewAuditID(t0), NewAuditID(t0.Add(time.Microsecond))
	if a >= b {
		t.Errorf("ids of later events must sort after: %s, %s", a, b)
	}
	for _, id := range []AuditID{a, b} {
		if got, err := ParseAuditID(id.String()); err != nil || got != id {
			t.Errorf("ParseAuditID(%s) = %s, %v", id, got, err)
		}
	}
	for _, bad := range []string{"", "abc", strings.ToUpper(string(a)), string(a) + "0", string(a[:31]) + "g", "000000000000000000000000"} {
		if _, err := ParseAuditID(bad); err != ErrInvalidAuditID {
			t.Errorf("ParseAuditID(%q) error = %v, want ErrInvalidAuditID", bad, err)
		}
	}
}

func TestParseAuditEventType(t *testing.T) {
	t.Parallel()
	for _, typ := range AuditEventTypes {
		if got, ok := ParseAuditEventType(string(typ)); !ok || got != typ {
			t.Errorf("ParseAuditEventType(%q) = %q, %v", typ, got, ok)
		}
	}
	for _, bad := range []string{"", "USER.CREATED", "user.created ", "user", "user.*"} {
		if _, ok := ParseAuditEventType(bad); ok {
			t.Errorf("ParseAuditEventType(%q) accepted it", bad)
		}
	}
}

func TestRequestMeta(t *testing.T) {
	t.Parallel()
	if m := RequestMetaFrom(context.Background()); m != (RequestMeta{}) {
		t.Errorf("empty context gives %+v", m)
	}
	want := RequestMeta{RequestID: "req-1", ClientIP: "192.0.2.7"}
	if got := RequestMetaFrom(WithRequestMeta(context.Background(), want)); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// A context of an adapter's own may answer the key with a pointer.
	if got := RequestMetaFrom(context.WithValue(context.Background(), RequestMetaKey{}, &want)); got != want {
		t.Errorf("through a pointer: got %+v, want %+v", got, want)
	}
	if got := RequestMetaFrom(context.WithValue(context.Background(), RequestMetaKey{}, (*RequestMeta)(nil))); got != (RequestMeta{}) {
		t.Errorf("a nil pointer gives %+v", got)
	}
}
