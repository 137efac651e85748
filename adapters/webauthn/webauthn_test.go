package webauthn_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/userd/userd/adapters/webauthn"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/softauthn"
)

const (
	rpID   = "login.example.test"
	origin = "https://login.example.test"
)

// newRP returns the relying party of the tests.
func newRP(t *testing.T) *webauthn.RelyingParty {
	t.Helper()
	rp, err := webauthn.New(webauthn.Options{RPID: rpID, RPName: "userd", Origins: []string{origin, "https://app.example.test:8443"}})
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// registry is the store's side of the tests: the users and their
// passkeys, and a lookup over them that records a use as the store does.
type registry struct {
	mu       sync.Mutex
	users    map[domain.UserID]domain.User
	passkeys []domain.Passkey
}

func newRegistry() *registry { return &registry{users: map[domain.UserID]domain.User{}} }

func (r *registry) newUser(name string) domain.User {
	u := domain.User{ID: domain.NewUserID(time.Now()), Name: name, Email: domain.Email(strings.ToLower(name) + "@example.test")}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.users[u.ID] = u
	return u
}

func (r *registry) add(p domain.Passkey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p.ID = domain.NewPasskeyID(time.Now())
	r.passkeys = append(r.passkeys, p)
}

func (r *registry) of(user domain.UserID) []domain.Passkey {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []domain.Passkey
	for _, p := range r.passkeys {
		if p.UserID == user {
			out = append(out, p)
		}
	}
	return out
}

// lookup is a ports.PasskeyLookup: the user of the handle, with its
// passkeys, provided one of them has the credential id.
func (r *registry) lookup(_ context.Context, handle, credentialID []byte) (domain.User, []domain.Passkey, error) {
	r.mu.Lock()
	u, ok := r.users[domain.UserID(hex.EncodeToString(handle))]
	r.mu.Unlock()
	if !ok {
		return domain.User{}, nil, domain.ErrInvalidPasskey
	}
	ps := r.of(u.ID)
	for _, p := range ps {
		if bytes.Equal(p.CredentialID, credentialID) {
			return u, ps, nil
		}
	}
	return domain.User{}, nil, domain.ErrInvalidPasskey
}

// record stores an assertion's counter and record, as RecordPasskeyUse.
func (r *registry) record(a domain.PasskeyAssertion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, p := range r.passkeys {
		if bytes.Equal(p.CredentialID, a.CredentialID) {
			r.passkeys[i].SignCount, r.passkeys[i].Credential = a.SignCount, a.Credential
		}
	}
}

// register makes a passkey of u on auth and stores it.
func register(t *testing.T, rp *webauthn.RelyingParty, reg *registry, auth *softauthn.Authenticator, u domain.User) domain.Passkey {
	t.Helper()
	opts, state, err := rp.BeginRegistration(u, reg.of(u.ID))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := auth.Create(opts, softauthn.Faults{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := rp.FinishRegistration(u, state, resp)
	if err != nil {
		t.Fatalf("FinishRegistration: %v", err)
	}
	reg.add(p)
	return reg.of(u.ID)[len(reg.of(u.ID))-1]
}

func TestRegisterThenLogIn(t *testing.T) {
	t.Parallel()
	rp, reg := newRP(t), newRegistry()
	auth := softauthn.New(origin)
	alice := reg.newUser("Alice")

	opts, state, err := rp.BeginRegistration(alice, nil)
	if err != nil {
		t.Fatal(err)
	}
	var creation struct {
		RP struct {
			ID, Name string
		}
		User struct {
			ID, Name, DisplayName string
		}
		Timeout                int
		AuthenticatorSelection struct {
			ResidentKey, UserVerification string
			RequireResidentKey            bool
		}
	}
	if err := json.Unmarshal(opts, &creation); err != nil {
		t.Fatal(err)
	}
	wantHandle, _ := hex.DecodeString(string(alice.ID))
	if creation.RP.ID != rpID || creation.RP.Name != "userd" ||
		creation.User.ID != b64(wantHandle) || creation.User.Name != string(alice.Email) || creation.User.DisplayName != "Alice" ||
		creation.AuthenticatorSelection.ResidentKey != "required" || !creation.AuthenticatorSelection.RequireResidentKey ||
		creation.AuthenticatorSelection.UserVerification != "preferred" || !strings.Contains(string(opts), `"extensions":{"credProps":true}`) || creation.Timeout != int(domain.CeremonyTTL/time.Millisecond) {
		t.Errorf("creation options: %s", opts)
	}

	resp, err := auth.Create(opts, softauthn.Faults{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := rp.FinishRegistration(alice, state, resp)
	if err != nil {
		t.Fatalf("FinishRegistration: %v", err)
	}
	cred := auth.Credentials()[0]
	if p.UserID != alice.ID || !bytes.Equal(p.CredentialID, cred.ID) || p.SignCount != 0 || !bytes.HasPrefix(p.Credential, []byte(`{"v":1,`)) {
		t.Errorf("passkey: %+v", p)
	}
	reg.add(p)

	// A second registration excludes the first credential: the
	// authenticator refuses, as a browser does.
	opts, _, err = rp.BeginRegistration(alice, reg.of(alice.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(opts), `"excludeCredentials":[{"type":"public-key","id":"`+b64(cred.ID)+`"`) {
		t.Errorf("creation options without the existing credential excluded: %s", opts)
	}
	if _, err := auth.Create(opts, softauthn.Faults{}); err == nil {
		t.Error("an excluded credential was made again")
	}

	for i := range 2 {
		opts, state, err := rp.BeginLogin(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(opts), "allowCredentials") || !strings.Contains(string(opts), `"rpId":"`+rpID+`"`) ||
			!strings.Contains(string(opts), `"userVerification":"preferred"`) {
			t.Errorf("discoverable request options: %s", opts)
		}
		resp, err := auth.Get(opts, softauthn.Faults{})
		if err != nil {
			t.Fatal(err)
		}
		a, err := rp.FinishLogin(context.Background(), state, resp, reg.lookup)
		if err != nil {
			t.Fatalf("login %d: %v", i+1, err)
		}
		if a.UserID != alice.ID || !bytes.Equal(a.CredentialID, cred.ID) || a.SignCount != uint32(i+1) || !a.UserVerified || len(a.Credential) == 0 {
			t.Errorf("login %d: assertion %+v", i+1, a)
		}
		reg.record(a)
	}
}

func TestSecondFactorLoginIsLimitedToTheUsersPasskeys(t *testing.T) {
	t.Parallel()
	rp, reg := newRP(t), newRegistry()
	alice, bob := reg.newUser("Alice"), reg.newUser("Bob")
	aliceLaptop, alicePhone, bobKey := softauthn.New(origin), softauthn.New(origin), softauthn.New(origin)
	first := register(t, rp, reg, aliceLaptop, alice)
	second := register(t, rp, reg, alicePhone, alice)
	register(t, rp, reg, bobKey, bob)

	opts, state, err := rp.BeginLogin(&alice, reg.of(alice.ID))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []domain.Passkey{first, second} {
		if !strings.Contains(string(opts), `"id":"`+b64(p.CredentialID)+`"`) {
			t.Errorf("allowCredentials without passkey %s: %s", p.ID, opts)
		}
	}
	resp, err := alicePhone.Get(opts, softauthn.Faults{NoUserVerification: true})
	if err != nil {
		t.Fatal(err)
	}
	a, err := rp.FinishLogin(context.Background(), state, resp, reg.lookup)
	if err != nil {
		t.Fatal(err)
	}
	if a.UserID != alice.ID || !bytes.Equal(a.CredentialID, second.CredentialID) || a.UserVerified {
		t.Errorf("assertion %+v", a)
	}

	// Bob's passkey answers Alice's second step: another user's key.
	opts, state, err = rp.BeginLogin(&alice, reg.of(alice.ID))
	if err != nil {
		t.Fatal(err)
	}
	var req map[string]json.RawMessage
	_ = json.Unmarshal(opts, &req)
	delete(req, "allowCredentials") // a client ignoring the list
	discoverable, _ := json.Marshal(req)
	resp, err = bobKey.Get(discoverable, softauthn.Faults{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = rp.FinishLogin(context.Background(), state, resp, reg.lookup)
	if !errors.Is(err, domain.ErrInvalidPasskey) {
		t.Errorf("another user's passkey: %v, want ErrInvalidPasskey", err)
	}
	t.Log(err)
}

// TestRefusals: each wrong assertion is domain.ErrInvalidPasskey, with the
// reason in the message.
func TestRefusals(t *testing.T) {
	t.Parallel()
	zero := uint32(0)
	tests := []struct {
		name   string
		faults softauthn.Faults
		// before runs between begin and the response, e.g. to take the
		// challenge of another ceremony.
		before func(t *testing.T, rp *webauthn.RelyingParty, f *softauthn.Faults)
		// stranger answers with a credential the relying party never
		// registered.
		stranger bool
		reason   string
	}{
		{name: "wrong_origin", faults: softauthn.Faults{Origin: "https://login.example.test.evil.example"}, reason: "origin"},
		{name: "origin_of_another_port", faults: softauthn.Faults{Origin: "https://login.example.test:8443"}, reason: "origin"},
		{name: "wrong_rp_id", faults: softauthn.Faults{RPID: "evil.example"}, reason: "RP"},
		{name: "challenge_of_another_ceremony", before: func(t *testing.T, rp *webauthn.RelyingParty, f *softauthn.Faults) {
			opts, _, err := rp.BeginLogin(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var o struct{ Challenge string }
			_ = json.Unmarshal(opts, &o)
			f.Challenge = unb64(t, o.Challenge)
		}, reason: "challenge"},
		{name: "bad_signature", faults: softauthn.Faults{BadSignature: true}, reason: "Signature"},
		{name: "counter_going_backwards", faults: softauthn.Faults{Counter: &zero}, reason: "counter"},
		{name: "counter_standing_still", before: func(_ *testing.T, _ *webauthn.RelyingParty, f *softauthn.Faults) {
			same := uint32(1)
			f.Counter = &same
		}, reason: "counter"},
		{name: "unknown_credential", stranger: true, reason: "lookup"},
		{name: "no_user_handle", faults: softauthn.Faults{NoUserHandle: true}, reason: "user handle"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rp, reg := newRP(t), newRegistry()
			auth := softauthn.New(origin)
			alice := reg.newUser("Alice")
			register(t, rp, reg, auth, alice)
			// One good login: the counter is 1.
			opts, state, err := rp.BeginLogin(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := auth.Get(opts, softauthn.Faults{})
			if err != nil {
				t.Fatal(err)
			}
			a, err := rp.FinishLogin(context.Background(), state, resp, reg.lookup)
			if err != nil {
				t.Fatal(err)
			}
			reg.record(a)

			opts, state, err = rp.BeginLogin(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			f := tt.faults
			if tt.before != nil {
				tt.before(t, rp, &f)
			}
			if tt.stranger {
				// A credential of Alice's, made but never registered.
				created, _, err := rp.BeginRegistration(alice, nil)
				if err != nil {
					t.Fatal(err)
				}
				auth = softauthn.New(origin)
				if _, err := auth.Create(created, softauthn.Faults{}); err != nil {
					t.Fatal(err)
				}
			}
			resp, err = auth.Get(opts, f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = rp.FinishLogin(context.Background(), state, resp, reg.lookup)
			if !errors.Is(err, domain.ErrInvalidPasskey) || errors.Is(err, domain.ErrMalformedPasskeyCredential) {
				t.Fatalf("error %v, want ErrInvalidPasskey", err)
			}
			t.Log(err)
			if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tt.reason)) {
				t.Errorf("error %q does not say %q", err, tt.reason)
			}
		})
	}
}

// TestRegistrationRefusals: a registration that does not verify is
// ErrInvalidPasskey too.
func TestRegistrationRefusals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		faults softauthn.Faults
	}{
		{"wrong_origin", softauthn.Faults{Origin: "http://login.example.test"}},
		{"wrong_rp_id", softauthn.Faults{RPID: "example.test"}},
		{"challenge_of_another_ceremony", softauthn.Faults{Challenge: bytes.Repeat([]byte{7}, 32)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rp, reg := newRP(t), newRegistry()
			alice := reg.newUser("Alice")
			opts, state, err := rp.BeginRegistration(alice, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := softauthn.New(origin).Create(opts, tt.faults)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rp.FinishRegistration(alice, state, resp); !errors.Is(err, domain.ErrInvalidPasskey) {
				t.Errorf("error %v, want ErrInvalidPasskey", err)
			}
		})
	}
}

// TestMalformedCredentials: what is not a WebAuthn response at all is
// ErrMalformedPasskeyCredential, in both ceremonies.
func TestMalformedCredentials(t *testing.T) {
	t.Parallel()
	rp, reg := newRP(t), newRegistry()
	alice := reg.newUser("Alice")
	_, regState, err := rp.BeginRegistration(alice, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, loginState, err := rp.BeginLogin(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{`, `[]`, `{"id":1}`, `null`, `{}`, `"x"`,
		`{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{"clientDataJSON":"e30","attestationObject":"oA","authenticatorData":"AA","signature":"AA"}}`,
	} {
		t.Run(body, func(t *testing.T) {
			t.Parallel()
			if _, err := rp.FinishRegistration(alice, regState, json.RawMessage(body)); !errors.Is(err, domain.ErrMalformedPasskeyCredential) {
				t.Errorf("registration: %v, want ErrMalformedPasskeyCredential", err)
			}
			if _, err := rp.FinishLogin(context.Background(), loginState, json.RawMessage(body), reg.lookup); !errors.Is(err, domain.ErrMalformedPasskeyCredential) {
				t.Errorf("login: %v, want ErrMalformedPasskeyCredential", err)
			}
		})
	}
}

// TestStateOfAnotherCeremony: a login state does not finish a
// registration, nor the reverse; that is the server's fault, not the
// client's.
func TestStateOfAnotherCeremony(t *testing.T) {
	t.Parallel()
	rp, reg := newRP(t), newRegistry()
	alice := reg.newUser("Alice")
	_, regState, _ := rp.BeginRegistration(alice, nil)
	_, loginState, _ := rp.BeginLogin(nil, nil)
	if _, err := rp.FinishRegistration(alice, loginState, json.RawMessage(`{}`)); err == nil || errors.Is(err, domain.ErrInvalidPasskey) {
		t.Errorf("registration with a login state: %v", err)
	}
	if _, err := rp.FinishLogin(context.Background(), regState, json.RawMessage(`{}`), reg.lookup); err == nil || errors.Is(err, domain.ErrInvalidPasskey) {
		t.Errorf("login with a registration state: %v", err)
	}
}

// TestLookupErrorsPass: an unavailable store is not a bad passkey.
func TestLookupErrorsPass(t *testing.T) {
	t.Parallel()
	rp, reg := newRP(t), newRegistry()
	auth := softauthn.New(origin)
	register(t, rp, reg, auth, reg.newUser("Alice"))
	opts, state, _ := rp.BeginLogin(nil, nil)
	resp, err := auth.Get(opts, softauthn.Faults{})
	if err != nil {
		t.Fatal(err)
	}
	down := func(context.Context, []byte, []byte) (domain.User, []domain.Passkey, error) {
		return domain.User{}, nil, domain.ErrUnavailable
	}
	if _, err := rp.FinishLogin(context.Background(), state, resp, down); !errors.Is(err, domain.ErrUnavailable) || errors.Is(err, domain.ErrInvalidPasskey) {
		t.Errorf("error %v, want ErrUnavailable", err)
	}
}

func TestNewChecksOptions(t *testing.T) {
	t.Parallel()
	good := webauthn.Options{RPID: "example.com", RPName: "userd", Origins: []string{"https://example.com"}}
	tests := []struct {
		name string
		edit func(o *webauthn.Options)
		want string // a substring of the error; "" for none
	}{
		{"good", func(*webauthn.Options) {}, ""},
		{"localhost", func(o *webauthn.Options) { o.RPID, o.Origins = "localhost", []string{"http://localhost:8080"} }, ""},
		{"ipv4", func(o *webauthn.Options) { o.RPID = "127.0.0.1" }, "USERD_WEBAUTHN_RP_ID must be a domain name (localhost for local use), not an IP address"},
		{"ipv6", func(o *webauthn.Options) { o.RPID = "::1" }, "USERD_WEBAUTHN_RP_ID must be a domain name (localhost for local use), not an IP address"},
		{"ipv6_brackets", func(o *webauthn.Options) { o.RPID = "[::1]" }, "not an IP address"},
		{"empty_rp_id", func(o *webauthn.Options) { o.RPID = "" }, "USERD_WEBAUTHN_RP_ID"},
		{"rp_id_with_port", func(o *webauthn.Options) { o.RPID = "example.com:443" }, "USERD_WEBAUTHN_RP_ID"},
		{"rp_id_url", func(o *webauthn.Options) { o.RPID = "https://example.com" }, "USERD_WEBAUTHN_RP_ID"},
		{"no_name", func(o *webauthn.Options) { o.RPName = " " }, "USERD_WEBAUTHN_RP_NAME"},
		{"no_origins", func(o *webauthn.Options) { o.Origins = nil }, "USERD_WEBAUTHN_ORIGINS"},
		{"origin_with_path", func(o *webauthn.Options) { o.Origins = []string{"https://example.com/login"} }, "USERD_WEBAUTHN_ORIGINS"},
		{"origin_with_slash", func(o *webauthn.Options) { o.Origins = []string{"https://example.com/"} }, "USERD_WEBAUTHN_ORIGINS"},
		{"origin_without_scheme", func(o *webauthn.Options) { o.Origins = []string{"example.com"} }, "USERD_WEBAUTHN_ORIGINS"},
		{"origin_ftp", func(o *webauthn.Options) { o.Origins = []string{"ftp://example.com"} }, "USERD_WEBAUTHN_ORIGINS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := good
			tt.edit(&o)
			_, err := webauthn.New(o)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func unb64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
