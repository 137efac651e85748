package domain

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// UserID identifies a user: 24 lowercase hexadecimal characters encoding 12
// bytes, 4 of big-endian Unix seconds followed by 8 random bytes. Ids sort
// roughly by creation time, which list order and cursors rely on.
type UserID string

// userIDLen is the length of a UserID in characters.
const userIDLen = 24

// NewUserID returns a fresh id for a user created at now.
func NewUserID(now time.Time) UserID {
	var b [12]byte
	binary.BigEndian.PutUint32(b[:4], uint32(now.Unix())) //nolint:gosec // G115: the id's format is 4 bytes of Unix seconds (until 2106, like a MongoDB ObjectID); truncation is the contract
	// crypto/rand.Read never returns an error since Go 1.24; it panics instead.
	_, _ = rand.Read(b[4:])
	return UserID(hex.EncodeToString(b[:]))
}

// ParseUserID checks that s is 24 lowercase hexadecimal characters and
// returns it as a UserID. Anything else is ErrInvalidID, so that a malformed
// path never reaches a database query.
func ParseUserID(s string) (UserID, error) {
	if len(s) != userIDLen {
		return "", ErrInvalidID
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", ErrInvalidID
		}
	}
	return UserID(s), nil
}

// String returns the id in its 24-character form.
func (id UserID) String() string { return string(id) }
