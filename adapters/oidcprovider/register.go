package oidcprovider

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"

	"github.com/userd/userd/domain"
)

// RegistrationPath is the dynamic registration endpoint (RFC 7591), open
// only with Options.Registrar.
const RegistrationPath = "/oauth2/register"

// Registrar registers a public client for anyone (RFC 7591): the
// application's OAuthClientService.Register, which holds the rules
// (public, the code flow only, never first party). A refusal of the
// client's metadata is a *domain.ValidationError.
type Registrar interface {
	Register(ctx context.Context, in domain.OAuthClientInput) (domain.OAuthClient, error)
}

// registrationRequest is the client metadata of RFC 7591 §2 that userd
// reads; members it does not know are ignored, as §2 asks.
type registrationRequest struct {
	RedirectURIs            []string `json:"redirect_uris"`
	PostLogoutRedirectURIs  []string `json:"post_logout_redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope"`
}

// registrationResponse is the client information response of RFC 7591
// §3.2.1: the metadata as registered, and its id. A public client has no
// secret.
type registrationResponse struct {
	ClientID                string   `json:"client_id"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	PostLogoutRedirectURIs  []string `json:"post_logout_redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	Scope                   string   `json:"scope"`
}

// defaultClientName names a client that registered without a name: the
// consent page shows it, and says nothing more of the app than the
// redirect URI's host would.
const defaultClientName = "Unnamed app"

// register serves POST /oauth2/register.
func (s *server) register(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeOAuthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body must be application/json")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	var req registrationRequest
	if err != nil || json.Unmarshal(body, &req) != nil {
		writeOAuthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body is not a JSON object of client metadata")
		return
	}
	in, desc := registrationInput(req)
	if desc != "" {
		writeOAuthError(w, http.StatusBadRequest, "invalid_client_metadata", desc)
		return
	}
	c, err := s.opts.Registrar.Register(r.Context(), in)
	var verr *domain.ValidationError
	switch {
	case errors.As(err, &verr):
		code := "invalid_client_metadata"
		if len(verr.Fields) > 0 && strings.HasPrefix(verr.Fields[0].Field, "redirectUris") {
			code = "invalid_redirect_uri"
		}
		writeOAuthError(w, http.StatusBadRequest, code, verr.Error())
		return
	case err != nil:
		s.opts.Logger.LogAttrs(r.Context(), slog.LevelError, "oidc provider: register", slog.String("error", err.Error()))
		writeOAuthError(w, http.StatusInternalServerError, "server_error", "the client could not be registered")
		return
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(registrationResponse{ClientID: c.ID.String(), ClientIDIssuedAt: c.CreatedAt.Unix(),
		ClientName: c.Name, RedirectURIs: c.RedirectURIs, PostLogoutRedirectURIs: c.PostLogoutRedirectURIs,
		GrantTypes: grantStrings(c.GrantTypes), ResponseTypes: []string{"code"}, TokenEndpointAuthMethod: "none",
		Scope: strings.Join(domain.ScopeStrings(c.Scopes), " ")})
}

// registrationInput maps RFC 7591's metadata onto a client's input, or
// says which member userd cannot honour: a client with a secret (only
// public clients register), a response type other than code.
func registrationInput(req registrationRequest) (domain.OAuthClientInput, string) {
	if m := req.TokenEndpointAuthMethod; m != "" && m != "none" {
		return domain.OAuthClientInput{}, "token_endpoint_auth_method must be none: dynamic registration makes public clients only"
	}
	for _, t := range req.ResponseTypes {
		if t != "code" {
			return domain.OAuthClientInput{}, "response_types may hold code only"
		}
	}
	name := strings.TrimSpace(req.ClientName)
	if name == "" {
		name = defaultClientName
	}
	in := domain.OAuthClientInput{Name: &name, RedirectURIs: req.RedirectURIs,
		PostLogoutRedirectURIs: req.PostLogoutRedirectURIs, GrantTypes: req.GrantTypes}
	if in.RedirectURIs == nil {
		in.RedirectURIs = []string{}
	}
	if req.Scope != "" {
		in.Scopes = strings.Fields(req.Scope)
	}
	return in, ""
}

func grantStrings(gs []domain.OAuthGrantType) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = string(g)
	}
	return out
}
