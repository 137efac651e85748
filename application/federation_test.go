package application_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// fedEnv is an env with the provider acme registered.
type fedEnv struct {
	*auditEnv
	admin *domain.Principal
}

func newFedEnv(t *testing.T, in domain.IdentityProviderInput) *fedEnv {
	t.Helper()
	e := newAuditEnv(t, nil)
	_, admin := e.seed(t, "root@example.com", domain.ProfileAdmin)
	if _, err := e.env.svc.IdentityProviders.CreateIdentityProvider(ctx, admin, in); err != nil {
		t.Fatal(err)
	}
	return &fedEnv{auditEnv: e, admin: admin}
}

// person is who the provider vouches for in the tests.
var person = domain.ExternalIdentity{Subject: "sub-123", Email: "grace@example.com", EmailVerified: true, Name: "Grace Hopper"}

// flow starts a flow through slug for next (linkFor when set) and plays
// the provider's answer: ext, or err from the exchange.
func (e *fedEnv) flow(t *testing.T, slug string, linkFor *domain.Principal, ext domain.ExternalIdentity, err error) (application.FederationOutcome, error) {
	t.Helper()
	st, serr := e.env.svc.Federation.Start(ctx, slug, "/account/", linkFor)
	if serr != nil {
		t.Fatalf("Start: %v", serr)
	}
	code, state := e.upstream.Answer(st.Location, ext, err)
	if state != st.Flow.State {
		t.Fatalf("the authorization URL's state %q is not the flow's", state)
	}
	return e.env.svc.Federation.Finish(ctx, &st.Flow, slug, application.FederationCallback{State: state, Code: code})
}

// wantRefused fails unless err refuses the flow for reason, and the audit
// trail's last event records it.
func (e *fedEnv) wantRefused(t *testing.T, err error, reason string, forbidden bool) {
	t.Helper()
	var refused *domain.FederationRefusedError
	if !errors.As(err, &refused) || refused.Reason != reason || refused.Forbidden != forbidden {
		t.Fatalf("err = %v, want the refusal %s (forbidden %v)", err, reason, forbidden)
	}
	trail := e.trail(t)
	last := trail[len(trail)-1]
	if last.Type != domain.AuditIdentitySignInRefused || last.Detail != "provider=acme reason="+reason {
		t.Errorf("last event = %+v, want idp.sign_in_refused with reason %s", last, reason)
	}
}

// The first sign-in of an unknown person with a verified email makes the
// account (no password, email verified) with the identity linked, and
// signs it in with amr fed; the second finds it.
func TestFederation_first_sign_in_creates_the_account_and_the_second_finds_it(t *testing.T) {
	t.Parallel()
	e := newFedEnv(t, providerIn("acme"))
	out, err := e.flow(t, "acme", nil, person, nil)
	wantErr(t, err, nil)
	if out.SignIn == nil || out.SignIn.Tokens == nil || out.ProviderName != "Acme SSO" {
		t.Fatalf("outcome = %+v, want a session", out)
	}
	u := out.SignIn.Tokens.User
	if u.Email != "grace@example.com" || !u.EmailVerified || u.HasPassword() || u.Name != "Grace Hopper" ||
		!slices.Equal(u.Profiles, domain.Profiles{domain.ProfileCustomer}) {
		t.Errorf("account = %+v", u)
	}
	if s := e.session(t, *out.SignIn.Tokens); !slices.Equal(s.AMR, domain.AMRFederated) {
		t.Errorf("amr = %v, want [fed]", s.AMR)
	}
	wantTypes := []domain.AuditEventType{domain.AuditUserCreated, domain.AuditIdentityLinked, domain.AuditLoginSucceeded,
		domain.AuditIdentitySignIn}
	if got := types(e.trail(t))[1:]; !slices.Equal(got, wantTypes) {
		t.Errorf("events = %v, want %v", got, wantTypes)
	}
	if ev := e.trail(t)[1]; ev.Detail != "profiles=ROLE_CUSTOMER origin=idp" {
		t.Errorf("user.created detail = %q", ev.Detail)
	}

	e.clock.Advance(time.Hour)
	again, err := e.flow(t, "acme", nil, person, nil)
	wantErr(t, err, nil)
	if again.SignIn == nil || again.SignIn.Tokens.User.ID != u.ID {
		t.Fatalf("second sign-in = %+v, want the same account", again)
	}
	_, err = e.env.svc.Federation.Identities(ctx, &domain.Principal{UserID: u.ID, Profiles: u.Profiles}, "me-is-the-adapter's")
	wantErr(t, err, domain.ErrInvalidID)
	ids, err := e.env.svc.Federation.Identities(ctx, &domain.Principal{UserID: u.ID, Profiles: u.Profiles}, u.ID.String())
	wantErr(t, err, nil)
	if len(ids) != 1 || ids[0].Subject != "sub-123" || !ids[0].LastUsedAt.Equal(e.clock.Now()) {
		t.Errorf("identities = %+v, want one used now", ids)
	}
	// Not even with the right email does a password sign the account in.
	_, err = e.auth.Login(ctx, application.LoginInput{Email: "grace@example.com", Password: ""})
	var verr *domain.ValidationError
	if !errors.As(err, &verr) {
		t.Errorf("an empty password: %v", err)
	}
	_, err = e.auth.Login(ctx, application.LoginInput{Email: "grace@example.com", Password: "anything at all"})
	wantErr(t, err, domain.ErrInvalidCredentials)
}

// An account with the provider's email is never signed in by the
// provider alone: the identity waits for its owner's sign-in, and is
// linked to that account only.
func TestFederation_existing_email_links_only_after_the_owner_signs_in(t *testing.T) {
	t.Parallel()
	e := newFedEnv(t, providerIn("acme"))
	owner, ownerP := e.seed(t, "grace@example.com")
	_, otherP := e.seed(t, "other@example.com")
	out, err := e.flow(t, "acme", nil, person, nil)
	wantErr(t, err, nil)
	if out.SignIn != nil || out.Pending == nil || out.Pending.UserID != owner.ID || out.Pending.Email != owner.Email {
		t.Fatalf("outcome = %+v, want a pending link to the owner, no session", out)
	}
	_, err = e.env.svc.Federation.LinkPending(ctx, otherP, *out.Pending)
	wantErr(t, err, domain.ErrIdentityNotFound)
	late := *out.Pending
	late.Expires = e.clock.Now()
	_, err = e.env.svc.Federation.LinkPending(ctx, ownerP, late)
	wantErr(t, err, domain.ErrIdentityNotFound)

	linked, err := e.env.svc.Federation.LinkPending(ctx, ownerP, *out.Pending)
	wantErr(t, err, nil)
	if linked.UserID != owner.ID || linked.Subject != "sub-123" {
		t.Errorf("linked = %+v", linked)
	}
	if got := types(e.trail(t)); got[len(got)-1] != domain.AuditIdentityLinked {
		t.Errorf("events = %v, want identity.linked last", got)
	}
	// From now on the provider signs the owner in.
	out, err = e.flow(t, "acme", nil, person, nil)
	wantErr(t, err, nil)
	if out.SignIn == nil || out.SignIn.Tokens.User.ID != owner.ID {
		t.Errorf("outcome = %+v, want the owner signed in", out)
	}
}

// The refusals of the matching: an email the provider does not vouch for
// (or that the deployment does not trust) never creates or links;
// allowedDomains and autoCreate refuse a person (403).
func TestFederation_refusals_of_the_matching(t *testing.T) {
	t.Parallel()
	unverified := person
	unverified.EmailVerified = false
	for _, tc := range []struct {
		name   string
		in     func(domain.IdentityProviderInput) domain.IdentityProviderInput
		ext    domain.ExternalIdentity
		reason string
	}{
		{"unverified_email", nil, unverified, domain.RefusedEmailUnverified},
		{"no_email", nil, domain.ExternalIdentity{Subject: "sub-9", EmailVerified: true}, domain.RefusedEmailUnverified},
		{"untrusted_email", func(in domain.IdentityProviderInput) domain.IdentityProviderInput {
			in.TrustEmailVerified = ptr(false)
			return in
		}, person, domain.RefusedEmailUnverified},
		{"domain_not_allowed", func(in domain.IdentityProviderInput) domain.IdentityProviderInput {
			in.AllowedDomains = []string{"acme.example"}
			return in
		}, person, domain.RefusedDomainNotAllowed},
		{"auto_create_off", func(in domain.IdentityProviderInput) domain.IdentityProviderInput {
			in.AutoCreate = ptr(false)
			return in
		}, person, domain.RefusedAutoCreateOff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := providerIn("acme")
			if tc.in != nil {
				in = tc.in(in)
			}
			e := newFedEnv(t, in)
			_, err := e.flow(t, "acme", nil, tc.ext, nil)
			e.wantRefused(t, err, tc.reason, true)
			if _, err := e.store.Users().ByEmail(ctx, person.Email); !errors.Is(err, domain.ErrUserNotFound) {
				t.Errorf("an account was made: %v", err)
			}
		})
	}
}

// A linked identity whose email left the allowed domains no longer signs
// in; a disabled account is refused as at any sign-in.
func TestFederation_known_identity_still_checked(t *testing.T) {
	t.Parallel()
	e := newFedEnv(t, providerIn("acme"))
	out, err := e.flow(t, "acme", nil, person, nil)
	wantErr(t, err, nil)
	u := out.SignIn.Tokens.User
	_, err = e.env.svc.IdentityProviders.UpdateIdentityProvider(ctx, e.admin, "acme",
		domain.IdentityProviderInput{AllowedDomains: []string{"acme.example"}})
	wantErr(t, err, nil)
	_, err = e.flow(t, "acme", nil, person, nil)
	e.wantRefused(t, err, domain.RefusedDomainNotAllowed, true)
	_, err = e.env.svc.IdentityProviders.UpdateIdentityProvider(ctx, e.admin, "acme",
		domain.IdentityProviderInput{AllowedDomains: []string{"example.com"}})
	wantErr(t, err, nil)
	if _, err := e.users.Update(ctx, e.admin, u.ID.String(), application.UpdateInput{Disabled: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	_, err = e.flow(t, "acme", nil, person, nil)
	wantErr(t, err, domain.ErrAccountDisabled)
}

// The flow's own checks: the browser's flow and its state, the
// provider's error, the code, and what the client's checks of the ID
// token found; each is refused and recorded with its reason, and opens
// nothing.
func TestFederation_refusals_of_the_flow(t *testing.T) {
	t.Parallel()
	e := newFedEnv(t, providerIn("acme"))
	st, err := e.env.svc.Federation.Start(ctx, "acme", "/account/", nil)
	wantErr(t, err, nil)
	code, state := e.upstream.Approve(st.Location, person)
	good := application.FederationCallback{State: state, Code: code}
	finish := func(flow *application.FederationFlow, slug string, cb application.FederationCallback) error {
		_, err := e.env.svc.Federation.Finish(ctx, flow, slug, cb)
		return err
	}
	otherState := st.Flow
	otherState.State = "another-browsers-state"
	expired := st.Flow
	expired.Expires = e.clock.Now()
	for name, err := range map[string]error{
		"no_flow":         finish(nil, "acme", good),
		"other_state":     finish(&otherState, "acme", good),
		"expired_flow":    finish(&expired, "acme", good),
		"other_provider":  finish(&st.Flow, "other", good),
		"no_state":        finish(&st.Flow, "acme", application.FederationCallback{Code: code}),
		"provider_error":  finish(&st.Flow, "acme", application.FederationCallback{State: state, Error: "access_denied"}),
		"no_code":         finish(&st.Flow, "acme", application.FederationCallback{State: state}),
		"code_of_nothing": finish(&st.Flow, "acme", application.FederationCallback{State: state, Code: "made-up"}),
	} {
		reason := map[string]string{"provider_error": domain.RefusedProviderError, "no_code": domain.RefusedCodeExchange,
			"code_of_nothing": domain.RefusedCodeExchange}[name]
		if reason == "" {
			reason = domain.RefusedStateMismatch
		}
		if got := domain.FederationReason(err); got != reason {
			t.Errorf("%s: %v, want %s", name, err, reason)
		}
	}
	// The client's checks of the ID token: their reasons go through.
	for _, reason := range []string{domain.RefusedNonceMismatch, domain.RefusedIssuerMismatch, domain.RefusedAudienceMismatch,
		domain.RefusedTokenExpired, domain.RefusedInvalidSignature} {
		_, err := e.flow(t, "acme", nil, person, domain.FederationRefused(reason, errors.New("checked")))
		e.wantRefused(t, err, reason, false)
	}
	// The right flow still works: none of the above spent it.
	out, err := e.env.svc.Federation.Finish(ctx, &st.Flow, "acme", good)
	wantErr(t, err, nil)
	if out.SignIn == nil {
		t.Errorf("outcome = %+v", out)
	}
}

// A provider that is unknown, disabled or unreachable starts nothing; the
// enabled ones are the sign-in page's buttons.
func TestFederation_start_and_the_buttons(t *testing.T) {
	t.Parallel()
	e := newFedEnv(t, providerIn("acme"))
	off := providerIn("off")
	off.Enabled = ptr(false)
	_, err := e.env.svc.IdentityProviders.CreateIdentityProvider(ctx, e.admin, off)
	wantErr(t, err, nil)
	buttons, err := e.env.svc.Federation.SignInProviders(ctx)
	wantErr(t, err, nil)
	if len(buttons) != 1 || buttons[0] != (application.SignInProvider{Slug: "acme", DisplayName: "Acme SSO", Kind: "oidc"}) {
		t.Errorf("buttons = %+v", buttons)
	}
	for _, slug := range []string{"off", "nope", "NOT A SLUG"} {
		_, err := e.env.svc.Federation.Start(ctx, slug, "/account/", nil)
		wantErr(t, err, domain.ErrIdentityProviderNotFound)
	}
	e.upstream.SetDown(errors.New("connection refused"))
	_, err = e.env.svc.Federation.Start(ctx, "acme", "/account/", nil)
	e.wantRefused(t, err, domain.RefusedProviderUnreachable, false)
	e.upstream.SetDown(nil)
	st, err := e.env.svc.Federation.Start(ctx, "acme", "/account/", nil)
	wantErr(t, err, nil)
	if st.Flow.Provider != "acme" || len(st.Flow.State) != 43 || len(st.Flow.Nonce) != 43 || len(st.Flow.Verifier) != 43 ||
		st.Flow.Next != "/account/" || !st.Flow.Expires.Equal(e.clock.Now().Add(domain.FederationFlowTTL)) {
		t.Errorf("flow = %+v", st.Flow)
	}
}

// A user with a second factor still completes it after the provider: the
// session's amr is fed otp mfa.
func TestFederation_second_factor_still_applies(t *testing.T) {
	t.Parallel()
	e := newFedEnv(t, providerIn("acme"))
	acct := e.seedMFA(t, "grace@example.com")
	linkTo(t, e, acct.user.ID, person)
	out, err := e.flow(t, "acme", nil, person, nil)
	wantErr(t, err, nil)
	if out.SignIn == nil || out.SignIn.SecondStep == nil {
		t.Fatalf("outcome = %+v, want the second step", out)
	}
	pair, err := e.loginCode(out.SignIn.SecondStep.MFAToken, acct.code(t, e.env))
	wantErr(t, err, nil)
	if s := e.session(t, pair); !slices.Equal(s.AMR, domain.AMR{"fed", "otp", "mfa"}) || s.AMR.ACR() != domain.ACRMultiFactor {
		t.Errorf("amr = %v, want fed otp mfa", s.AMR)
	}
}

// A signed-in person links an identity from the account page; one linked
// to another account is refused.
func TestFederation_link_from_the_account(t *testing.T) {
	t.Parallel()
	e := newFedEnv(t, providerIn("acme"))
	ada, adaP := e.seed(t, "ada@example.com")
	_, bobP := e.seed(t, "bob@example.com")
	out, err := e.flow(t, "acme", adaP, person, nil)
	wantErr(t, err, nil)
	if out.Linked == nil || out.Linked.UserID != ada.ID || out.SignIn != nil {
		t.Fatalf("outcome = %+v, want linked to ada", out)
	}
	// Again: linked already, to ada.
	out, err = e.flow(t, "acme", adaP, person, nil)
	wantErr(t, err, nil)
	if out.Linked == nil {
		t.Errorf("outcome = %+v", out)
	}
	_, err = e.flow(t, "acme", bobP, person, nil)
	e.wantRefused(t, err, domain.RefusedIdentityTaken, true)
	other := person
	other.Subject = "sub-456"
	_, err = e.flow(t, "acme", adaP, other, nil)
	e.wantRefused(t, err, domain.RefusedIdentityTaken, true)
}

// Unlinking leaves the account a way in: its password, a passkey, or
// another identity.
func TestFederation_unlink_keeps_a_sign_in_method(t *testing.T) {
	t.Parallel()
	e := newFedEnv(t, providerIn("acme"))
	out, err := e.flow(t, "acme", nil, person, nil)
	wantErr(t, err, nil)
	u := out.SignIn.Tokens.User
	self := &domain.Principal{UserID: u.ID, Profiles: u.Profiles}
	_, bobP := e.seed(t, "bob@example.com")
	wantErr(t, e.env.svc.Federation.UnlinkIdentity(ctx, bobP, u.ID.String(), "acme"), domain.ErrForbidden)
	wantErr(t, e.env.svc.Federation.UnlinkIdentity(ctx, self, u.ID.String(), "acme"), domain.ErrLastSignInMethod)
	wantErr(t, e.env.svc.Federation.UnlinkIdentity(ctx, self, u.ID.String(), "other"), domain.ErrIdentityNotFound)

	// With a second identity, either may go.
	_, err = e.env.svc.IdentityProviders.CreateIdentityProvider(ctx, e.admin, providerIn("second"))
	wantErr(t, err, nil)
	second := person
	second.Subject = "sub-2"
	if _, err := e.flow(t, "second", self, second, nil); err != nil {
		t.Fatal(err)
	}
	wantErr(t, e.env.svc.Federation.UnlinkIdentity(ctx, e.admin, u.ID.String(), "acme"), nil)
	last := e.trail(t)[len(e.trail(t))-1]
	if last.Type != domain.AuditIdentityUnlinked || last.ActorID != e.admin.UserID || last.SubjectID != u.ID {
		t.Errorf("last event = %+v", last)
	}
	wantErr(t, e.env.svc.Federation.UnlinkIdentity(ctx, self, u.ID.String(), "second"), domain.ErrLastSignInMethod)
}

// linkTo links ext's identity at acme to the account id, as a sign-in of
// its owner after the provider would.
func linkTo(t *testing.T, e *fedEnv, id domain.UserID, ext domain.ExternalIdentity) {
	t.Helper()
	err := e.store.Identities().LinkIdentity(context.Background(), domain.UserIdentity{UserID: id, Provider: "acme",
		Subject: ext.Subject, Email: ext.Email, LinkedAt: e.clock.Now(), LastUsedAt: e.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
}

// A linked identity signs in whatever the provider says of the email
// now; an address it no longer vouches for is not kept as the
// identity's.
func TestFederation_known_identity_keeps_the_vouched_email(t *testing.T) {
	t.Parallel()
	e := newFedEnv(t, providerIn("acme"))
	out, err := e.flow(t, "acme", nil, person, nil)
	wantErr(t, err, nil)
	u := out.SignIn.Tokens.User
	later := person
	later.Email, later.EmailVerified = "unvouched@example.com", false
	again, err := e.flow(t, "acme", nil, later, nil)
	wantErr(t, err, nil)
	if again.SignIn == nil || again.SignIn.Tokens.User.ID != u.ID {
		t.Fatalf("outcome = %+v, want the account signed in", again)
	}
	got, err := e.store.Identities().IdentityBySubject(ctx, "acme", person.Subject)
	wantErr(t, err, nil)
	if got.Email != person.Email {
		t.Errorf("the identity's email = %s, want the vouched %s", got.Email, person.Email)
	}
}
