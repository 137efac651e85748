package metrics

import (
	"context"
	"errors"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// Password hashing operations and results, the label values of
// userd_password_hashing_total.
const (
	HashOpHash   = "hash"
	HashOpVerify = "verify"

	// HashDone: the hash was computed (a verification compared the
	// password, whatever the outcome).
	HashDone = "done"
	// HashBusy: no hashing slot freed up in time, or the request gave up
	// waiting: nothing was computed (the client got 503).
	HashBusy = "busy"
	// HashError: a stored hash that cannot be read, or parameters out of
	// bounds: nothing was computed.
	HashError = "error"
)

// CountingHasher is a ports.PasswordHasher that counts each Hash and
// Verify of the hasher it wraps in userd_password_hashing_total: how many
// passwords were actually hashed or compared, which is what brute force
// and registration floods spend, and how many calls found no free slot.
type CountingHasher struct {
	next ports.PasswordHasher
	m    *Metrics
}

var _ ports.PasswordHasher = (*CountingHasher)(nil)

// CountHashing wraps next so that its work is counted by m.
func (m *Metrics) CountHashing(next ports.PasswordHasher) *CountingHasher {
	return &CountingHasher{next: next, m: m}
}

func (h *CountingHasher) count(op string, err error) {
	result := HashDone
	switch {
	case err == nil:
	case errors.Is(err, domain.ErrUnavailable), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		result = HashBusy
	default:
		result = HashError
	}
	h.m.hashing.WithLabelValues(op, result).Inc()
}

// Hash implements ports.PasswordHasher.
func (h *CountingHasher) Hash(ctx context.Context, password string) (string, error) {
	enc, err := h.next.Hash(ctx, password)
	h.count(HashOpHash, err)
	return enc, err
}

// Verify implements ports.PasswordHasher.
func (h *CountingHasher) Verify(ctx context.Context, encoded, password string) (bool, bool, error) {
	ok, rehash, err := h.next.Verify(ctx, encoded, password)
	h.count(HashOpVerify, err)
	return ok, rehash, err
}

// Normalize implements ports.PasswordHasher; it computes no hash and is
// not counted.
func (h *CountingHasher) Normalize(password string) string { return h.next.Normalize(password) }

// CheckEncoded implements ports.PasswordHasher; it computes no hash and is
// not counted.
func (h *CountingHasher) CheckEncoded(encoded string) error { return h.next.CheckEncoded(encoded) }
