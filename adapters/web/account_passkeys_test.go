package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/adapters/memory"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/softauthn"
)

// addPasskey adds a passkey of key at the passkeys page as its script
// does: the options, the authenticator's answer, the form.
func addPasskey(t *testing.T, v *visitorSession, key *softauthn.Authenticator, name string) answer {
	t.Helper()
	o := v.post("/account/passkeys/options", url.Values{"name": {name}, "currentPassword": {custPassword}})
	if o.Status != http.StatusOK || o.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("options: %d %s", o.Status, o.Body)
	}
	var options struct {
		CeremonyID string          `json:"ceremonyId"`
		PublicKey  json.RawMessage `json:"publicKey"`
	}
	if err := json.Unmarshal([]byte(o.Body), &options); err != nil || options.CeremonyID == "" {
		t.Fatalf("options %s: %v", o.Body, err)
	}
	cred, err := key.Create(options.PublicKey, softauthn.Faults{})
	if err != nil {
		t.Fatal(err)
	}
	return v.post("/account/passkeys", url.Values{"ceremonyId": {options.CeremonyID}, "credential": {string(cred)},
		"name": {name}})
}

// jsonErrorOf is the message of a script's request that failed.
func jsonErrorOf(t *testing.T, a answer) string {
	t.Helper()
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(a.Body), &body); err != nil {
		t.Fatalf("%d %s: %v", a.Status, a.Body, err)
	}
	return body.Error
}

var passkeyLink = regexp.MustCompile(`href="/account/passkeys/([0-9a-f]+)/remove"`)

func TestAccount_passkeys_add_rename_and_remove(t *testing.T) {
	t.Parallel()
	audit := memory.NewAuditLog()
	e := newEnv(t, withAccountAudit(audit))
	u := e.addUser("ada@example.com", false)
	v := e.signedInUser("ada@example.com")
	key := softauthn.New("http://localhost:8080")

	if a := v.post("/account/passkeys/options", url.Values{"name": {strings.Repeat("x", 65)}}); a.Status != http.StatusBadRequest ||
		jsonErrorOf(t, a) != "The name must be at most 64 characters." {
		t.Errorf("a long name: %d %s", a.Status, a.Body)
	}
	// A bad answer of the browser: the form again, with a message.
	bad := v.post("/account/passkeys", url.Values{"ceremonyId": {"nope"}, "credential": {"{}"}, "name": {"Laptop"}})
	wantPage(t, bad, http.StatusBadRequest, "Passkeys")
	if !strings.Contains(bad.Body, "The passkey was not accepted") || !strings.Contains(bad.Body, `value="Laptop"`) {
		t.Errorf("a refused passkey:\n%s", bad.Body)
	}

	// The page asks for the password, and the options need it (issue 24).
	page := v.get("/account/passkeys")
	if !strings.Contains(page.Body, `name="currentPassword" type="password" autocomplete="current-password"`) {
		t.Errorf("the add form has no password input:\n%s", page.Body)
	}
	if a := v.post("/account/passkeys/options", url.Values{"name": {"Laptop"}}); a.Status != http.StatusBadRequest ||
		jsonErrorOf(t, a) != "The current password must not be empty." {
		t.Errorf("no password: %d %s", a.Status, a.Body)
	}
	if a := v.post("/account/passkeys/options", url.Values{"name": {"Laptop"}, "currentPassword": {"a guess"}}); a.Status != http.StatusUnauthorized ||
		jsonErrorOf(t, a) != "The current password is not right." {
		t.Errorf("a wrong password: %d %s", a.Status, a.Body)
	}

	// A name that the finish refuses (the script asks for the options
	// with the name, so only a changed form gets here): beside the field.
	o := v.post("/account/passkeys/options", url.Values{"name": {"Laptop"}, "currentPassword": {custPassword}})
	var options struct {
		CeremonyID string          `json:"ceremonyId"`
		PublicKey  json.RawMessage `json:"publicKey"`
	}
	if err := json.Unmarshal([]byte(o.Body), &options); err != nil {
		t.Fatal(err)
	}
	cred, err := key.Create(options.PublicKey, softauthn.Faults{})
	if err != nil {
		t.Fatal(err)
	}
	badName := v.post("/account/passkeys", url.Values{"ceremonyId": {options.CeremonyID}, "credential": {string(cred)},
		"name": {"bad\u0007name"}})
	wantPage(t, badName, http.StatusBadRequest, "Passkeys")
	wantField(t, badName, "name", "The name must not contain control characters.")

	list := wantDone(t, v, addPasskey(t, v, softauthn.New("http://localhost:8080"), "Laptop"), "/account/passkeys", "passkey-added", "Passkeys",
		"The passkey is added.")
	// A new factor does not end the sessions open now: the page offers to.
	if !strings.Contains(list.Body, `id="offer-sign-out"`) || !strings.Contains(list.Body, `href="/account/sessions"`) {
		t.Errorf("no offer to sign out the other sessions:\n%s", list.Body)
	}
	if strings.Contains(v.get("/account/passkeys").Body, `id="offer-sign-out"`) {
		t.Error("the offer stays on the page")
	}
	m := passkeyLink.FindStringSubmatch(list.Body)
	if m == nil || !strings.Contains(list.Body, ">Laptop</p>") || !strings.Contains(list.Body, "<dd>Never</dd>") {
		t.Fatalf("the list:\n%s", list.Body)
	}
	if !audited(t, audit, domain.AuditPasskeyRegistered, u.ID, u.ID) {
		t.Error("no passkey.registered event")
	}
	// The passkey is a second factor now.
	if !e.user("ada@example.com").MFAEnabled {
		t.Error("the account has no second factor")
	}

	// Renaming it: a page of its own.
	id := m[1]
	form := v.get("/account/passkeys/" + id + "/rename")
	wantPage(t, form, http.StatusOK, "Rename a passkey")
	if !strings.Contains(form.Body, `action="/account/passkeys/`+id+`/rename"`) || !strings.Contains(form.Body, `value="Laptop"`) {
		t.Errorf("the rename form:\n%s", form.Body)
	}
	long := v.post("/account/passkeys/"+id+"/rename", url.Values{"name": {strings.Repeat("y", 65)}})
	wantPage(t, long, http.StatusBadRequest, "Rename a passkey")
	wantField(t, long, "name", "The name must be at most 64 characters.")
	if !strings.Contains(long.Body, `value="`+strings.Repeat("y", 65)+`"`) {
		t.Error("the name typed is not kept")
	}
	renamed := wantDone(t, v, v.post("/account/passkeys/"+id+"/rename", url.Values{"name": {"Phone"}}), "/account/passkeys",
		"passkey-renamed", "Passkeys", "The passkey is renamed.")
	if !strings.Contains(renamed.Body, ">Phone</p>") || strings.Contains(renamed.Body, ">Laptop</p>") {
		t.Errorf("the list after the rename:\n%s", renamed.Body)
	}
	if !audited(t, audit, domain.AuditPasskeyRenamed, u.ID, u.ID) {
		t.Error("no passkey.renamed event")
	}
	wantPage(t, v.get("/account/passkeys/"+strings.Repeat("0", len(id))+"/rename"), http.StatusNotFound, "")
	wantDone(t, v, v.post("/account/passkeys/"+strings.Repeat("0", len(id))+"/rename", url.Values{"name": {"X"}}),
		"/account/passkeys", "passkey-gone", "Passkeys", "That passkey was removed already.")

	// Removing it: a page that asks, whose button posts.
	ask := v.get("/account/passkeys/" + id + "/remove")
	wantPage(t, ask, http.StatusOK, "Remove a passkey")
	if !strings.Contains(ask.Body, `action="/account/passkeys/`+id+`/remove"`) || !strings.Contains(ask.Body, "Phone") {
		t.Errorf("the confirm page:\n%s", ask.Body)
	}
	if !strings.Contains(ask.Body, `name="currentPassword"`) {
		t.Errorf("the confirm page does not ask for the password:\n%s", ask.Body)
	}
	wantPage(t, v.get("/account/passkeys/"+strings.Repeat("0", len(id))+"/remove"), http.StatusNotFound, "")
	// Without the password, or with a wrong one, nothing is removed.
	noPassword := v.post("/account/passkeys/"+id+"/remove", nil)
	wantPage(t, noPassword, http.StatusBadRequest, "Remove a passkey")
	wantField(t, noPassword, "currentPassword", "The current password must not be empty.")
	wrong := v.post("/account/passkeys/"+id+"/remove", url.Values{"currentPassword": {"a guess"}})
	wantPage(t, wrong, http.StatusUnauthorized, "Remove a passkey")
	wantField(t, wrong, "currentPassword", "The current password is not right.")
	if !e.user("ada@example.com").MFAEnabled {
		t.Fatal("a refused removal removed the passkey")
	}
	proven := url.Values{"currentPassword": {custPassword}}
	wantDone(t, v, v.post("/account/passkeys/"+id+"/remove", proven), "/account/passkeys", "passkey-removed",
		"Passkeys", "The passkey is removed")
	if e.user("ada@example.com").MFAEnabled {
		t.Error("the account kept a second factor")
	}
	wantDone(t, v, v.post("/account/passkeys/"+id+"/remove", proven), "/account/passkeys", "passkey-gone",
		"Passkeys", "That passkey was removed already.")
	if !audited(t, audit, domain.AuditPasskeyRemoved, u.ID, u.ID) {
		t.Error("no passkey.removed event")
	}
}

func TestAccount_passkey_options_refusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addUser("ada@example.com", false)

	// Signed out: a JSON answer that the script shows, not a redirect.
	a := e.visitor().post("/account/passkeys/options", url.Values{"name": {"Laptop"}})
	if a.Status != http.StatusUnauthorized || !strings.Contains(jsonErrorOf(t, a), "Sign in again") {
		t.Errorf("signed out: %d %s", a.Status, a.Body)
	}
	// An account with a second factor, whose session signed in with the
	// password alone more than 10 minutes ago, must sign in again.
	v := e.signedInUser("ada@example.com")
	e.enrolTOTP("ada@example.com")
	e.clock.Advance(domain.RecentSignIn + time.Minute)
	a = v.post("/account/passkeys/options", url.Values{"name": {"Laptop"}})
	if a.Status != http.StatusForbidden || !strings.Contains(jsonErrorOf(t, a), "Sign out and in again with your second factor") {
		t.Errorf("a stale session: %d %s", a.Status, a.Body)
	}
	// From another site: refused before anything.
	if a := v.post("/account/passkeys/options", nil, withHeader("Sec-Fetch-Site", "cross-site")); a.Status != http.StatusForbidden {
		t.Errorf("cross-site: %d", a.Status)
	}
}

var signOutForm = regexp.MustCompile(`action="/account/sessions/([0-9a-f]+)/sign-out"`)

func TestAccount_sessions_sign_out_one_and_the_others(t *testing.T) {
	t.Parallel()
	audit := memory.NewAuditLog()
	e := newEnv(t, withAccountAudit(audit))
	u := e.addUser("ada@example.com", false)
	v := e.signedInUser("ada@example.com")
	other := e.signedInUser("ada@example.com")

	list := v.get("/account/sessions")
	wantPage(t, list, http.StatusOK, "Sessions")
	forms := signOutForm.FindAllStringSubmatch(list.Body, -1)
	if len(forms) != 1 || strings.Count(list.Body, "This session") != 1 {
		t.Fatalf("want one other session with a button, and this one marked:\n%s", list.Body)
	}
	wantDone(t, v, v.post("/account/sessions/"+forms[0][1]+"/sign-out", nil), "/account/sessions", "session-ended",
		"Sessions", "That session is signed out.")
	wantRedirect(t, other.get("/account/"), "/account/login")
	wantPage(t, v.get("/account/"), http.StatusOK, "My account")
	if !audited(t, audit, domain.AuditSessionRevoked, u.ID, u.ID) {
		t.Error("no session.revoked event")
	}
	wantDone(t, v, v.post("/account/sessions/"+forms[0][1]+"/sign-out", nil), "/account/sessions", "session-gone",
		"Sessions", "That session had ended already.")
	wantPage(t, v.post("/account/sessions/nope/sign-out", nil), http.StatusNotFound, "")

	// Everywhere else: only once the box is ticked; this session lives on.
	third, fourth := e.signedInUser("ada@example.com"), e.signedInUser("ada@example.com")
	unticked := v.post("/account/sessions/sign-out-others", nil)
	wantPage(t, unticked, http.StatusBadRequest, "Sessions")
	wantField(t, unticked, "understood", "The box must be ticked")
	if n := e.activeSessions("ada@example.com"); n != 3 {
		t.Fatalf("%d sessions after an unticked form", n)
	}
	wantDone(t, v, v.post("/account/sessions/sign-out-others", url.Values{"understood": {"yes"}}), "/account/sessions",
		"others-ended", "Sessions", "Every other session is signed out.")
	wantRedirect(t, third.get("/account/"), "/account/login")
	wantRedirect(t, fourth.get("/account/"), "/account/login")
	if n := e.activeSessions("ada@example.com"); n != 1 {
		t.Errorf("%d sessions left, want this one", n)
	}
	wantPage(t, v.get("/account/sessions"), http.StatusOK, "Sessions")
}
