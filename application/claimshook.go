package application

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// claimsHook asks the claims hook (USERD_CLAIMS_HOOK_URL) for the extra
// claims of every access and ID token about to be signed, and applies the
// deployment's choice when it cannot answer (docs/claims.md). Without a
// hook it answers no claims at once and builds nothing. It is never asked
// inside a transaction: SQLite has one writer, and the hook may take its
// whole timeout.
type claimsHook struct {
	hook ports.ClaimsHook
	// failOpen signs in without extra claims when the hook does not
	// answer in time or answers another status (USERD_CLAIMS_HOOK_FAIL).
	failOpen bool
	metrics  ports.ClaimsHookMetrics
	clock    ports.Clock
	log      *slog.Logger
}

// asks reports whether a hook is set: without one, forUser and forClient
// answer no claims at once.
func (h *claimsHook) asks() bool { return h != nil && h.hook != nil }

// forUser asks for the claims of a token of user's session sid signed in
// by amr; client and scopes are the OpenID client's, empty for userd's
// own tokens.
func (h *claimsHook) forUser(ctx context.Context, grant string, user domain.User, sid string, amr domain.AMR,
	client domain.OAuthClientID, scopes []domain.OAuthScope) (domain.HookClaims, error) {
	if !h.asks() {
		return domain.HookClaims{}, nil
	}
	return h.ask(ctx, domain.ClaimsRequest{UserID: user.ID, User: userRepresentation(user), SessionID: sid,
		AMR: amr, ClientID: client, Scopes: scopes, Grant: grant})
}

// forClient asks for the claims of a client_credentials token.
func (h *claimsHook) forClient(ctx context.Context, client domain.OAuthClientID, scopes []domain.OAuthScope) (domain.HookClaims, error) {
	if !h.asks() {
		return domain.HookClaims{}, nil
	}
	return h.ask(ctx, domain.ClaimsRequest{ClientID: client, Scopes: scopes, Grant: domain.ClaimsGrantClientCredentials})
}

// ask calls the hook once, counts and logs the result (never the answer's
// body, nor the refusal's message), and fails open when the deployment
// does so.
func (h *claimsHook) ask(ctx context.Context, r domain.ClaimsRequest) (domain.HookClaims, error) {
	start := h.clock.Now()
	claims, err := h.hook.Claims(ctx, r)
	took := h.clock.Now().Sub(start)
	attrs := []slog.Attr{slog.String("grant", r.Grant), slog.Duration("took", took)}
	if r.UserID != "" {
		attrs = append(attrs, slog.String("user_id", r.UserID.String()))
	}
	if r.ClientID != "" {
		attrs = append(attrs, slog.String("client_id", r.ClientID.String()))
	}
	switch {
	case err == nil:
		h.called(ports.HookClaimsAnswered, took)
		return claims, nil
	case errors.As(err, new(*domain.SignInRefusedError)):
		h.called(ports.HookRefused, took)
		h.log.LogAttrs(ctx, slog.LevelInfo, "claims hook refused the sign-in", attrs...)
		return domain.HookClaims{}, err
	case errors.Is(err, domain.ErrHookFailed):
		h.called(ports.HookFailed, took)
		h.log.LogAttrs(ctx, slog.LevelError, "claims hook answered wrongly", append(attrs, slog.String("error", err.Error()))...)
		return domain.HookClaims{}, err
	}
	h.called(ports.HookUnavailable, took)
	attrs = append(attrs, slog.String("error", err.Error()))
	if h.failOpen && ctx.Err() == nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "claims hook unavailable; signed without its claims (USERD_CLAIMS_HOOK_FAIL=open)", attrs...)
		return domain.HookClaims{}, nil
	}
	h.log.LogAttrs(ctx, slog.LevelWarn, "claims hook unavailable; sign-in refused", attrs...)
	if !errors.Is(err, domain.ErrHookUnavailable) {
		err = errors.Join(domain.ErrHookUnavailable, err)
	}
	return domain.HookClaims{}, err
}

func (h *claimsHook) called(result string, took time.Duration) {
	if h.metrics != nil {
		h.metrics.HookCalled(result, took)
	}
}

// userRepresentation is the user as the hook receives it, in the one
// place that builds it: the API's user representation without disabled
// (a disabled account is never given a token).
func userRepresentation(u domain.User) map[string]any {
	return map[string]any{
		"id":            u.ID.String(),
		"name":          u.Name,
		"email":         u.Email.String(),
		"profiles":      u.Profiles.Strings(),
		"emailVerified": u.EmailVerified,
		"mfaEnabled":    u.MFAEnabled,
		"metadata":      u.Metadata.JSON(),
		"appMetadata":   u.AppMetadata.JSON(),
		"createdAt":     u.CreatedAt.UTC().Format(time.RFC3339),
		"updatedAt":     u.UpdatedAt.UTC().Format(time.RFC3339),
	}
}
