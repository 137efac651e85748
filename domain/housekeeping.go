package domain

import "time"

// PurgeKind names one kind of row that housekeeping deletes once nothing
// can use it any more. Each kind has one rule, stated against a cutoff
// time (see PurgeCutoffs), which every store applies alike.
type PurgeKind string

// The kinds of rows housekeeping purges, and what is stale for a cutoff
// c. The cutoffs keep a margin (PurgeMargin) past the point where a row
// stops being usable, so that nodes whose clocks differ never purge what
// another still serves.
const (
	// PurgeRefreshFamilies: sessions whose absolute end (ExpiresAt) is
	// before c, with every refresh token of theirs. A family is the unit:
	// the used tokens of a live family must stay, since presenting one
	// again is reuse and revokes the family.
	PurgeRefreshFamilies PurgeKind = "refresh_families"
	// PurgeLinkTokens: link tokens made before c that are used (or
	// voided) or expired before c. Made before c, because the mail budget
	// counts the tokens sent within the last MailBudgetWindow, used or
	// not.
	PurgeLinkTokens PurgeKind = "link_tokens"
	// PurgeMFAChallenges: mfaTokens that expired before c. A used one is
	// void at once, but it expires within MFAChallengeTTL anyway.
	PurgeMFAChallenges PurgeKind = "mfa_challenges"
	// PurgePasskeyCeremonies: begun passkey ceremonies that expired
	// before c (a finished one is deleted when taken).
	PurgePasskeyCeremonies PurgeKind = "passkey_ceremonies" //nolint:gosec // G101: the name of a table, not a credential
	// PurgeAuthRequests: the OpenID provider's authorization requests
	// that expired before c, and whose code, if they got one, expired
	// before c too (used or not: a code used past its end is refused as
	// unknown, as well as as reused).
	PurgeAuthRequests PurgeKind = "oauth_auth_requests"
	// PurgeLoginAttempts: failure counters whose last failure is before
	// c: with c at most LoginFailureWindow ago, they have lapsed
	// (LoginAttempts.Lapsed) and the next failure starts again at one, as
	// with no counter at all.
	PurgeLoginAttempts PurgeKind = "login_attempts"
	// PurgeOutboxMessages: outbox messages made before c. A message is
	// deleted once sent or given up; what stays past the give-up age is
	// one whose deletion failed or whose kind no node knows.
	PurgeOutboxMessages PurgeKind = "outbox_messages"
	// PurgePersonalTokens: personal access tokens that expired, or were
	// revoked, before c. Nothing serves them once ended (the lists show
	// live tokens only, and a request with one is refused as with an
	// unknown one), but with c PersonalTokenRetention ago an operator
	// looking into an incident still finds the row the audit events name:
	// its name, prefix, scopes and last use.
	PurgePersonalTokens PurgeKind = "personal_tokens"
	// PurgeAuditEvents: audit events that occurred before c.
	PurgeAuditEvents PurgeKind = "audit_events"
)

// PurgeKinds lists every kind, in the order housekeeping purges them.
var PurgeKinds = []PurgeKind{
	PurgeRefreshFamilies, PurgeLinkTokens, PurgeMFAChallenges, PurgePasskeyCeremonies,
	PurgeAuthRequests, PurgeLoginAttempts, PurgeOutboxMessages, PurgePersonalTokens, PurgeAuditEvents,
}

// Housekeeping's margins.
const (
	// PurgeMargin is added to every cutoff: more than any clock skew
	// between nodes, and than any request in flight takes.
	PurgeMargin = time.Hour
	// MailBudgetWindow is how far back the mail budget counts the
	// requested link tokens (the hour of MailBudget.MaxPerHour).
	MailBudgetWindow = time.Hour
	// OutboxRetention is how old a message is when no sender will send
	// it: past the give-up age of mail (GiveUpAfter) and of webhooks
	// (WebhookGiveUpAfter), with a day to spare.
	OutboxRetention = 48 * time.Hour
	// PersonalTokenRetention is how long a personal access token is kept
	// after it expired or was revoked.
	PersonalTokenRetention = 30 * 24 * time.Hour
)

// PurgePolicy is what the cutoffs depend on besides the domain's
// constants.
type PurgePolicy struct {
	// SessionGrace is how long after a session's end its tokens may still
	// be presented: the access-token lifetime plus the verifier's leeway,
	// and at least the refresh reuse grace.
	SessionGrace time.Duration
	// AuditRetention is how long audit events are kept; 0 keeps them for
	// ever.
	AuditRetention time.Duration
}

// PurgeCutoffs returns the cutoff of each kind at now: rows stale before
// it go. A kind missing from the map is not purged (the audit trail with
// AuditRetention 0).
func PurgeCutoffs(now time.Time, p PurgePolicy) map[PurgeKind]time.Time {
	back := func(d time.Duration) time.Time { return now.Add(-d - PurgeMargin) }
	cutoffs := map[PurgeKind]time.Time{
		PurgeRefreshFamilies:   back(max(p.SessionGrace, 0)),
		PurgeLinkTokens:        back(MailBudgetWindow),
		PurgeMFAChallenges:     back(0),
		PurgePasskeyCeremonies: back(0),
		PurgeAuthRequests:      back(0),
		PurgeLoginAttempts:     back(LoginFailureWindow),
		PurgeOutboxMessages:    back(OutboxRetention),
		PurgePersonalTokens:    back(PersonalTokenRetention),
	}
	if p.AuditRetention > 0 {
		cutoffs[PurgeAuditEvents] = now.Add(-p.AuditRetention)
	}
	return cutoffs
}
