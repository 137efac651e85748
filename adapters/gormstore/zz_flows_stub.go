package gormstore

// STUB until the flows' stores land (branch i26-stores); deleted at merge.

import (
	"context"
	"time"

	"github.com/userd/userd/domain"
)

// Family is a stub.
func (s *RefreshTokenStore) Family(context.Context, string) (domain.RefreshFamily, error) {
	return domain.RefreshFamily{}, domain.ErrSessionNotFound
}

// RevokeClientSessions is a stub.
func (s *RefreshTokenStore) RevokeClientSessions(context.Context, domain.UserID, domain.OAuthClientID, time.Time) ([]string, error) {
	return nil, nil
}
