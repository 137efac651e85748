package githubstub_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"golang.org/x/oauth2"

	"github.com/userd/userd/test/githubstub"
)

const redirectURI = "http://127.0.0.1:1/auth/idp/github/callback"

func start(t *testing.T) (*githubstub.Server, *oauth2.Config) {
	t.Helper()
	stub := githubstub.Start(t, githubstub.Options{
		ClientID: "app", ClientSecret: "app-secret",
		User:      githubstub.User{ID: 42, Login: "octocat", Name: "Mona"},
		Emails:    []githubstub.Email{{Email: "mona@example.com", Primary: true, Verified: true}},
		APIPrefix: "/api/v3",
	})
	return stub, &oauth2.Config{
		ClientID: "app", ClientSecret: "app-secret", RedirectURL: redirectURI,
		Endpoint: oauth2.Endpoint{AuthURL: stub.AuthURL(), TokenURL: stub.TokenURL(), AuthStyle: oauth2.AuthStyleInParams},
	}
}

// TestStub_code_flow_with_PKCE: the redirect carries the state and a code
// that, with the verifier, buys a token the API takes.
func TestStub_code_flow_with_PKCE(t *testing.T) {
	stub, cfg := start(t)
	verifier := oauth2.GenerateVerifier()
	back := stub.Approve(t, cfg.AuthCodeURL("the-state", oauth2.S256ChallengeOption(verifier)))
	if back.Get("state") != "the-state" || back.Get("code") == "" {
		t.Fatalf("redirect query = %v, want the state and a code", back)
	}
	if got := stub.States(); len(got) != 1 || got[0] != "the-state" {
		t.Errorf("States() = %v", got)
	}
	token, err := cfg.Exchange(context.Background(), back.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, stub.APIURL()+"/user", nil)
	token.SetAuthHeader(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var user struct {
		ID    int64  `json:"id"`
		Login string `json:"login"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&user); err != nil || user.ID != 42 || user.Login != "octocat" {
		t.Errorf("GET /user = %d %+v (%v)", resp.StatusCode, user, err)
	}

	// A code is good once.
	if _, err := cfg.Exchange(context.Background(), back.Get("code"), oauth2.VerifierOption(verifier)); err == nil {
		t.Error("a code redeemed twice was honoured")
	}
}

// TestStub_refusals: a wrong verifier or secret buys no token, the API
// wants a token it issued, and authorize wants the client and a redirect.
func TestStub_refusals(t *testing.T) {
	stub, cfg := start(t)
	verifier := oauth2.GenerateVerifier()

	back := stub.Approve(t, cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)))
	if _, err := cfg.Exchange(context.Background(), back.Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier())); err == nil {
		t.Error("a wrong verifier was honoured")
	}
	wrongSecret := *cfg
	wrongSecret.ClientSecret = "guess"
	back = stub.Approve(t, cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)))
	if _, err := wrongSecret.Exchange(context.Background(), back.Get("code"), oauth2.VerifierOption(verifier)); err == nil {
		t.Error("a wrong client secret was honoured")
	}

	req, _ := http.NewRequest(http.MethodGet, stub.APIURL()+"/user/emails", nil)
	req.Header.Set("Authorization", "Bearer gho_made_up")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /user/emails with a made-up token = %d, want 401", resp.StatusCode)
	}

	for name, query := range map[string]url.Values{
		"unknown client":  {"client_id": {"other"}, "redirect_uri": {redirectURI}},
		"no redirect uri": {"client_id": {"app"}},
	} {
		resp, err := http.Get(stub.AuthURL() + "?" + query.Encode())
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("%s: authorize answered %d, want a refusal", name, resp.StatusCode)
		}
	}
}
