package oidcflow

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// ccResult is what cc.mjs reports.
type ccResult struct {
	MetadataIssuer           string         `json:"metadataIssuer"`
	Grant                    attempt        `json:"grant"`
	AccessTokenHeader        map[string]any `json:"accessTokenHeader"`
	AccessTokenClaims        map[string]any `json:"accessTokenClaims"`
	Introspection            attempt        `json:"introspection"`
	IntrospectUser           attempt        `json:"introspectUser"`
	IntrospectGarbage        attempt        `json:"introspectGarbage"`
	WrongSecretGrant         attempt        `json:"wrongSecretGrant"`
	WrongSecretIntrospection attempt        `json:"wrongSecretIntrospection"`
	UnknownScope             attempt        `json:"unknownScope"`
}

// value decodes the value of a call that answered.
func (a attempt) value(t *testing.T, what string) map[string]any {
	t.Helper()
	if !a.OK {
		t.Errorf("%s threw: %+v", what, a)
		return nil
	}
	var v map[string]any
	if err := json.Unmarshal(a.Value, &v); err != nil {
		t.Errorf("%s: %s: %v", what, a.Value, err)
	}
	return v
}

// TestOAuth4WebAPI_client_credentials_and_introspection: oauth4webapi 3,
// a certified OAuth library, as a service with a confidential client:
// the RFC 8414 metadata, a client_credentials token (an RFC 9068 JWT
// whose subject is the client, no refresh or ID token), introspection
// (RFC 7662) of it and of a user's refresh token of the same client,
// {"active":false} alone for anything else; a wrong secret is
// invalid_client, a scope the grant cannot give invalid_scope.
func TestOAuth4WebAPI_client_credentials_and_introspection(t *testing.T) {
	t.Parallel()
	nodeModules(t, "oauth4webapi")
	p := startProvider(t)
	userID := p.register(t, "Grace Hopper", "grace@example.com")
	svc := p.newClient(t, "Billing service", map[string]any{"firstParty": true})
	user := p.signedInTokens(t, p.signIn(t, "grace@example.com"), svc, "http://127.0.0.1:1/cb", nil)

	s := startScript(t, "cc.mjs", map[string]string{
		"issuer": p.issuer, "clientId": svc.ID, "clientSecret": svc.Secret, "scope": "email profiles",
		"userToken": user.RefreshToken,
	}, "oauth4webapi")
	var r ccResult
	s.recv("result", &r)

	if r.MetadataIssuer != p.issuer {
		t.Errorf("the RFC 8414 metadata's issuer is %q, want %q", r.MetadataIssuer, p.issuer)
	}
	if g := r.Grant.value(t, "client_credentials"); g != nil {
		if g["token_type"] != "bearer" || !sameScopes(g["scope"], "email profiles") || g["refresh_token"] != nil || g["id_token"] != nil {
			t.Errorf("client_credentials answered %v, want a bearer token of the scopes asked, no refresh or ID token", g)
		}
	}
	if r.AccessTokenHeader["typ"] != "at+jwt" || r.AccessTokenClaims["sub"] != svc.ID || r.AccessTokenClaims["client_id"] != svc.ID ||
		r.AccessTokenClaims["iss"] != p.issuer {
		t.Errorf("the client's access token: %v %v, want typ at+jwt, sub and client_id %s, iss %s", r.AccessTokenHeader, r.AccessTokenClaims, svc.ID, p.issuer)
	}
	if in := r.Introspection.value(t, "introspection of the client's token"); in != nil {
		if in["active"] != true || in["sub"] != svc.ID || in["client_id"] != svc.ID || !sameScopes(in["scope"], "email profiles") {
			t.Errorf("introspection of the client's token: %v, want active, sub and client_id %s", in, svc.ID)
		}
		wantBearer(t, in)
	}
	if in := r.IntrospectUser.value(t, "introspection of a user's refresh token"); in != nil {
		if in["active"] != true || in["sub"] != userID || in["client_id"] != svc.ID {
			t.Errorf("introspection of a user's refresh token: %v, want active, sub %s, client_id %s", in, userID, svc.ID)
		}
	}
	if in := r.IntrospectGarbage.value(t, "introspection of garbage"); in != nil && (in["active"] != false || len(in) != 1) {
		t.Errorf("introspection of garbage: %v, want {\"active\":false} alone", in)
	}
	for what, a := range map[string]attempt{"a grant with a wrong secret": r.WrongSecretGrant, "introspection with a wrong secret": r.WrongSecretIntrospection} {
		if a.OK || a.Status != http.StatusUnauthorized || a.Error != "invalid_client" {
			t.Errorf("%s: %+v, want 401 invalid_client", what, a)
		}
	}
	if !strings.EqualFold(r.WrongSecretGrant.Challenge, "Basic") {
		t.Errorf("a grant with a wrong secret sent with Basic: challenge %q, want WWW-Authenticate: Basic", r.WrongSecretGrant.Challenge)
	}
	if a := r.UnknownScope; a.OK || a.Error != "invalid_scope" {
		t.Errorf("client_credentials for openid and an unknown scope: %+v, want invalid_scope", a)
	}
}
