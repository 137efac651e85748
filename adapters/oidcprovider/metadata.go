package oidcprovider

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/userd/userd/domain"
)

// metadataCacheControl lets clients keep the metadata five minutes: it
// changes only with a new configuration (a restart).
const metadataCacheControl = "public, max-age=300"

// metadata is the provider's metadata: OpenID Connect Discovery 1.0 §3
// and RFC 8414 §2 (with RFC 9207's iss parameter), one document for both
// well-known paths. It is userd's own rather than the library's
// oidc.DiscoveryConfiguration, which lacks some members the contract
// lists and would add others userd does not serve.
type metadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint"`
	TokenEndpoint                              string   `json:"token_endpoint"`
	UserinfoEndpoint                           string   `json:"userinfo_endpoint"`
	JWKSURI                                    string   `json:"jwks_uri"`
	RevocationEndpoint                         string   `json:"revocation_endpoint"`
	IntrospectionEndpoint                      string   `json:"introspection_endpoint"`
	EndSessionEndpoint                         string   `json:"end_session_endpoint"`
	ScopesSupported                            []string `json:"scopes_supported"`
	ClaimsSupported                            []string `json:"claims_supported"`
	ResponseTypesSupported                     []string `json:"response_types_supported"`
	ResponseModesSupported                     []string `json:"response_modes_supported"`
	GrantTypesSupported                        []string `json:"grant_types_supported"`
	SubjectTypesSupported                      []string `json:"subject_types_supported"`
	IDTokenSigningAlgValuesSupported           []string `json:"id_token_signing_alg_values_supported"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported"`
	RevocationEndpointAuthMethodsSupported     []string `json:"revocation_endpoint_auth_methods_supported"`
	IntrospectionEndpointAuthMethodsSupported  []string `json:"introspection_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported"`
	RequestParameterSupported                  bool     `json:"request_parameter_supported"`
	RequestURIParameterSupported               bool     `json:"request_uri_parameter_supported"`
	ClaimsParameterSupported                   bool     `json:"claims_parameter_supported"`
	// RegistrationEndpoint is named only while dynamic registration is
	// open.
	RegistrationEndpoint string `json:"registration_endpoint,omitempty"`
}

// claimsSupported are the claims of the ID token and userinfo: those of
// every sign-in, then those of the scopes (domain.ClaimsOf).
var claimsSupported = []string{
	"iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "acr", "amr", "sid", "at_hash",
	"name", "updated_at", "email", "email_verified", "profiles",
}

func (s *server) metadata() metadata {
	iss := s.opts.Issuer
	algs := rs256First(s.p.Algorithms())
	return metadata{
		Issuer:                                     iss,
		AuthorizationEndpoint:                      iss + AuthorizePath,
		TokenEndpoint:                              iss + TokenPath,
		UserinfoEndpoint:                           iss + UserInfoPath,
		JWKSURI:                                    iss + JWKSPath,
		RevocationEndpoint:                         iss + RevocationPath,
		IntrospectionEndpoint:                      iss + IntrospectionPath,
		EndSessionEndpoint:                         iss + EndSessionPath,
		ScopesSupported:                            domain.ScopeStrings(domain.OAuthScopes),
		ClaimsSupported:                            claimsSupported,
		ResponseTypesSupported:                     []string{"code"},
		ResponseModesSupported:                     []string{"query"},
		GrantTypesSupported:                        grantTypes,
		SubjectTypesSupported:                      []string{"public"},
		IDTokenSigningAlgValuesSupported:           algs,
		TokenEndpointAuthMethodsSupported:          []string{"client_secret_basic", "client_secret_post", "none"},
		RevocationEndpointAuthMethodsSupported:     []string{"client_secret_basic", "client_secret_post", "none"},
		IntrospectionEndpointAuthMethodsSupported:  []string{"client_secret_basic", "client_secret_post"},
		CodeChallengeMethodsSupported:              []string{domain.PKCEMethodS256},
		AuthorizationResponseIssParameterSupported: true,
		RegistrationEndpoint:                       s.registrationEndpoint(),
	}
}

// registrationEndpoint is the metadata's registration_endpoint: empty
// (left out) while dynamic registration is closed.
func (s *server) registrationEndpoint() string {
	if s.opts.Registrar == nil {
		return ""
	}
	return s.opts.Issuer + RegistrationPath
}

// rs256First returns algs with RS256 first (every OpenID client supports
// it, and discovery's first is what many pick), never empty.
func rs256First(algs []string) []string {
	out := []string{string(domain.IDTokenRS256)}
	for _, a := range algs {
		if !strings.EqualFold(a, out[0]) {
			out = append(out, a)
		}
	}
	return out
}

// serveMetadata answers /.well-known/oauth-authorization-server with the
// document of Discovery: the library routes only the OpenID path.
func (s *server) serveMetadata(w http.ResponseWriter, _ *http.Request) {
	// Encoded as the library writes Discovery's, so that both answers
	// are the same bytes.
	w.Header().Set("Cache-Control", metadataCacheControl)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.metadata())
}
