package web

import (
	"encoding/base64"
	"net/url"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// scopeWords say what each scope reveals to an app, in the words of the
// consent page and the account's apps page.
var scopeWords = map[domain.OAuthScope]string{
	domain.ScopeOpenID:        "That you are signed in, and your user id",
	domain.ScopeProfile:       "Your name",
	domain.ScopeEmail:         "Your email address, and whether it is verified",
	domain.ScopeProfiles:      "Your roles",
	domain.ScopeOfflineAccess: "Keep access when you are not using the app",
}

// scopeTexts are the words of scopes, in the order given; a scope
// without words (none today) is shown by its name.
func scopeTexts(scopes []domain.OAuthScope) []string {
	out := make([]string, 0, len(scopes))
	for _, s := range scopes {
		if t, ok := scopeWords[s]; ok {
			out = append(out, t)
			continue
		}
		out = append(out, string(s))
	}
	return out
}

// consentData is the consent page.
type consentData struct {
	RequestID  string
	ClientName string
	Email      string
	Scopes     []string
}

func consentPage(c application.ConsentPrompt) page {
	pg := providerPage(tmplConsent, "Allow "+c.Client.Name+" to use your account?")
	pg.Data = consentData{RequestID: c.RequestID, ClientName: c.Client.Name, Email: string(c.User.Email),
		Scopes: scopeTexts(c.Scopes)}
	return pg
}

// signInForFlow is the account area's sign-in page that comes back to
// the flow id, and names its app: the name goes in the URL sealed
// (clientToken), so that nobody can make the page name another app.
func (p *Pages) signInForFlow(id, clientName string) string {
	q := url.Values{fieldNext: {continueURL(id)}}
	if tok := p.clientToken(id, clientName); tok != "" {
		q.Set(fieldClient, tok)
	}
	return accountArea.LoginPath() + "?" + q.Encode()
}

// clientNameAD binds a sealed app name to its purpose and to the one
// request it came from: a name sealed for another request does not open.
func clientNameAD(id string) []byte { return []byte("userd sign-in app name v1\x00" + id) }

// clientToken seals the app's name for the sign-in page of request id;
// "" when there is no name, or it cannot be sealed (the page then names
// no app).
func (p *Pages) clientToken(id, name string) string {
	if name == "" {
		return ""
	}
	sealed, err := p.box.Seal([]byte(name), clientNameAD(id))
	if err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(sealed)
}

// clientNameOf is the app's name that token holds for the sign-in whose
// next is the flow of a request; "" for anything else.
func (p *Pages) clientNameOf(next, token string) string {
	id, ok := continueRequest(next)
	if !ok || token == "" || len(token) > 1024 {
		return ""
	}
	sealed, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return ""
	}
	name, err := p.box.Open(sealed, clientNameAD(id))
	if err != nil {
		return ""
	}
	return string(name)
}
