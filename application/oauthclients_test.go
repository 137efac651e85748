package application_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// clientIn is a valid input for a client of the type typ with one
// redirect URI.
func clientIn(name, typ string) domain.OAuthClientInput {
	return domain.OAuthClientInput{Name: &name, Type: &typ, RedirectURIs: []string{"https://app.example.com/callback"}}
}

// createClient registers a client as the admin.
func createClient(t *testing.T, e *env, admin *domain.Principal, in domain.OAuthClientInput) application.CreatedOAuthClient {
	t.Helper()
	created, err := e.svc.OAuthClients.Create(requestCtx, admin, in)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return created
}

// Every admin's use case answers in the contract's order: 401, then the
// form of the id and body (400), then 403, then 404.
func TestOAuthClients_order_of_checks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	_, customer := e.seed(t, "ada@example.com")
	svc := e.svc.OAuthClients
	missing := domain.NewOAuthClientID(e.clock.Now()).String()
	bad := domain.OAuthClientInput{RedirectURIs: []string{"http://app.example.com/cb"}}
	badPage := func(err error) error {
		var perr *domain.PageError
		if errors.As(err, &perr) && perr.Bound == "after" {
			return nil
		}
		return err
	}
	validation := func(err error) error {
		var verr *domain.ValidationError
		if errors.As(err, &verr) {
			return nil
		}
		return err
	}
	for _, tc := range []struct {
		name string
		call func(actor *domain.Principal, id string, in domain.OAuthClientInput) error
	}{
		{"get", func(a *domain.Principal, id string, _ domain.OAuthClientInput) error {
			_, err := svc.Get(ctx, a, id)
			return err
		}},
		{"update", func(a *domain.Principal, id string, in domain.OAuthClientInput) error {
			_, err := svc.Update(ctx, a, id, in)
			return err
		}},
		{"delete", func(a *domain.Principal, id string, _ domain.OAuthClientInput) error { return svc.Delete(ctx, a, id) }},
		{"rotate_secret", func(a *domain.Principal, id string, _ domain.OAuthClientInput) error {
			_, err := svc.RotateSecret(ctx, a, id)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, tc.call(nil, "nope", bad), domain.ErrUnauthenticated)
			wantErr(t, tc.call(customer, "nope", bad), domain.ErrInvalidOAuthClientID)
			if tc.name == "update" {
				wantErr(t, validation(tc.call(customer, missing, bad)), nil)
			}
			wantErr(t, tc.call(customer, missing, domain.OAuthClientInput{}), domain.ErrForbidden)
			wantErr(t, tc.call(admin, missing, domain.OAuthClientInput{}), domain.ErrOAuthClientNotFound)
		})
	}
	_, err := svc.Create(ctx, nil, bad)
	wantErr(t, err, domain.ErrUnauthenticated)
	_, err = svc.Create(ctx, customer, bad)
	wantErr(t, validation(err), nil)
	_, err = svc.Create(ctx, customer, clientIn("App", "public"))
	wantErr(t, err, domain.ErrForbidden)
	_, err = svc.List(ctx, nil, "", "nope")
	wantErr(t, err, domain.ErrUnauthenticated)
	_, err = svc.List(ctx, customer, "", "nope")
	wantErr(t, badPage(err), nil)
	_, err = svc.List(ctx, customer, "", "")
	wantErr(t, err, domain.ErrForbidden)
	// A token whose admin is gone is no admin.
	ghost := &domain.Principal{UserID: domain.NewUserID(e.clock.Now()), Profiles: domain.Profiles{domain.ProfileAdmin}}
	_, err = svc.Create(ctx, ghost, clientIn("App", "public"))
	wantErr(t, err, domain.ErrInvalidToken)
	// Nothing was made by any of it.
	page, err := svc.List(ctx, admin, "", "")
	if err != nil || len(page.Items) != 0 {
		t.Errorf("List = %v, %v; want no client", page.Items, err)
	}
}

func TestOAuthClients_lifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	svc := e.svc.OAuthClients

	created := createClient(t, e, admin, clientIn("Grafana", "confidential"))
	c := created.Client
	if len(created.Secret) != 43 || !c.SecretMatches(created.Secret) || c.Type != domain.OAuthClientConfidential {
		t.Fatalf("created %+v", created)
	}
	got, err := svc.Get(ctx, admin, c.ID.String())
	if err != nil || got.SecretHash != c.SecretHash || got.Name != "Grafana" || !slices.Equal(got.Scopes, domain.OAuthScopes) {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if found, err := svc.Client(ctx, c.ID.String()); err != nil || found.ID != c.ID {
		t.Errorf("Client = %+v, %v", found, err)
	}

	// Fields absent are kept; the whole is judged again.
	e.clock.Advance(time.Minute)
	first := true
	updated, err := svc.Update(ctx, admin, c.ID.String(), domain.OAuthClientInput{Name: ptr("Grafana (prod)"), FirstParty: &first})
	if err != nil || updated.Name != "Grafana (prod)" || !updated.FirstParty || !slices.Equal(updated.RedirectURIs, c.RedirectURIs) ||
		!updated.UpdatedAt.Equal(e.clock.Now()) || updated.SecretHash != c.SecretHash {
		t.Fatalf("Update = %+v, %v", updated, err)
	}
	_, err = svc.Update(ctx, admin, c.ID.String(), domain.OAuthClientInput{RedirectURIs: []string{}})
	var verr *domain.ValidationError
	if !errors.As(err, &verr) || verr.Fields[0].Field != "redirectUris" {
		t.Errorf("removing the code flow's last redirect URI = %v, want validation_failed on redirectUris", err)
	}
	if got, _ := svc.Get(ctx, admin, c.ID.String()); !slices.Equal(got.RedirectURIs, c.RedirectURIs) {
		t.Errorf("a refused update changed the client: %v", got.RedirectURIs)
	}

	// A new secret: the old one stops at once.
	secret, err := svc.RotateSecret(ctx, admin, c.ID.String())
	if err != nil || secret == created.Secret || len(secret) != 43 {
		t.Fatalf("RotateSecret = %q, %v", secret, err)
	}
	_, err = svc.AuthenticateClient(ctx, c.ID.String(), created.Secret)
	wantErr(t, err, domain.ErrInvalidClientCredentials)
	if got, err := svc.AuthenticateClient(ctx, c.ID.String(), secret); err != nil || got.ID != c.ID {
		t.Errorf("AuthenticateClient with the new secret = %+v, %v", got, err)
	}

	pub := createClient(t, e, admin, clientIn("SPA", "public"))
	if pub.Secret != "" || pub.Client.SecretHash != "" {
		t.Errorf("a public client has a secret: %+v", pub)
	}
	_, err = svc.RotateSecret(ctx, admin, pub.Client.ID.String())
	wantErr(t, err, domain.ErrPublicOAuthClient)

	// Pages by id.
	third := createClient(t, e, admin, clientIn("CLI", "public"))
	page, err := svc.List(ctx, admin, "2", "")
	if err != nil || len(page.Items) != 2 || page.Next != page.Items[1].ID {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	rest, err := svc.List(ctx, admin, "2", page.Next.String())
	if err != nil || len(rest.Items) != 1 || rest.Next != "" {
		t.Fatalf("second page: %+v, %v", rest, err)
	}
	all := []domain.OAuthClientID{page.Items[0].ID, page.Items[1].ID, rest.Items[0].ID}
	if !slices.IsSorted(all) || !slices.Contains(all, third.Client.ID) {
		t.Errorf("pages %v: not every client once, by id", all)
	}

	wantErr(t, svc.Delete(ctx, admin, c.ID.String()), nil)
	_, err = svc.Get(ctx, admin, c.ID.String())
	wantErr(t, err, domain.ErrOAuthClientNotFound)
	_, err = svc.AuthenticateClient(ctx, c.ID.String(), secret)
	wantErr(t, err, domain.ErrInvalidClientCredentials)
	wantErr(t, svc.Delete(ctx, admin, c.ID.String()), domain.ErrOAuthClientNotFound)
}

// Unknown, malformed and public clients and wrong secrets are one answer.
func TestOAuthClients_AuthenticateClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	svc := e.svc.OAuthClients
	conf := createClient(t, e, admin, clientIn("Grafana", "confidential"))
	pub := createClient(t, e, admin, clientIn("SPA", "public"))
	id := conf.Client.ID.String()
	for _, tc := range []struct{ name, id, secret string }{
		{"wrong_secret", id, strings.Repeat("A", 43)},
		{"empty_secret", id, ""},
		{"the_hash", id, conf.Client.SecretHash},
		{"secret_with_more", id, conf.Secret + "x"},
		{"unknown_client", domain.NewOAuthClientID(e.clock.Now()).String(), conf.Secret},
		{"malformed_id", "grafana", conf.Secret},
		{"public_client", pub.Client.ID.String(), ""},
		{"public_client_with_a_secret", pub.Client.ID.String(), conf.Secret},
	} {
		if got, err := svc.AuthenticateClient(ctx, tc.id, tc.secret); !errors.Is(err, domain.ErrInvalidClientCredentials) || got.ID != "" {
			t.Errorf("%s: AuthenticateClient = %+v, %v; want ErrInvalidClientCredentials", tc.name, got, err)
		}
	}
	if got, err := svc.AuthenticateClient(ctx, id, conf.Secret); err != nil || got.ID != conf.Client.ID {
		t.Errorf("AuthenticateClient = %+v, %v", got, err)
	}
	// The provider reads a public client by its id alone.
	if got, err := svc.Client(ctx, pub.Client.ID.String()); err != nil || !got.IsPublic() {
		t.Errorf("Client(public) = %+v, %v", got, err)
	}
	for _, raw := range []string{"", "grafana", domain.NewOAuthClientID(e.clock.Now()).String()} {
		_, err := svc.Client(ctx, raw)
		wantErr(t, err, domain.ErrOAuthClientNotFound)
	}
}

func TestOAuthClients_as_operator(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	svc := e.svc.OAuthClients
	created, err := svc.CreateAsOperator(ctx, clientIn("Grafana", "confidential"))
	if err != nil || created.Secret == "" {
		t.Fatalf("CreateAsOperator = %+v, %v", created, err)
	}
	_, err = svc.CreateAsOperator(ctx, domain.OAuthClientInput{Name: ptr("No type")})
	var verr *domain.ValidationError
	if !errors.As(err, &verr) {
		t.Errorf("CreateAsOperator without a type = %v, want a validation error", err)
	}
	page, err := svc.ListAsOperator(ctx, domain.Page[domain.OAuthClientID]{Limit: 10})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != created.Client.ID {
		t.Fatalf("ListAsOperator = %+v, %v", page, err)
	}
	secret, err := svc.RotateSecretAsOperator(ctx, created.Client.ID.String())
	if err != nil || secret == created.Secret {
		t.Fatalf("RotateSecretAsOperator = %q, %v", secret, err)
	}
	_, err = svc.RotateSecretAsOperator(ctx, "nope")
	wantErr(t, err, domain.ErrInvalidOAuthClientID)
	wantErr(t, svc.DeleteAsOperator(ctx, "nope"), domain.ErrInvalidOAuthClientID)
	wantErr(t, svc.DeleteAsOperator(ctx, created.Client.ID.String()), nil)
	wantErr(t, svc.DeleteAsOperator(ctx, created.Client.ID.String()), domain.ErrOAuthClientNotFound)

	// The trail names the operator's door, and no actor.
	var got []string
	for _, ev := range e.recorded(t) {
		if ev.ActorID != "" {
			t.Errorf("event %+v has an actor", ev)
		}
		got = append(got, string(ev.Type)+" "+ev.Detail)
	}
	id := created.Client.ID.String()
	want := []string{
		"oauth_client.created client=" + id + " type=confidential origin=operator",
		"oauth_client.secret_rotated client=" + id + " origin=operator",
		"oauth_client.deleted client=" + id + " origin=operator",
	}
	if !slices.Equal(got, want) {
		t.Errorf("trail\n  %q\nwant\n  %q", got, want)
	}
}

// fakeRevoker is the provider's side of a deletion: it ends the sessions
// it was given, or fails with err.
type fakeRevoker struct {
	mu      sync.Mutex
	ended   []ports.EndedSession
	err     error
	revoked []domain.OAuthClientID
}

func (f *fakeRevoker) RevokeClient(_ context.Context, client domain.OAuthClientID, _ time.Time) ([]ports.EndedSession, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revoked = append(f.revoked, client)
	return slices.Clone(f.ended), f.err
}

func withRevoker(r ports.OAuthClientRevoker) envOption {
	return func(_ *application.Config, d *application.Deps) { d.Stores.ClientRevoker = r }
}

// Deleting a client ends what it was given at once: the sessions the
// revoker ends are refused from then on, their users told by
// session.revoked; when the revoker fails, the client stays.
func TestOAuthClients_delete_ends_what_the_client_was_given(t *testing.T) {
	t.Parallel()
	h := newHookReceiver(t, 0)
	revoker := &fakeRevoker{}
	e := newEnv(t, withRevoker(revoker), withWebhooks(t, h.srv.URL, domain.WebhookSessionRevoked, domain.WebhookOAuthClientDeleted))
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	ada, _ := e.seed(t, "ada@example.com")
	pair := login(t, e, "ada@example.com", seededPassword)
	sid := e.session(t, pair).ID
	c := createClient(t, e, admin, clientIn("Grafana", "confidential")).Client

	revoker.err = errors.New("the grants' table is away")
	if err := e.svc.OAuthClients.Delete(ctx, admin, c.ID.String()); err == nil || !strings.Contains(err.Error(), "away") {
		t.Fatalf("Delete with a failing revoker = %v", err)
	}
	if _, err := e.svc.OAuthClients.Client(ctx, c.ID.String()); err != nil {
		t.Fatalf("the client is gone though its tokens were not ended: %v", err)
	}

	revoker.err, revoker.ended = nil, []ports.EndedSession{{UserID: ada.ID, ID: sid}}
	wantErr(t, e.svc.OAuthClients.Delete(ctx, admin, c.ID.String()), nil)
	if !slices.Equal(revoker.revoked, []domain.OAuthClientID{c.ID, c.ID}) {
		t.Errorf("revoked %v", revoker.revoked)
	}
	_, err := e.auth.Authenticate(ctx, pair.Access.Token)
	wantErr(t, err, domain.ErrInvalidToken)

	e.deliver(t)
	var got []string
	for _, d := range h.deliveries() {
		got = append(got, d.typ)
		if d.typ == domain.WebhookSessionRevoked && (d.data["userId"] != ada.ID.String() || d.data["sessionId"] != sid ||
			d.data["reason"] != "client_deleted") {
			t.Errorf("session.revoked data %v", d.data)
		}
		if d.typ == domain.WebhookOAuthClientDeleted && (d.data["clientId"] != c.ID.String() || len(d.data) != 1) {
			t.Errorf("oauth_client.deleted data %v, want the clientId alone", d.data)
		}
	}
	slices.Sort(got) // queued in one transaction, at one instant
	if !slices.Equal(got, []string{domain.WebhookOAuthClientDeleted, domain.WebhookSessionRevoked}) {
		t.Errorf("webhooks %v", got)
	}
	var trail []string
	for _, ev := range e.recorded(t) {
		trail = append(trail, string(ev.Type)+" "+ev.Detail)
	}
	if !slices.Contains(trail, "session.revoked reason=client_deleted family="+sid) {
		t.Errorf("trail %q lacks the ended session", trail)
	}
}

// The webhooks of a client's life carry its clientId, what changed, and
// never a secret.
func TestOAuthClients_webhooks(t *testing.T) {
	t.Parallel()
	h := newHookReceiver(t, 0)
	e := newEnv(t, withWebhooks(t, h.srv.URL))
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	svc := e.svc.OAuthClients
	created := createClient(t, e, admin, clientIn("Grafana", "confidential"))
	id := created.Client.ID.String()
	// A second between the changes orders their events.
	e.clock.Advance(time.Second)
	_, err := svc.Update(ctx, admin, id, domain.OAuthClientInput{Name: ptr("Grafana"), Scopes: []string{"openid"}})
	wantErr(t, err, nil)
	// No change, no event.
	_, err = svc.Update(ctx, admin, id, domain.OAuthClientInput{Name: ptr("Grafana")})
	wantErr(t, err, nil)
	secret, err := svc.RotateSecret(ctx, admin, id)
	wantErr(t, err, nil)
	e.clock.Advance(time.Second)
	wantErr(t, svc.Delete(ctx, admin, id), nil)
	e.deliver(t)

	var got []string
	for _, d := range h.deliveries() {
		got = append(got, d.typ)
		if d.data["clientId"] != id || d.data["userId"] != nil {
			t.Errorf("%s data %v: want the clientId, no userId", d.typ, d.data)
		}
		for _, s := range []string{created.Secret, secret, created.Client.SecretHash} {
			if strings.Contains(string(d.body), s) {
				t.Errorf("%s holds a secret: %s", d.typ, d.body)
			}
		}
		if d.typ == domain.WebhookOAuthClientUpdated && !slices.Equal(d.data["changed"].([]any), []any{"scopes"}) {
			t.Errorf("oauth_client.updated changed %v, want [scopes]", d.data["changed"])
		}
	}
	want := []string{domain.WebhookOAuthClientCreated, domain.WebhookOAuthClientUpdated, domain.WebhookOAuthClientDeleted}
	if !slices.Equal(got, want) {
		t.Errorf("webhooks %v, want %v", got, want)
	}
}
