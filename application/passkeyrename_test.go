package application_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
	"github.com/userd/userd/test/softauthn"
)

func TestPasskeys_Rename(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		id       func(own, others domain.Passkey) string
		newName  string
		wantName string
		// wantErr is a sentinel, or a *domain.ValidationError naming the
		// field name.
		wantErr error
	}{
		{name: "own", id: ownPasskey, newName: "  Work laptop ", wantName: "Work laptop"},
		{name: "unicode_at_the_bound", id: ownPasskey, newName: strings.Repeat("é", domain.PasskeyNameMaxLen),
			wantName: strings.Repeat("é", domain.PasskeyNameMaxLen)},
		{name: "empty_is_the_default", id: ownPasskey, newName: "", wantName: domain.DefaultPasskeyName},
		{name: "blank", id: ownPasskey, newName: "   ", wantErr: &domain.ValidationError{}},
		{name: "too_long", id: ownPasskey, newName: strings.Repeat("k", domain.PasskeyNameMaxLen+1), wantErr: &domain.ValidationError{}},
		{name: "invisible_characters", id: ownPasskey, newName: "Key\u200b", wantErr: &domain.ValidationError{}},
		{name: "control_characters", id: ownPasskey, newName: "Key\n2", wantErr: &domain.ValidationError{}},
		{name: "another_users", id: func(_, others domain.Passkey) string { return string(others.ID) }, newName: "Mine now",
			wantErr: domain.ErrPasskeyNotFound},
		{name: "unknown", id: func(domain.Passkey, domain.Passkey) string { return string(domain.NewPasskeyID(time.Now())) },
			newName: "Ghost", wantErr: domain.ErrPasskeyNotFound},
		{name: "malformed", id: func(domain.Passkey, domain.Passkey) string { return "../x" }, newName: "Ghost",
			wantErr: domain.ErrInvalidID},
		// The id is judged before the name, as the contract orders checks.
		{name: "malformed_id_and_bad_name", id: func(domain.Passkey, domain.Passkey) string { return "../x" },
			newName: "   ", wantErr: domain.ErrInvalidID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			_, ada := e.seed(t, "ada@example.com")
			_, grace := e.seed(t, "grace@example.com")
			own := e.registerPasskey(t, ada, softauthn.New(testOrigin))
			others := e.registerPasskey(t, grace, softauthn.New(testOrigin))
			before := len(e.recorded(t))

			got, err := e.svc.Passkeys.Rename(ctx, ada, tc.id(own, others), tc.newName)

			var verr *domain.ValidationError
			switch {
			case errors.As(tc.wantErr, &verr):
				if !errors.As(err, &verr) || len(verr.Fields) != 1 || verr.Fields[0].Field != "name" {
					t.Fatalf("error = %v, want a validation error of the field name", err)
				}
			default:
				wantErr(t, err, tc.wantErr)
			}
			// Nobody else's passkey changes, and a refused rename changes
			// nothing.
			want := map[domain.PasskeyID]string{own.ID: own.Name, others.ID: others.Name}
			if tc.wantErr == nil {
				want[own.ID] = tc.wantName
				if got.ID != own.ID || got.Name != tc.wantName || got.UserID != own.UserID ||
					!got.CreatedAt.Equal(own.CreatedAt) || got.SignCount != own.SignCount {
					t.Errorf("Rename = %+v, want %s named %q and otherwise as registered %+v", got, own.ID, tc.wantName, own)
				}
			}
			for _, p := range []*domain.Principal{ada, grace} {
				list, err := e.svc.Passkeys.List(ctx, p)
				wantErr(t, err, nil)
				for _, k := range list {
					if k.Name != want[k.ID] {
						t.Errorf("passkey %s is named %q, want %q", k.ID, k.Name, want[k.ID])
					}
				}
			}
			// One passkey.renamed event, of the caller's passkey, without
			// the name typed.
			events := e.recorded(t)[before:]
			if tc.wantErr != nil {
				if len(events) != 0 {
					t.Errorf("a refused rename recorded %+v", events)
				}
				return
			}
			if len(events) != 1 || !sameEvent(events[0], domain.PasskeyRenamedEvent(ada.UserID, own.ID)) {
				t.Errorf("events = %+v, want one passkey.renamed of %s", events, own.ID)
			}
		})
	}
}

func ownPasskey(own, _ domain.Passkey) string { return string(own.ID) }

// recorded returns the events of the env's audit log, oldest first.
func (e *env) recorded(t *testing.T) []domain.AuditEvent {
	t.Helper()
	events, err := e.audit.List(ctx, ports.AuditQuery{Page: domain.Page[domain.AuditID]{Limit: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// sameEvent compares what a constructor sets, leaving out what recording
// stamps (id, time, request metadata).
func sameEvent(got, want domain.AuditEvent) bool {
	return got.Type == want.Type && got.ActorID == want.ActorID && got.SubjectID == want.SubjectID && got.Detail == want.Detail
}

func TestPasskeys_Rename_needs_a_signed_in_caller(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, ada := e.seed(t, "ada@example.com")
	own := e.registerPasskey(t, ada, softauthn.New(testOrigin))
	_, err := e.svc.Passkeys.Rename(ctx, nil, string(own.ID), "Mine")
	wantErr(t, err, domain.ErrUnauthenticated)
	// A token whose account is gone.
	_, err = e.svc.Passkeys.Rename(ctx, &domain.Principal{UserID: domain.NewUserID(e.clock.Now()), Profiles: u.Profiles},
		string(own.ID), "Mine")
	wantErr(t, err, domain.ErrInvalidToken)
}
