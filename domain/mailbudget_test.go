package domain_test

import (
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

func TestMailBudget_Allows_and_RetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	b := domain.DefaultMailBudget // one a minute, five an hour
	tests := []struct {
		name     string
		budget   domain.MailBudget
		lastHour int
		last     time.Time
		allows   bool
		wait     time.Duration
	}{
		{"nothing_sent", b, 0, time.Time{}, true, 0},
		{"one_a_minute_ago", b, 1, now.Add(-time.Minute), true, 0},
		{"one_20s_ago", b, 1, now.Add(-20 * time.Second), false, 40 * time.Second},
		// Full hour: by the end of the last one's hour every counted
		// message has left the window (which includes its start).
		{"five_the_last_10m_ago", b, 5, now.Add(-10 * time.Minute), false, 50*time.Minute + time.Second},
		{"five_the_last_10s_ago", b, 5, now.Add(-10 * time.Second), false, 59*time.Minute + 51*time.Second},
		{"bounds_off", domain.MailBudget{}, 100, now, true, 0},
		{"hourly_bound_only", domain.MailBudget{MaxPerHour: 2}, 2, now.Add(-30 * time.Minute), false, 30*time.Minute + time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.budget.Allows(now, tc.lastHour, tc.last); got != tc.allows {
				t.Fatalf("Allows = %v, want %v", got, tc.allows)
			}
			if tc.allows {
				return
			}
			if got := tc.budget.RetryAfter(now, tc.lastHour, tc.last); got != tc.wait {
				t.Errorf("RetryAfter = %v, want %v", got, tc.wait)
			}
			// Waiting that long is never too early.
			later := now.Add(tc.budget.RetryAfter(now, tc.lastHour, tc.last))
			left := tc.lastHour
			if !tc.last.After(later.Add(-domain.MailBudgetWindow)) {
				left = 0
			}
			if !tc.budget.Allows(later, left, tc.last) {
				t.Errorf("still refused after RetryAfter")
			}
		})
	}
}

func TestUser_Addressee_only_once_the_email_is_verified(t *testing.T) {
	t.Parallel()
	u := domain.User{Name: "Call +1 555 0100", Email: "stranger@example.net"}
	if got := u.Addressee(); got != "" {
		t.Errorf("unverified: %q, want no name", got)
	}
	u.EmailVerified = true
	if got := u.Addressee(); got != u.Name {
		t.Errorf("verified: %q, want %q", got, u.Name)
	}
}
