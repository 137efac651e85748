package contract

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// auditFilters is the contract of AuditQuery's filters and order: by
// user, as actor or as subject; by type; both; newest first, with keyset
// pages either way.
func auditFilters(t *testing.T, newLog func(t *testing.T) ports.AuditLog) {
	// trail records a small history of three users, a (who is also an
	// admin), b and c, and returns them with the events in the order they
	// happened.
	trail := func(t *testing.T, log ports.AuditLog) (a, b, c domain.UserID, events []domain.AuditEvent) {
		t.Helper()
		a, b, c = domain.NewUserID(at(0)), domain.NewUserID(at(time.Second)), domain.NewUserID(at(2*time.Second))
		for i, e := range []domain.AuditEvent{
			domain.UserCreatedEvent("", a, domain.Profiles{domain.ProfileAdmin}, domain.OriginOperator),
			domain.LoginSucceededEvent(a, domain.AMRPassword),
			domain.UserCreatedEvent("", b, domain.Profiles{domain.ProfileCustomer}, domain.OriginAPI),
			domain.LoginFailedEvent("", "", domain.CheckLogin, domain.FailureUnknownEmail),
			domain.UserUpdatedEvent(a, b, []string{"name"}),
			domain.LoginFailedEvent("", b, domain.CheckLogin, domain.FailureWrongPassword),
			domain.KeyRotatedEvent(a, "kid-1", "EdDSA", domain.OriginAPI),
			domain.UserDeletedEvent(a, c),
			domain.SessionRevokedEvent(b, b, domain.EndedByLogout, "family"),
			domain.UserUpdatedEvent(b, b, []string{"email"}),
			domain.LoginFailedEvent(c, c, domain.CheckCurrentPassword, domain.FailureWrongPassword),
		} {
			e.Time = at(time.Duration(i) * time.Millisecond)
			e.ID = domain.NewAuditID(e.Time)
			events = append(events, e)
		}
		// Recorded out of order: the order is the ids', not the inserts'.
		for _, i := range []int{5, 0, 10, 3, 1, 8, 2, 7, 4, 9, 6} {
			mustRecord(t, log, events[i])
		}
		return a, b, c, events
	}
	// pick returns the events at the indexes, reversed when newest.
	pick := func(events []domain.AuditEvent, newest bool, idx ...int) []domain.AuditID {
		out := make([]domain.AuditID, 0, len(idx))
		for _, i := range idx {
			out = append(out, events[i].ID)
		}
		if newest {
			slices.Reverse(out)
		}
		return out
	}

	t.Run("list_filters", func(t *testing.T) {
		t.Parallel()
		log := newLog(t)
		a, b, c, events := trail(t, log)
		nobody := domain.NewUserID(at(time.Hour))
		for _, tc := range []struct {
			name string
			user domain.UserID
			typ  domain.AuditEventType
			want []int
		}{
			{"everything", "", "", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
			// a acted (1, 4, 6, 7) or was the subject (0, 1).
			{"user_as_actor_or_subject", a, "", []int{0, 1, 4, 6, 7}},
			{"user_b", b, "", []int{2, 4, 5, 8, 9}},
			{"user_only_as_subject", c, "", []int{7, 10}},
			{"user_without_events", nobody, "", nil},
			{"type", "", domain.AuditLoginFailed, []int{3, 5, 10}},
			{"type_without_events", "", domain.AuditMFAReset, nil},
			{"user_and_type", b, domain.AuditUserUpdated, []int{4, 9}},
			{"user_as_actor_and_type", a, domain.AuditUserUpdated, []int{4}},
			{"user_and_type_without_events", a, domain.AuditLoginFailed, nil},
		} {
			for _, newest := range []bool{false, true} {
				q := ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 100}, UserID: tc.user, Type: tc.typ, Newest: newest}
				want := pick(events, newest, tc.want...)
				if got := auditIDs(mustList(t, log, q)); !slices.Equal(got, want) {
					t.Errorf("%s, newest %v:\n got %v\nwant %v", tc.name, newest, got, want)
				}
			}
		}
		// The events come back whole, filtered or not.
		got := mustList(t, log, ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 1}, UserID: c, Type: domain.AuditLoginFailed, Newest: true})
		if len(got) != 1 {
			t.Fatalf("List(c, login.failed) returned %d events, want 1", len(got))
		}
		checkAuditEvent(t, got[0], events[10])
	})

	t.Run("list_filters_pages", func(t *testing.T) {
		t.Parallel()
		log := newLog(t)
		a, b, c, events := trail(t, log)
		// Every combination of filters and order, paged by twos, must give
		// what one page of everything, filtered by the rule, gives.
		for _, user := range []domain.UserID{"", a, b, c} {
			for _, typ := range []domain.AuditEventType{"", domain.AuditLoginFailed, domain.AuditUserUpdated} {
				for _, newest := range []bool{false, true} {
					var idx []int
					for i, e := range events {
						if (user == "" || e.ActorID == user || e.SubjectID == user) && (typ == "" || e.Type == typ) {
							idx = append(idx, i)
						}
					}
					name := fmt.Sprintf("user %q, type %q, newest %v", user, typ, newest)
					want := pick(events, newest, idx...)
					if got := listPages(t, log, ports.AuditQuery{UserID: user, Type: typ, Newest: newest}, 2); !slices.Equal(got, want) {
						t.Errorf("%s: pages\n got %v\nwant %v", name, got, want)
					}
				}
			}
		}
	})

	t.Run("list_newest_first", func(t *testing.T) {
		t.Parallel()
		log := newLog(t)
		_, _, _, events := trail(t, log)
		all := pick(events, true, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
		newest := func(after domain.AuditID, limit int) []domain.AuditID {
			return auditIDs(mustList(t, log, ports.AuditQuery{Page: domain.Page[domain.AuditID]{After: after, Limit: limit}, Newest: true}))
		}
		if got := newest("", 3); !slices.Equal(got, all[:3]) {
			t.Errorf("List(newest, limit 3) = %v, want %v", got, all[:3])
		}
		// The cursor means "older than", and need not be a stored id.
		if got := newest(events[6].ID, 2); !slices.Equal(got, all[5:7]) {
			t.Errorf("List(newest, before event 6) = %v, want %v", got, all[5:7])
		}
		between := domain.AuditID(string(events[6].ID[:16]) + "0000000000000000")
		if got := newest(between, 2); !slices.Equal(got, all[5:7]) {
			t.Errorf("List(newest, before a position) = %v, want %v", got, all[5:7])
		}
		if got := newest(events[0].ID, 5); len(got) != 0 {
			t.Errorf("List(newest, before the first) = %v, want none", got)
		}
		if got := newest(domain.AuditID("ffffffffffffffffffffffffffffffff"), 100); !slices.Equal(got, all) {
			t.Errorf("List(newest, before the end of time) = %v, want all %d", got, len(all))
		}
		if got := mustList(t, newLog(t), ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 5}, Newest: true}); len(got) != 0 {
			t.Errorf("List(newest) of an empty log returned %d events", len(got))
		}
	})
}

// listPages reads every page of q (whose cursor and limit it sets) and
// returns the ids in the order the pages gave them.
func listPages(t *testing.T, log ports.AuditLog, q ports.AuditQuery, limit int) []domain.AuditID {
	t.Helper()
	var got []domain.AuditID
	q.Page = domain.Page[domain.AuditID]{Limit: limit}
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("pagination does not end")
		}
		page := mustList(t, log, q)
		if len(page) > limit {
			t.Fatalf("a page of %d events, limit %d", len(page), limit)
		}
		if len(page) == 0 {
			return got
		}
		got = append(got, auditIDs(page)...)
		q.Page.After = page[len(page)-1].ID
	}
}
