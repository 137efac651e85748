package federation_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"testing"

	"github.com/userd/userd/adapters/federation"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/githubstub"
)

const (
	gitHubClientID     = "Iv1.github-app"
	gitHubClientSecret = "github-app-secret"
)

// gitHubProvider is the provider of the stub.
func gitHubProvider(stub *githubstub.Server) domain.IdentityProvider {
	return domain.IdentityProvider{
		Slug: "github", DisplayName: "GitHub", Kind: domain.IdentityProviderGitHub,
		ClientID: gitHubClientID, ClientSecret: gitHubClientSecret,
		Scopes: domain.DefaultGitHubProviderScopes, Enabled: true,
		AuthURL: stub.AuthURL(), TokenURL: stub.TokenURL(), APIURL: stub.APIURL(),
	}
}

// gitHubSignIn runs a flow through the stub: the authorization URL, the
// approval, the exchange of the code it gave.
func gitHubSignIn(t *testing.T, stub *githubstub.Server, p domain.IdentityProvider) (domain.ExternalIdentity, url.Values, error) {
	t.Helper()
	c := federation.New(federation.Options{Logger: slog.New(slog.DiscardHandler)})
	req := newFlow()
	raw, err := c.AuthCodeURL(context.Background(), p, req)
	if err != nil {
		t.Fatalf("AuthCodeURL: %v", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	back := stub.Approve(t, raw)
	if back.Get("state") != req.State {
		t.Fatalf("the stub sent back the state %q, want the flow's", back.Get("state"))
	}
	id, err := c.Exchange(context.Background(), p, req, back.Get("code"))
	return id, u.Query(), err
}

var octocat = githubstub.User{ID: 583231, Login: "octocat", Name: "The Octocat"}

// TestGitHub_sign_in: the numeric id is the subject, the primary verified
// email the email, and the stub's checks of the secret and of the PKCE
// verifier held (it refuses the code otherwise).
func TestGitHub_sign_in(t *testing.T) {
	t.Parallel()
	stub := githubstub.Start(t, githubstub.Options{
		ClientID: gitHubClientID, ClientSecret: gitHubClientSecret, User: octocat,
		Emails: []githubstub.Email{
			{Email: "octo@old.example", Verified: true},
			{Email: "Octocat@GitHub.example", Primary: true, Verified: true},
		},
	})
	id, q, err := gitHubSignIn(t, stub, gitHubProvider(stub))
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	want := domain.ExternalIdentity{Subject: "583231", Email: "octocat@github.example", EmailVerified: true, Name: "The Octocat"}
	if id != want {
		t.Errorf("identity = %+v, want %+v", id, want)
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("scope") != "read:user user:email" || q.Get("redirect_uri") != callbackURI {
		t.Errorf("authorization URL query = %v", q)
	}
	if q.Has("nonce") {
		t.Error("GitHub was sent a nonce")
	}
}

// TestGitHub_primary_unverified: a primary email GitHub has not verified
// is no email, and no other address stands in for it; the login stands
// in for a missing name.
func TestGitHub_primary_unverified(t *testing.T) {
	t.Parallel()
	stub := githubstub.Start(t, githubstub.Options{
		ClientID: gitHubClientID, ClientSecret: gitHubClientSecret,
		User: githubstub.User{ID: 7, Login: "mona"},
		Emails: []githubstub.Email{
			{Email: "mona@example.com", Primary: true},
			{Email: "mona@other.example", Verified: true},
		},
	})
	id, _, err := gitHubSignIn(t, stub, gitHubProvider(stub))
	if err != nil {
		t.Fatal(err)
	}
	want := domain.ExternalIdentity{Subject: "7", Name: "mona"}
	if id != want {
		t.Errorf("identity = %+v, want %+v", id, want)
	}
}

// TestGitHub_enterprise: a GitHub Enterprise server's API lives under
// /api/v3.
func TestGitHub_enterprise(t *testing.T) {
	t.Parallel()
	stub := githubstub.Start(t, githubstub.Options{
		ClientID: gitHubClientID, ClientSecret: gitHubClientSecret, User: octocat,
		Emails:    []githubstub.Email{{Email: "octocat@ghe.example", Primary: true, Verified: true}},
		APIPrefix: "/api/v3",
	})
	p := gitHubProvider(stub)
	p.APIURL += "/" // as an operator may write it
	id, _, err := gitHubSignIn(t, stub, p)
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != "583231" || id.Email != "octocat@ghe.example" || !id.EmailVerified {
		t.Errorf("identity = %+v", id)
	}
}

// TestGitHub_refusals: the API refusing the token is a profile that
// could not be read, GitHub failing is unreachable, a wrong secret is a
// refused exchange.
func TestGitHub_refusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		apiStatus int
		secret    string
		want      string
	}{
		{"api_401", http.StatusUnauthorized, gitHubClientSecret, domain.RefusedInvalidProfile},
		{"api_500", http.StatusInternalServerError, gitHubClientSecret, domain.RefusedProviderUnreachable},
		{"wrong_secret", 0, "guess", domain.RefusedCodeExchange},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stub := githubstub.Start(t, githubstub.Options{
				ClientID: gitHubClientID, ClientSecret: gitHubClientSecret, User: octocat, APIStatus: tc.apiStatus,
			})
			p := gitHubProvider(stub)
			p.ClientSecret = tc.secret
			id, _, err := gitHubSignIn(t, stub, p)
			if got := domain.FederationReason(err); got != tc.want {
				t.Fatalf("reason = %q (%v), want %q", got, err, tc.want)
			}
			if id != (domain.ExternalIdentity{}) {
				t.Errorf("a refusal returned the identity %+v", id)
			}
		})
	}
}

// TestGitHub_unreachable: a GitHub nobody answers at is unreachable.
func TestGitHub_unreachable(t *testing.T) {
	t.Parallel()
	stub := githubstub.Start(t, githubstub.Options{ClientID: gitHubClientID, ClientSecret: gitHubClientSecret, User: octocat})
	p := gitHubProvider(stub)
	p.TokenURL = "http://127.0.0.1:1/login/oauth/access_token"
	_, _, err := gitHubSignIn(t, stub, p)
	if got := domain.FederationReason(err); got != domain.RefusedProviderUnreachable {
		t.Fatalf("reason = %q (%v), want %q", got, err, domain.RefusedProviderUnreachable)
	}
}
