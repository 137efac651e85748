// Package pagesflow drives the admin console and the account page end to
// end, as people use them: the real userd binary (test/userdproc) with
// its SQLite database, on http://localhost, and a real headless Chromium
// (test/chromium) that types, clicks and presses keys. TOTP codes come
// from the test's own RFC 6238 generator, the enrolment's QR code is read
// back by ZBar's zbarimg, and passkeys are made by Chromium's virtual
// authenticator. Every page it meets passes the browser kit's CheckPage:
// axe-core finds no WCAG 2.1 A or AA violation, light and dark, desktop
// and phone, nothing overflows a 375 px screen, and the screenshots in
// docs/img are taken (USERD_UPDATE_SCREENSHOTS=1 rewrites them). What
// the pages did is checked through the API.
package pagesflow

import (
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/userd/userd/test/kit"
	"github.com/userd/userd/test/totpgen"
	"github.com/userd/userd/test/userdproc"
)

// userdBinary is the userd binary built once for the package.
var userdBinary string

func TestMain(m *testing.M) { os.Exit(userdproc.RunTests(m, "userd-pagesflow-", &userdBinary)) }

const (
	adminEmail    = "root@example.com"
	adminPassword = "console-Admin-Passphrase-3"
	userPassword  = "account-Page-Passphrase-5"
)

// server is a running userd and the origin the browser reaches it at.
type server struct {
	node   *userdproc.Node
	origin string
}

// startUserd starts the binary on http://localhost:<a free port>, the
// origin of its pages and of its passkeys (rp id localhost), with a
// bootstrap admin, a scratch SQLite database and cheap password hashing.
func startUserd(t *testing.T, extra ...map[string]string) server {
	t.Helper()
	n, origin := userdproc.StartScratch(t, userdBinary, "localhost", adminEmail, adminPassword, extra...)
	return server{node: n, origin: origin}
}

// api makes a request to the API with a JSON body (nil for none) and an
// optional bearer token.
func (s server) api(t *testing.T, method, path string, body any, token string) kit.Reply {
	t.Helper()
	return kit.Send(t, method, s.node.Base+path, body, token)
}

// login signs in through the API and returns the tokens.
func (s server) login(t *testing.T, email, password string) kit.Tokens {
	t.Helper()
	return kit.Login(t, s.node.Base, email, password)
}

// register creates a customer through open registration and returns its id.
func (s server) register(t *testing.T, name, email string) string {
	t.Helper()
	return kit.Register(t, s.node.Base, name, email, userPassword).ID
}

// totpFactor is a confirmed TOTP factor: its secret, and when the code
// that confirmed it was made.
type totpFactor struct {
	secret      string
	confirmedAt time.Time
}

// nextCode is a code that the factor has not used: that of the time step
// after the confirmation's, which userd accepts (±1 step) from the
// confirmation until a minute after it.
func (f totpFactor) nextCode(t *testing.T) string {
	t.Helper()
	return totpgen.MustCode(t, f.secret, f.confirmedAt.Add(30*time.Second))
}

// enrolTOTP gives the account a TOTP factor through the API.
func (s server) enrolTOTP(t *testing.T, email, password string) totpFactor {
	t.Helper()
	tok := s.login(t, email, password)
	var enrol struct {
		Secret string `json:"secret"`
	}
	kit.Want(t, "begin TOTP", s.api(t, http.MethodPost, "/api/users/me/mfa/totp",
		map[string]string{"currentPassword": password}, tok.AccessToken), http.StatusCreated, &enrol)
	now := time.Now()
	kit.Want(t, "confirm TOTP", s.api(t, http.MethodPost, "/api/users/me/mfa/totp/confirm",
		map[string]string{"code": totpgen.MustCode(t, enrol.Secret, now)}, tok.AccessToken), http.StatusOK, nil)
	return totpFactor{secret: enrol.Secret, confirmedAt: now}
}
