package idpflow

import (
	"strings"
	"testing"

	"github.com/userd/userd/test/githubstub"
)

// TestGitHub_sign_in: a provider of kind github, its endpoints those of
// test/githubstub (a stand-in for GitHub's OAuth 2 and its user and
// emails API), through the agent: the first sign-in makes the account of
// the primary verified email, with GitHub's numeric user id as the
// subject; the second finds it.
func TestGitHub_sign_in(t *testing.T) {
	t.Parallel()
	u := startUserd(t)
	gh := githubstub.Start(t, githubstub.Options{ClientID: "userd-at-github", ClientSecret: clientSecret,
		User: githubstub.User{ID: 583231, Login: "octocat", Name: "Mona Octocat"},
		Emails: []githubstub.Email{
			{Email: "mona-old@example.com", Verified: false},
			{Email: "mona@example.com", Primary: true, Verified: true},
		}})
	u.addProvider(t, "github", "GitHub", "", "userd-at-github", map[string]any{
		"kind": "github", "issuer": nil, "scopes": nil,
		"authUrl": gh.AuthURL(), "tokenUrl": gh.TokenURL(), "apiUrl": gh.APIURL()})
	for i := range 2 {
		a := newAgent(t)
		auth := a.start(u, "github", "/account/")
		if !strings.HasPrefix(auth.String(), gh.AuthURL()+"?") {
			t.Fatalf("the flow went to %s, want the stand-in's authorize endpoint", auth)
		}
		back := a.authorize(auth)
		a.wantSignedIn(u, a.get(u.node.Base+back.RequestURI()), "/account/", "mona@example.com")
		made := u.userByEmail(t, "mona@example.com")
		ids := u.identities(t, made.ID, u.admin)
		if !made.EmailVerified || len(ids) != 1 || ids[0].Provider != "github" || ids[0].Subject != "583231" {
			t.Errorf("sign-in %d: the account %+v with the identities %+v, want the primary verified email and GitHub's user id", i+1, made, ids)
		}
	}
}
