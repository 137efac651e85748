package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/softauthn"
)

// passkeyOptionsBody is the answer that begins a ceremony.
type passkeyOptionsBody struct {
	CeremonyID string          `json:"ceremonyId"`
	PublicKey  json.RawMessage `json:"publicKey"`
}

// passkeyBody is a passkey of the list. LastUsedAt is a pointer so that
// null and absent differ only in the raw body, checked where it matters.
type passkeyBody struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	CreatedAt  string  `json:"createdAt"`
	LastUsedAt *string `json:"lastUsedAt"`
}

var passkeyIDPattern = regexp.MustCompile(`^[0-9a-f]{24}$`)

// beginPasskeyRegistration begins a registration for a customer, proven
// by the customers' password.
func (s *testServer) beginPasskeyRegistration(token string) passkeyOptionsBody {
	s.t.Helper()
	var o passkeyOptionsBody
	wantJSON(s.t, s.do("POST", "/api/users/me/passkeys/registration", currentPassword(custPassword), withToken(token)),
		http.StatusOK, &o)
	return o
}

// currentPassword is the body {"currentPassword": password}.
func currentPassword(password string) map[string]string {
	return map[string]string{"currentPassword": password}
}

// finishPasskeyRegistration sends the authenticator's answer to o.
func (s *testServer) finishPasskeyRegistration(token string, o passkeyOptionsBody, a *softauthn.Authenticator,
	f softauthn.Faults, name string) response {
	s.t.Helper()
	cred, err := a.Create(o.PublicKey, f)
	if err != nil {
		s.t.Fatalf("authenticator: %v", err)
	}
	body := map[string]any{"ceremonyId": o.CeremonyID, "credential": cred}
	if name != "" {
		body["name"] = name
	}
	return s.do("POST", "/api/users/me/passkeys/registration/finish", body, withToken(token))
}

// addPasskey registers a passkey of a for the holder of token.
func (s *testServer) addPasskey(token string, a *softauthn.Authenticator, name string) passkeyBody {
	s.t.Helper()
	var p passkeyBody
	wantJSON(s.t, s.finishPasskeyRegistration(token, s.beginPasskeyRegistration(token), a, softauthn.Faults{}, name),
		http.StatusCreated, &p)
	return p
}

// beginPasskeyLogin begins a passkey login: discoverable without mfaToken.
func (s *testServer) beginPasskeyLogin(mfaToken string) passkeyOptionsBody {
	s.t.Helper()
	var body any
	if mfaToken != "" {
		body = map[string]string{"mfaToken": mfaToken}
	}
	var o passkeyOptionsBody
	wantJSON(s.t, s.do("POST", "/auth/passkey", body), http.StatusOK, &o)
	return o
}

// assertion is the authenticator's answer to the options of o.
func assertion(t *testing.T, o passkeyOptionsBody, a *softauthn.Authenticator, f softauthn.Faults) json.RawMessage {
	t.Helper()
	cred, err := a.Get(o.PublicKey, f)
	if err != nil {
		t.Fatalf("authenticator: %v", err)
	}
	return cred
}

func (s *testServer) finishPasskeyLogin(ceremonyID string, cred json.RawMessage, mfaToken string) response {
	s.t.Helper()
	body := map[string]any{"ceremonyId": ceremonyID, "credential": cred}
	if mfaToken != "" {
		body["mfaToken"] = mfaToken
	}
	return s.do("POST", "/auth/passkey/finish", body)
}

// passkeyLogin runs a whole discoverable login.
func (s *testServer) passkeyLogin(a *softauthn.Authenticator, f softauthn.Faults) response {
	s.t.Helper()
	o := s.beginPasskeyLogin("")
	return s.finishPasskeyLogin(o.CeremonyID, assertion(s.t, o, a, f), "")
}

func (s *testServer) passkeys(token string) []passkeyBody {
	s.t.Helper()
	var ps []passkeyBody
	wantJSON(s.t, s.do("GET", "/api/users/me/passkeys", nil, withToken(token)), http.StatusOK, &ps)
	return ps
}

// passkeyCustomer registers a customer with one passkey.
func (s *testServer) passkeyCustomer(name, email string) (userBody, tokenBody, *softauthn.Authenticator, passkeyBody) {
	s.t.Helper()
	u, tb := s.customer(name, email)
	a := softauthn.New(testOrigin)
	return u, tb, a, s.addPasskey(tb.AccessToken, a, "")
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func TestPasskeys_registration_and_discoverable_login(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, tb := s.customer("Ada", "ada@example.com")
	tok := tb.AccessToken
	if ps := s.passkeys(tok); len(ps) != 0 {
		t.Fatalf("passkeys before: %+v", ps)
	}

	// No body and no Content-Type, as the contract allows; {} too.
	o := s.beginPasskeyRegistration(tok)
	var creation struct {
		RP struct {
			ID string `json:"id"`
		} `json:"rp"`
		Challenge              string `json:"challenge"`
		AuthenticatorSelection struct {
			ResidentKey      string `json:"residentKey"`
			UserVerification string `json:"userVerification"`
		} `json:"authenticatorSelection"`
	}
	if err := json.Unmarshal(o.PublicKey, &creation); err != nil {
		t.Fatal(err)
	}
	if creation.AuthenticatorSelection.ResidentKey != "required" || creation.AuthenticatorSelection.UserVerification != "preferred" ||
		creation.RP.ID != "localhost" || len(creation.Challenge) < 22 || len(o.CeremonyID) < 22 {
		t.Errorf("creation options %s, ceremony %q", o.PublicKey, o.CeremonyID)
	}
	// The token alone adds no passkey (issue 24): the current password
	// is asked for, and a wrong one counts as a login's would.
	for _, body := range []any{"{}", "", nil, currentPassword("")} {
		opts := []reqOption{withToken(tok)}
		if body == "" || body == nil {
			opts = append(opts, withoutHeader("Content-Type"))
		}
		p := wantProblem(t, s.do("POST", "/api/users/me/passkeys/registration", body, opts...),
			http.StatusBadRequest, "validation_failed")
		if !slices.Equal(p.Fields(), []string{"currentPassword"}) {
			t.Errorf("body %v: fields %q, want currentPassword", body, p.Fields())
		}
	}
	wantProblem(t, s.do("POST", "/api/users/me/passkeys/registration", currentPassword("a guess"), withToken(tok)),
		http.StatusUnauthorized, "invalid_credentials")
	wantProblem(t, s.do("POST", "/api/users/me/passkeys/registration", nil), http.StatusUnauthorized, "unauthorized")

	a := softauthn.New(testOrigin)
	res := s.finishPasskeyRegistration(tok, o, a, softauthn.Faults{}, "Laptop")
	var p passkeyBody
	wantJSON(t, res, http.StatusCreated, &p)
	if !passkeyIDPattern.MatchString(p.ID) || p.Name != "Laptop" || p.LastUsedAt != nil {
		t.Errorf("passkey %s", res.Body)
	}
	if created, err := time.Parse(time.RFC3339, p.CreatedAt); err != nil || !created.Equal(s.now()) {
		t.Errorf("createdAt %q, want %s", p.CreatedAt, s.now())
	}
	if !bytes.Contains(res.Body, []byte(`"lastUsedAt":null`)) {
		t.Errorf("lastUsedAt is not null: %s", res.Body)
	}
	if ps := s.passkeys(tok); !slices.Equal(ps, []passkeyBody{p}) {
		t.Errorf("list %+v, want %+v", ps, p)
	}
	if got := s.mfaSummary(tok); got != (mfaSummaryBody{Passkeys: 1}) {
		t.Errorf("summary %+v", got)
	}
	if !s.me(tok).MFAEnabled {
		t.Error("mfaEnabled false with a passkey")
	}
	// The authenticator holds it now: the next registration excludes it.
	if _, err := a.Create(s.beginPasskeyRegistration(tok).PublicKey, softauthn.Faults{}); err == nil {
		t.Error("the registration options do not exclude the registered passkey")
	}

	// A discoverable login: no body, no allowCredentials.
	s.clock.Advance(time.Minute)
	lo := s.beginPasskeyLogin("")
	var request map[string]any
	if err := json.Unmarshal(lo.PublicKey, &request); err != nil {
		t.Fatal(err)
	}
	if _, ok := request["allowCredentials"]; ok || request["rpId"] != "localhost" {
		t.Errorf("request options %s", lo.PublicKey)
	}
	var login tokenBody
	wantJSON(t, s.finishPasskeyLogin(lo.CeremonyID, assertion(t, lo, a, softauthn.Faults{}), ""), http.StatusOK, &login)
	if login.User.ID != tb.User.ID {
		t.Errorf("signed in as %s, want %s", login.User.ID, tb.User.ID)
	}
	c := wantSession(t, login.AccessToken, amrPasskeyVerified, "aal2")
	if *c.AuthTime != s.now().Unix() {
		t.Errorf("auth_time %d", *c.AuthTime)
	}
	ps := s.passkeys(tok)
	if len(ps) != 1 || ps[0].LastUsedAt == nil || *ps[0].LastUsedAt != s.now().Format(time.RFC3339) {
		t.Errorf("lastUsedAt after a login: %+v", ps)
	}

	// Without user verification the passkey is one factor.
	var weak tokenBody
	wantJSON(t, s.passkeyLogin(a, softauthn.Faults{NoUserVerification: true}), http.StatusOK, &weak)
	wantSession(t, weak.AccessToken, amrPasskey, "aal1")
}

func TestPasskeys_second_factor_after_a_password(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, _, a, _ := s.passkeyCustomer("Ada", "ada@example.com")

	ch := s.mfaRequired("ada@example.com", custPassword)
	if !slices.Equal(ch.MFAMethods, []string{"passkey"}) {
		t.Errorf("mfaMethods %q", ch.MFAMethods)
	}
	o := s.beginPasskeyLogin(ch.MFAToken)
	var request struct {
		AllowCredentials []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		} `json:"allowCredentials"`
	}
	if err := json.Unmarshal(o.PublicKey, &request); err != nil {
		t.Fatal(err)
	}
	want := b64url(a.Credentials()[0].ID)
	if len(request.AllowCredentials) != 1 || request.AllowCredentials[0].ID != want || request.AllowCredentials[0].Type != "public-key" {
		t.Errorf("allowCredentials %+v, want the one credential %s", request.AllowCredentials, want)
	}
	// The mfaToken of this ceremony is required to finish it.
	cred := assertion(t, o, a, softauthn.Faults{})
	var tb tokenBody
	wantJSON(t, s.finishPasskeyLogin(o.CeremonyID, cred, ch.MFAToken), http.StatusOK, &tb)
	wantSession(t, tb.AccessToken, amrPasswordPasskey, "aal2")
	// The mfaToken is spent.
	wantProblem(t, s.do("POST", "/auth/passkey", map[string]string{"mfaToken": ch.MFAToken}),
		http.StatusUnauthorized, "invalid_mfa_token")

	// A ceremony of the second step cannot finish a discoverable login.
	ch = s.mfaRequired("ada@example.com", custPassword)
	o = s.beginPasskeyLogin(ch.MFAToken)
	wantProblem(t, s.finishPasskeyLogin(o.CeremonyID, assertion(t, o, a, softauthn.Faults{}), ""),
		http.StatusUnauthorized, "invalid_passkey")

	// With TOTP as well, every method is offered.
	_, tb2 := s.customer("Bob", "bob@example.com")
	s.addPasskey(tb2.AccessToken, softauthn.New(testOrigin), "")
	s.enrolTOTP(tb2.AccessToken)
	if got := s.mfaRequired("bob@example.com", custPassword).MFAMethods; !slices.Equal(got, []string{"totp", "recovery_code", "passkey"}) {
		t.Errorf("mfaMethods %q", got)
	}
}

func TestPasskeys_refused_assertions(t *testing.T) {
	t.Parallel()
	zero := uint32(0)
	for _, tt := range []struct {
		name string
		// run returns the refused answer, given a customer's passkey
		// and its authenticator.
		run func(t *testing.T, s *testServer, a *softauthn.Authenticator) response
	}{
		{"wrong_origin", func(_ *testing.T, s *testServer, a *softauthn.Authenticator) response {
			return s.passkeyLogin(a, softauthn.Faults{Origin: "https://evil.example"})
		}},
		{"wrong_rp_id", func(_ *testing.T, s *testServer, a *softauthn.Authenticator) response {
			return s.passkeyLogin(a, softauthn.Faults{RPID: "example.com"})
		}},
		{"bad_signature", func(_ *testing.T, s *testServer, a *softauthn.Authenticator) response {
			return s.passkeyLogin(a, softauthn.Faults{BadSignature: true})
		}},
		{"challenge_of_another_ceremony", func(t *testing.T, s *testServer, a *softauthn.Authenticator) response {
			first, second := s.beginPasskeyLogin(""), s.beginPasskeyLogin("")
			return s.finishPasskeyLogin(second.CeremonyID, assertion(t, first, a, softauthn.Faults{}), "")
		}},
		{"wrong_challenge", func(_ *testing.T, s *testServer, a *softauthn.Authenticator) response {
			return s.passkeyLogin(a, softauthn.Faults{Challenge: []byte("a challenge the server never gave")})
		}},
		{"ceremony_finished_twice", func(t *testing.T, s *testServer, a *softauthn.Authenticator) response {
			o := s.beginPasskeyLogin("")
			cred := assertion(t, o, a, softauthn.Faults{})
			wantJSON(t, s.finishPasskeyLogin(o.CeremonyID, cred, ""), http.StatusOK, nil)
			return s.finishPasskeyLogin(o.CeremonyID, cred, "")
		}},
		{"counter_going_backwards", func(t *testing.T, s *testServer, a *softauthn.Authenticator) response {
			wantJSON(t, s.passkeyLogin(a, softauthn.Faults{}), http.StatusOK, nil) // counter 1
			return s.passkeyLogin(a, softauthn.Faults{Counter: &zero})
		}},
		{"counter_standing_still", func(t *testing.T, s *testServer, a *softauthn.Authenticator) response {
			wantJSON(t, s.passkeyLogin(a, softauthn.Faults{}), http.StatusOK, nil) // counter 1
			one := uint32(1)
			return s.passkeyLogin(a, softauthn.Faults{Counter: &one})
		}},
		{"unknown_credential", func(t *testing.T, s *testServer, a *softauthn.Authenticator) response {
			// A passkey the same authenticator made for this site in a
			// registration that was never finished.
			_, other := s.customer("Eve", "eve@example.com")
			if _, err := a.Create(s.beginPasskeyRegistration(other.AccessToken).PublicKey, softauthn.Faults{}); err != nil {
				t.Fatal(err)
			}
			return s.passkeyLogin(a, softauthn.Faults{Credential: a.Credentials()[1].ID})
		}},
		{"no_user_handle_in_a_discoverable_login", func(_ *testing.T, s *testServer, a *softauthn.Authenticator) response {
			return s.passkeyLogin(a, softauthn.Faults{NoUserHandle: true})
		}},
		{"unknown_ceremony", func(t *testing.T, s *testServer, a *softauthn.Authenticator) response {
			o := s.beginPasskeyLogin("")
			return s.finishPasskeyLogin(b64url(make([]byte, 32)), assertion(t, o, a, softauthn.Faults{}), "")
		}},
		{"expired_ceremony", func(t *testing.T, s *testServer, a *softauthn.Authenticator) response {
			// The store compares the ceremony's expiry with the
			// server's clock, which the test moves. The library also
			// checks the session's expiry, but against the real clock
			// (time.Now); it does not get the chance here, and the
			// store's check is the one that holds across nodes.
			o := s.beginPasskeyLogin("")
			cred := assertion(t, o, a, softauthn.Faults{})
			s.clock.Advance(5*time.Minute + time.Second)
			return s.finishPasskeyLogin(o.CeremonyID, cred, "")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTestServer(t)
			_, tb, a, _ := s.passkeyCustomer("Ada", "ada@example.com")
			wantProblem(t, tt.run(t, s, a), http.StatusUnauthorized, "invalid_passkey")
			// Nothing of it spoilt the passkey: an honest login works
			// (with a counter past any sent above: the authenticator
			// takes up whatever counter a fault made it send).
			var again tokenBody
			next := uint32(100)
			wantJSON(t, s.passkeyLogin(a, softauthn.Faults{Credential: a.Credentials()[0].ID, Counter: &next}), http.StatusOK, &again)
			if again.User.ID != tb.User.ID {
				t.Errorf("signed in as %s", again.User.ID)
			}
		})
	}
}

func TestPasskeys_refused_registrations(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		faults softauthn.Faults
	}{
		{"wrong_origin", softauthn.Faults{Origin: "https://evil.example"}},
		{"wrong_rp_id", softauthn.Faults{RPID: "example.com"}},
		{"wrong_challenge", softauthn.Faults{Challenge: []byte("a challenge the server never gave")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newTestServer(t)
			_, tb := s.customer("Ada", "ada@example.com")
			res := s.finishPasskeyRegistration(tb.AccessToken, s.beginPasskeyRegistration(tb.AccessToken), softauthn.New(testOrigin), tt.faults, "")
			wantProblem(t, res, http.StatusUnauthorized, "invalid_passkey")
			if ps := s.passkeys(tb.AccessToken); len(ps) != 0 || s.me(tb.AccessToken).MFAEnabled {
				t.Errorf("a refused registration stored %+v", ps)
			}
		})
	}

	t.Run("ceremony_of_another_user", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t)
		_, ada := s.customer("Ada", "ada@example.com")
		_, bob := s.customer("Bob", "bob@example.com")
		o := s.beginPasskeyRegistration(ada.AccessToken)
		wantProblem(t, s.finishPasskeyRegistration(bob.AccessToken, o, softauthn.New(testOrigin), softauthn.Faults{}, ""),
			http.StatusUnauthorized, "invalid_passkey")
	})
	t.Run("ceremony_finished_twice", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t)
		_, ada := s.customer("Ada", "ada@example.com")
		o := s.beginPasskeyRegistration(ada.AccessToken)
		wantJSON(t, s.finishPasskeyRegistration(ada.AccessToken, o, softauthn.New(testOrigin), softauthn.Faults{}, ""),
			http.StatusCreated, nil)
		wantProblem(t, s.finishPasskeyRegistration(ada.AccessToken, o, softauthn.New(testOrigin), softauthn.Faults{}, ""),
			http.StatusUnauthorized, "invalid_passkey")
	})
	t.Run("expired_ceremony", func(t *testing.T) {
		t.Parallel()
		s := newTestServer(t)
		_, ada := s.customer("Ada", "ada@example.com")
		o := s.beginPasskeyRegistration(ada.AccessToken)
		s.clock.Advance(5*time.Minute + time.Second)
		wantProblem(t, s.finishPasskeyRegistration(ada.AccessToken, o, softauthn.New(testOrigin), softauthn.Faults{}, ""),
			http.StatusUnauthorized, "invalid_passkey")
	})
}

func TestPasskeys_malformed_finish_requests(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, tb := s.customer("Ada", "ada@example.com")
	tok := tb.AccessToken

	for _, tt := range []struct {
		name   string
		cred   any // nil leaves credential out
		noID   bool
		fields []string
	}{
		{"credential_a_string", "x", false, []string{"credential"}},
		{"credential_an_array", []any{}, false, []string{"credential"}},
		{"credential_id_a_number", map[string]any{"id": 1}, false, []string{"credential"}},
		{"credential_empty_object", map[string]any{}, false, []string{"credential"}},
		{"credential_missing", nil, false, []string{"credential"}},
		{"ceremony_id_missing", map[string]any{}, true, []string{"ceremonyId"}},
	} {
		t.Run("registration_"+tt.name, func(t *testing.T) {
			body := map[string]any{}
			if !tt.noID {
				body["ceremonyId"] = s.beginPasskeyRegistration(tok).CeremonyID
			}
			if tt.cred != nil {
				body["credential"] = tt.cred
			}
			p := wantProblem(t, s.do("POST", "/api/users/me/passkeys/registration/finish", body, withToken(tok)),
				http.StatusBadRequest, "validation_failed")
			if !slices.Equal(p.Fields(), tt.fields) {
				t.Errorf("fields %q, want %q", p.Fields(), tt.fields)
			}
		})
		t.Run("login_"+tt.name, func(t *testing.T) {
			body := map[string]any{}
			if !tt.noID {
				body["ceremonyId"] = s.beginPasskeyLogin("").CeremonyID
			}
			if tt.cred != nil {
				body["credential"] = tt.cred
			}
			p := wantProblem(t, s.do("POST", "/auth/passkey/finish", body), http.StatusBadRequest, "validation_failed")
			if !slices.Equal(p.Fields(), tt.fields) {
				t.Errorf("fields %q, want %q", p.Fields(), tt.fields)
			}
		})
	}
	wantProblem(t, s.do("POST", "/api/users/me/passkeys/registration/finish", map[string]any{
		"ceremonyId": s.beginPasskeyRegistration(tok).CeremonyID, "credential": map[string]any{}, "name": ""}, withToken(tok)),
		http.StatusBadRequest, "validation_failed")
	wantProblem(t, s.do("POST", "/auth/passkey", map[string]string{"mfaToken": "not a token"}),
		http.StatusUnauthorized, "invalid_mfa_token")
	wantProblem(t, s.do("POST", "/auth/passkey", `{"other":1}`), http.StatusBadRequest, "unknown_field")
}

func TestPasskeys_delete(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, ada, a, first := s.passkeyCustomer("Ada", "ada@example.com")
	second := s.addPasskey(ada.AccessToken, softauthn.New(testOrigin), "Phone")
	_, _, _, bobs := s.passkeyCustomer("Bob", "bob@example.com")

	for _, tt := range []struct {
		name   string
		id     string
		token  string
		status int
		code   string
		body   any
	}{
		{"anonymous", first.ID, "", http.StatusUnauthorized, "unauthorized", nil},
		{"bad_id", "not-an-id", ada.AccessToken, http.StatusBadRequest, "invalid_id", nil},
		{"upper_case_id", "ABCDEF0123456789ABCDEF01", ada.AccessToken, http.StatusBadRequest, "invalid_id", nil},
		// The token alone removes nothing (issue 24): its session signed
		// in with a password only.
		{"no_password", first.ID, ada.AccessToken, http.StatusBadRequest, "validation_failed", nil},
		{"empty_body", first.ID, ada.AccessToken, http.StatusBadRequest, "validation_failed", "{}"},
		{"wrong_password", first.ID, ada.AccessToken, http.StatusUnauthorized, "invalid_credentials", currentPassword("a guess")},
		{"other_users_passkey", bobs.ID, ada.AccessToken, http.StatusNotFound, "not_found", currentPassword(custPassword)},
		{"missing_passkey", missingID, ada.AccessToken, http.StatusNotFound, "not_found", currentPassword(custPassword)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var opts []reqOption
			if tt.token != "" {
				opts = append(opts, withToken(tt.token))
			}
			wantProblem(t, s.do("DELETE", "/api/users/me/passkeys/"+tt.id, tt.body, opts...), tt.status, tt.code)
		})
	}
	if ps := s.passkeys(ada.AccessToken); len(ps) != 2 {
		t.Fatalf("refused deletes removed a passkey: %+v", ps)
	}

	wantNoContent(t, s.do("DELETE", "/api/users/me/passkeys/"+first.ID, currentPassword(custPassword), withToken(ada.AccessToken)))
	if ps := s.passkeys(ada.AccessToken); len(ps) != 1 || ps[0].ID != second.ID {
		t.Errorf("list after a delete: %+v", ps)
	}
	if !s.me(ada.AccessToken).MFAEnabled {
		t.Error("mfaEnabled false with a passkey left")
	}
	// The removed passkey signs in no more.
	wantProblem(t, s.passkeyLogin(a, softauthn.Faults{}), http.StatusUnauthorized, "invalid_passkey")

	wantNoContent(t, s.do("DELETE", "/api/users/me/passkeys/"+second.ID, currentPassword(custPassword), withToken(ada.AccessToken)))
	if s.me(ada.AccessToken).MFAEnabled {
		t.Error("mfaEnabled true without a factor")
	}
	if got := s.mfaSummary(ada.AccessToken); got != (mfaSummaryBody{}) {
		t.Errorf("summary %+v", got)
	}
	s.login("ada@example.com", custPassword) // one step again
	wantProblem(t, s.do("DELETE", "/api/users/me/passkeys/"+second.ID, currentPassword(custPassword), withToken(ada.AccessToken)),
		http.StatusNotFound, "not_found")
}

// TestPasskeys_delete_by_a_second_factor_session: a session that signed
// in with a second factor removes a passkey with {} (issue 24); one that
// signed in with a password alone and is no longer recent may not, even
// with the password.
func TestPasskeys_delete_by_a_second_factor_session(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, ada, a, first := s.passkeyCustomer("Ada", "ada@example.com")
	second := s.addPasskey(ada.AccessToken, softauthn.New(testOrigin), "Phone")
	s.clock.Advance(domain.RecentSignIn + time.Second)
	old := s.refreshOK(ada.RefreshToken)
	wantProblem(t, s.do("DELETE", "/api/users/me/passkeys/"+first.ID, currentPassword(custPassword), withToken(old.AccessToken)),
		http.StatusForbidden, "recent_sign_in_required")
	var strong tokenBody
	wantJSON(t, s.passkeyLogin(a, softauthn.Faults{}), http.StatusOK, &strong)
	wantSession(t, strong.AccessToken, []string{"hwk", "user"}, "aal2")
	wantNoContent(t, s.do("DELETE", "/api/users/me/passkeys/"+first.ID, "{}", withToken(strong.AccessToken)))
	wantNoContent(t, s.do("DELETE", "/api/users/me/passkeys/"+second.ID, nil, withToken(strong.AccessToken),
		withoutHeader("Content-Type")))
}

func TestPasskeys_registration_needs_a_recent_or_strong_sign_in(t *testing.T) {
	t.Parallel()
	s := newTestServer(t)
	_, tb := s.customer("Ada", "ada@example.com")
	secret, _ := s.enrolTOTP(tb.AccessToken)

	// A single-factor session of 30 s ago may still add a passkey, with
	// the password.
	s.beginPasskeyRegistration(tb.AccessToken)

	// Ten minutes on, refreshed: a new access token of the old session.
	s.clock.Advance(10*time.Minute + time.Second)
	old := s.refreshOK(tb.RefreshToken)
	c := wantSession(t, old.AccessToken, amrPassword, "aal1")
	if *c.AuthTime != s.now().Add(-10*time.Minute-31*time.Second).Unix() {
		t.Errorf("auth_time %d moved on refresh", *c.AuthTime)
	}
	wantProblem(t, s.do("POST", "/api/users/me/passkeys/registration", currentPassword(custPassword), withToken(old.AccessToken)),
		http.StatusForbidden, "recent_sign_in_required")

	// A session that signed in with the second factor may, however old.
	strong := s.loginTOTP("ada@example.com", secret)
	s.clock.Advance(11 * time.Minute)
	strong = s.refreshOK(strong.RefreshToken)
	s.addPasskey(strong.AccessToken, softauthn.New(testOrigin), "")
}
