package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/oauth2"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// gitHubAPIVersion is the version of GitHub's REST API the adapter reads.
const gitHubAPIVersion = "2022-11-28"

// gitHubConfig is the OAuth 2 client of p at GitHub (or a GitHub
// Enterprise server). The client authenticates in the form, which GitHub
// has always taken.
func gitHubConfig(p domain.IdentityProvider, redirectURI string) *oauth2.Config {
	scopes := p.Scopes
	if len(scopes) == 0 {
		scopes = domain.DefaultGitHubProviderScopes
	}
	return &oauth2.Config{
		ClientID:     p.ClientID,
		ClientSecret: p.ClientSecret,
		Endpoint: oauth2.Endpoint{
			AuthURL:   orDefault(p.AuthURL, domain.GitHubAuthURL),
			TokenURL:  orDefault(p.TokenURL, domain.GitHubTokenURL),
			AuthStyle: oauth2.AuthStyleInParams,
		},
		RedirectURL: redirectURI,
		Scopes:      scopes,
	}
}

// orDefault is s, or github.com's def when the provider leaves it empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// gitHubAuthCodeURL is GitHub's authorization URL for the flow req. GitHub
// takes PKCE S256 and ignores a nonce, so none is sent.
func (c *Client) gitHubAuthCodeURL(p domain.IdentityProvider, req ports.FederationRequest) string {
	return gitHubConfig(p, req.RedirectURI).AuthCodeURL(req.State, oauth2.S256ChallengeOption(req.CodeVerifier))
}

// gitHubUser is the part of GET /user that makes an identity.
type gitHubUser struct {
	ID    int64  `json:"id"`
	Login string `json:"login"`
	Name  string `json:"name"`
}

// gitHubEmail is one entry of GET /user/emails.
type gitHubEmail struct {
	Email    string `json:"email"`
	Primary  bool   `json:"primary"`
	Verified bool   `json:"verified"`
}

func (c *Client) gitHubExchange(ctx context.Context, p domain.IdentityProvider, req ports.FederationRequest, code string) (domain.ExternalIdentity, error) {
	ctx = context.WithValue(ctx, oauth2.HTTPClient, c.http)
	token, err := gitHubConfig(p, req.RedirectURI).Exchange(ctx, code, oauth2.VerifierOption(req.CodeVerifier))
	if err != nil {
		return domain.ExternalIdentity{}, c.refuse(ctx, p, exchangeReason(err), exchangeError(err))
	}

	var user gitHubUser
	if err := c.gitHubGet(ctx, p, token.AccessToken, "/user", &user); err != nil {
		return domain.ExternalIdentity{}, c.refuse(ctx, p, profileReason(err), err)
	}
	if user.ID <= 0 {
		return domain.ExternalIdentity{}, c.refuse(ctx, p, domain.RefusedInvalidProfile, errors.New("github /user: no id"))
	}
	var emails []gitHubEmail
	if err := c.gitHubGet(ctx, p, token.AccessToken, "/user/emails", &emails); err != nil {
		return domain.ExternalIdentity{}, c.refuse(ctx, p, profileReason(err), err)
	}

	id := domain.ExternalIdentity{Subject: strconv.FormatInt(user.ID, 10), Name: user.Name}
	if id.Name == "" {
		id.Name = user.Login
	}
	// Only the primary address, and only when GitHub verified it: a
	// secondary one may be anyone's typing, and an unverified primary
	// vouches for nothing.
	for _, e := range emails {
		if !e.Primary || !e.Verified {
			continue
		}
		if email, msg := domain.ParseEmail(e.Email); msg == "" {
			id.Email, id.EmailVerified = email, true
		}
		break
	}
	return id, nil
}

// gitHubGet reads the API's path (under p.APIURL, which a GitHub
// Enterprise server prefixes with /api/v3) into v.
func (c *Client) gitHubGet(ctx context.Context, p domain.IdentityProvider, accessToken, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(orDefault(p.APIURL, domain.GitHubAPIURL), "/")+path, nil)
	if err != nil {
		return fmt.Errorf("github %s: %w", path, err)
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", gitHubAPIVersion)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("github %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &answerError{what: "github " + path, status: resp.StatusCode}
	}
	// The transport bounds the body (maxBodyBytes).
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("github %s: %w", path, err)
	}
	return nil
}
