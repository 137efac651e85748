package application

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// OAuthClientService manages the OAuth/OpenID clients of the provider:
// an admin's API and console and the operator's `userd clients` commands
// register, change and delete them, and the provider looks a client up
// and authenticates it. Each admin's use case follows the contract's
// order of checks: authentication, the form of the request,
// authorization, existence.
type OAuthClientService struct {
	core
	oauthClientPorts
}

// oauthClientPorts are what the OAuthClientService uses.
type oauthClientPorts struct {
	users       ports.UserRepository
	clients     ports.OAuthClientStore
	tx          ports.Transactor
	webhooks    *webhookQueue
	sessionEnds *sessionEnds
	// revoker ends what a deleted client was given, in the deletion's
	// transaction (Stores.ClientRevoker); nil in a store that keeps no
	// flows, where a deletion has nothing more to end.
	revoker ports.OAuthClientRevoker
	// dynamicRegistration opens Register (Config.OIDCDynamicRegistration).
	dynamicRegistration bool
}

// CreatedOAuthClient is a client just registered, and its secret.
type CreatedOAuthClient struct {
	Client domain.OAuthClient
	// Secret is the client secret in clear, empty for a public client.
	// Only its hash is stored: this is the one time it is seen.
	Secret string
}

// OAuthClientPage is one page of the client list.
type OAuthClientPage = domain.Paged[domain.OAuthClient, domain.OAuthClientID]

// Create registers a client for an admin.
func (s *OAuthClientService) Create(ctx context.Context, actor *domain.Principal, in domain.OAuthClientInput) (CreatedOAuthClient, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return CreatedOAuthClient{}, err
	}
	c, secret, err := domain.NewOAuthClient(in, s.clock.Now())
	if err != nil {
		return CreatedOAuthClient{}, err
	}
	if err := actor.RequireAdmin(); err != nil {
		return CreatedOAuthClient{}, err
	}
	return s.create(ctx, c, secret, actor.UserID, domain.OriginAPI)
}

// CreateAsOperator registers a client for the operator at the command
// line, who holds the database's credentials already.
func (s *OAuthClientService) CreateAsOperator(ctx context.Context, in domain.OAuthClientInput) (CreatedOAuthClient, error) {
	c, secret, err := domain.NewOAuthClient(in, s.clock.Now())
	if err != nil {
		return CreatedOAuthClient{}, err
	}
	return s.create(ctx, c, secret, "", domain.OriginOperator)
}

// ErrRegistrationClosed is returned by Register while dynamic
// registration is off (USERD_OIDC_DYNAMIC_REGISTRATION).
var ErrRegistrationClosed = errors.New("dynamic client registration is off")

// Register registers a client for anyone, by the provider's dynamic
// registration (RFC 7591), when the deployment opened it: a public
// client only, with the code flow and refresh tokens at most, never first
// party, whatever in asks (what it asks beyond is a
// *domain.ValidationError). Closed, it is ErrRegistrationClosed.
func (s *OAuthClientService) Register(ctx context.Context, in domain.OAuthClientInput) (domain.OAuthClient, error) {
	if !s.dynamicRegistration {
		return domain.OAuthClient{}, ErrRegistrationClosed
	}
	public := string(domain.OAuthClientPublic)
	if in.Type != nil && *in.Type != public {
		return domain.OAuthClient{}, invalidField("type", "dynamic registration makes public clients only")
	}
	if in.FirstParty != nil && *in.FirstParty {
		return domain.OAuthClient{}, invalidField("firstParty", "a registered client is never first party")
	}
	for _, g := range in.GrantTypes {
		if g != string(domain.GrantAuthorizationCode) && g != string(domain.GrantRefreshToken) {
			return domain.OAuthClient{}, invalidField("grantTypes",
				"dynamic registration allows authorization_code and refresh_token only")
		}
	}
	in.Type = &public
	c, _, err := domain.NewOAuthClient(in, s.clock.Now())
	if err != nil {
		return domain.OAuthClient{}, err
	}
	created, err := s.create(ctx, c, "", "", domain.OriginRegistration)
	return created.Client, err
}

// invalidField is a *domain.ValidationError of one field.
func invalidField(field, message string) error {
	return &domain.ValidationError{Fields: []domain.FieldError{{Field: field, Message: message}}}
}

// create stores the client with its webhook, and records it.
func (s *OAuthClientService) create(ctx context.Context, c domain.OAuthClient, secret string, actor domain.UserID, origin domain.Origin) (CreatedOAuthClient, error) {
	err := s.webhooks.inTxFor(ctx, domain.WebhookOAuthClientCreated, func(ctx context.Context) error {
		if err := s.clients.Create(ctx, c); err != nil {
			return err
		}
		return s.clientEvent(ctx, domain.WebhookOAuthClientCreated, c.ID, nil)
	})
	if err != nil {
		return CreatedOAuthClient{}, fmt.Errorf("create client: %w", err)
	}
	s.events.note(ctx, domain.OAuthClientCreatedEvent(actor, c.ID, c.Type, origin))
	s.log.LogAttrs(ctx, slog.LevelInfo, "oauth client created", slog.String("client_id", c.ID.String()),
		slog.String("type", string(c.Type)))
	return CreatedOAuthClient{Client: c, Secret: secret}, nil
}

// List returns a page of the clients ordered by id, for an admin: limit
// and after as in domain.ParsePage. A bad page is a domain.PageError,
// reported before a missing right.
func (s *OAuthClientService) List(ctx context.Context, actor *domain.Principal, limit, after string) (OAuthClientPage, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return OAuthClientPage{}, err
	}
	page, err := domain.ParsePage(limit, after, "a client id", domain.ParseOAuthClientID)
	if err != nil {
		return OAuthClientPage{}, err
	}
	if err := actor.RequireAdmin(); err != nil {
		return OAuthClientPage{}, err
	}
	return s.ListAsOperator(ctx, page)
}

// ListAsOperator returns the page of the clients ordered by id, for the
// operator at the command line.
func (s *OAuthClientService) ListAsOperator(ctx context.Context, page domain.Page[domain.OAuthClientID]) (OAuthClientPage, error) {
	clients, err := s.clients.List(ctx, page.Probe())
	if err != nil {
		return OAuthClientPage{}, fmt.Errorf("list clients: %w", err)
	}
	return domain.Cut(page, clients, func(c domain.OAuthClient) domain.OAuthClientID { return c.ID }), nil
}

// Get returns the client rawID to an admin.
func (s *OAuthClientService) Get(ctx context.Context, actor *domain.Principal, rawID string) (domain.OAuthClient, error) {
	id, err := s.adminOnClient(ctx, actor, rawID, domain.OAuthClientInput{})
	if err != nil {
		return domain.OAuthClient{}, err
	}
	return s.clients.ByID(ctx, id)
}

// Update changes the client rawID for an admin: the fields in holds are
// set, the others kept, and the whole client judged again (a
// *domain.ValidationError when it would be invalid, nothing changed).
func (s *OAuthClientService) Update(ctx context.Context, actor *domain.Principal, rawID string, in domain.OAuthClientInput) (domain.OAuthClient, error) {
	id, err := s.adminOnClient(ctx, actor, rawID, in)
	if err != nil {
		return domain.OAuthClient{}, err
	}
	var (
		c      domain.OAuthClient
		fields []string
	)
	err = s.webhooks.inTxFor(ctx, domain.WebhookOAuthClientUpdated, func(ctx context.Context) error {
		var err error
		c, err = s.clients.Update(ctx, id, func(stored *domain.OAuthClient) error {
			var applyErr error
			fields, applyErr = stored.Apply(in, s.clock.Now())
			return applyErr
		})
		if err != nil || len(fields) == 0 {
			return err
		}
		return s.clientEvent(ctx, domain.WebhookOAuthClientUpdated, id, map[string]any{"changed": fields})
	})
	if err != nil {
		return domain.OAuthClient{}, err
	}
	if len(fields) > 0 {
		s.events.note(ctx, domain.OAuthClientUpdatedEvent(actor.UserID, id, fields))
	}
	return c, nil
}

// Delete removes the client rawID for an admin; everything it was given
// ends at once.
func (s *OAuthClientService) Delete(ctx context.Context, actor *domain.Principal, rawID string) error {
	id, err := s.adminOnClient(ctx, actor, rawID, domain.OAuthClientInput{})
	if err != nil {
		return err
	}
	return s.delete(ctx, id, actor.UserID, domain.OriginAPI)
}

// DeleteAsOperator removes the client rawID for the operator at the
// command line: a malformed id is domain.ErrInvalidOAuthClientID.
func (s *OAuthClientService) DeleteAsOperator(ctx context.Context, rawID string) error {
	id, err := domain.ParseOAuthClientID(rawID)
	if err != nil {
		return err
	}
	return s.delete(ctx, id, "", domain.OriginOperator)
}

// delete removes the client and, in the same transaction, ends what it
// was given (the revoker's sessions), so that the client is gone with
// its tokens or not at all; the ended sessions' access tokens are then
// refused on every node, and their users told.
func (s *OAuthClientService) delete(ctx context.Context, id domain.OAuthClientID, actor domain.UserID, origin domain.Origin) error {
	now := s.clock.Now()
	var ended []ports.EndedSession
	err := s.tx.WithinTx(ctx, func(ctx context.Context) error {
		// What the client was given ends first, while its rows still
		// point at the client; a client that is not there has given
		// nothing, and its deletion below rolls the whole back.
		if s.revoker != nil {
			var err error
			if ended, err = s.revoker.RevokeClient(ctx, id, now); err != nil {
				return fmt.Errorf("revoke the client's tokens: %w", err)
			}
		}
		if err := s.clients.Delete(ctx, id); err != nil {
			return err
		}
		for _, e := range ended {
			if err := s.webhooks.sessionRevoked(ctx, e.UserID, e.ID, string(domain.EndedByClientDeletion)); err != nil {
				return err
			}
		}
		return s.clientEvent(ctx, domain.WebhookOAuthClientDeleted, id, nil)
	})
	if err != nil {
		return err
	}
	sids := make([]string, len(ended))
	for i, e := range ended {
		sids[i] = e.ID
		s.events.note(ctx, domain.SessionRevokedEvent(actor, e.UserID, domain.EndedByClientDeletion, e.ID))
	}
	s.sessionEnds.ended(ctx, sids...)
	s.events.note(ctx, domain.OAuthClientDeletedEvent(actor, id, origin))
	s.log.LogAttrs(ctx, slog.LevelInfo, "oauth client deleted", slog.String("client_id", id.String()),
		slog.Int("sessions_ended", len(ended)))
	return nil
}

// RotateSecret gives the confidential client rawID a new secret for an
// admin, and returns it (shown this once): the old one stops working at
// once. A public client has none: domain.ErrPublicOAuthClient.
func (s *OAuthClientService) RotateSecret(ctx context.Context, actor *domain.Principal, rawID string) (string, error) {
	id, err := s.adminOnClient(ctx, actor, rawID, domain.OAuthClientInput{})
	if err != nil {
		return "", err
	}
	return s.rotateSecret(ctx, id, actor.UserID, domain.OriginAPI)
}

// RotateSecretAsOperator is RotateSecret for the operator at the command
// line: a malformed id is domain.ErrInvalidOAuthClientID.
func (s *OAuthClientService) RotateSecretAsOperator(ctx context.Context, rawID string) (string, error) {
	id, err := domain.ParseOAuthClientID(rawID)
	if err != nil {
		return "", err
	}
	return s.rotateSecret(ctx, id, "", domain.OriginOperator)
}

func (s *OAuthClientService) rotateSecret(ctx context.Context, id domain.OAuthClientID, actor domain.UserID, origin domain.Origin) (string, error) {
	var secret string
	_, err := s.clients.Update(ctx, id, func(c *domain.OAuthClient) error {
		var err error
		secret, err = c.RotateSecret(s.clock.Now())
		return err
	})
	if err != nil {
		return "", err
	}
	s.events.note(ctx, domain.OAuthClientSecretRotatedEvent(actor, id, origin))
	s.log.LogAttrs(ctx, slog.LevelInfo, "oauth client secret rotated", slog.String("client_id", id.String()))
	return secret, nil
}

// Client returns the client with the id clientID, as the provider reads
// it from a request (a client_id parameter): one that is malformed or
// unknown is domain.ErrOAuthClientNotFound alike.
func (s *OAuthClientService) Client(ctx context.Context, clientID string) (domain.OAuthClient, error) {
	id, err := domain.ParseOAuthClientID(clientID)
	if err != nil {
		return domain.OAuthClient{}, fmt.Errorf("client by id: %w", domain.ErrOAuthClientNotFound)
	}
	return s.clients.ByID(ctx, id)
}

// unknownClient is the client an unknown id is checked against, so that
// AuthenticateClient does the same work for it as for a wrong secret.
var unknownClient = domain.OAuthClient{SecretHash: domain.HashOAuthClientSecret("no client has this id")}

// AuthenticateClient returns the confidential client clientID when secret
// is its secret (client_secret_basic, client_secret_post). An unknown or
// malformed id, a public client (which has no secret) and a wrong secret
// are domain.ErrInvalidClientCredentials alike, the token endpoint's 401
// invalid_client, and take the same work: a hash and a constant-time
// comparison.
func (s *OAuthClientService) AuthenticateClient(ctx context.Context, clientID, secret string) (domain.OAuthClient, error) {
	c, err := s.Client(ctx, clientID)
	switch {
	case errors.Is(err, domain.ErrOAuthClientNotFound):
		unknownClient.SecretMatches(secret)
		return domain.OAuthClient{}, domain.ErrInvalidClientCredentials
	case err != nil:
		return domain.OAuthClient{}, err
	case !c.SecretMatches(secret):
		return domain.OAuthClient{}, domain.ErrInvalidClientCredentials
	}
	return c, nil
}

// adminOnClient is how every admin's use case on one client starts, in
// the contract's order: a signed-in caller, a well-formed client id
// (domain.ErrInvalidOAuthClientID) and body (in's form, a
// *domain.ValidationError), then an admin (domain.ErrForbidden). The
// client's existence is the use case's to check, in its own read.
func (s *OAuthClientService) adminOnClient(ctx context.Context, actor *domain.Principal, rawID string, in domain.OAuthClientInput) (domain.OAuthClientID, error) {
	if _, err := signedIn(ctx, s.users, actor); err != nil {
		return "", err
	}
	id, err := domain.ParseOAuthClientID(rawID)
	if err != nil {
		return "", err
	}
	if err := in.Check(); err != nil {
		return "", err
	}
	if err := actor.RequireAdmin(); err != nil {
		return "", err
	}
	return id, nil
}

// clientEvent queues the webhook event typ about the client, with more
// data: the clientId, never a secret.
func (s *OAuthClientService) clientEvent(ctx context.Context, typ string, id domain.OAuthClientID, data map[string]any) error {
	payload := map[string]any{"clientId": id.String()}
	for k, v := range data {
		payload[k] = v
	}
	return s.webhooks.emitData(ctx, typ, payload)
}
