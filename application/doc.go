// Package application holds userd's use cases: accounts (registration,
// reads, lists, updates, deletion, imports), sign-in (password, passkey,
// the second step), sessions (refresh, logout, listing and ending them),
// second factors, the links by mail, the audit trail, key rotation, the
// outbox's sender and housekeeping. They are built once, by New, over the
// ports; each use case with a caller starts the same way (signedIn, then
// the form of the request, then the domain's authorization rule, then
// existence), so that the rules themselves live in the domain and are
// tested there, and the use cases are tested with the in-memory adapters
// whatever drives them.
//
// Each service names what it uses in a struct of its own (userPorts,
// authPorts, …), filled by New; all share only a small core (clock, log,
// events, the lock-out), and several the parts New builds once (shared):
// the queues of mail and webhooks, the ended sessions, the second factors
// and the sign-in path.
//
// Every sign-in ends in one place, signin.go: a method proves who the
// person is and hands that over (authenticated, or secondFactor for the
// second step); the sign-in path decides the rest (a disabled account, an
// unverified email, the lock-out, the second step, the session with its
// amr, the tokens, the audit event and the webhook) and answers a
// SignInResult. A new way to sign in is a method that proves the person
// and calls it.
//
// Files: app.go builds the services; core.go is what they share; caller.go
// confirms the signed-in caller. Accounts: register.go, users.go,
// update.go (UserService), import.go (ImportService). Sign-in: signin.go
// (the path), login.go (the password; AuthService), mfalogin.go (the
// second step with a code), passkeys.go (PasskeyService), throttle.go and
// unlock.go (the lock-out). Sessions: refresh.go (refresh, logout),
// sessions.go (SessionService, and the ended sessions every node
// refuses), endedsessions.go. Second factors: mfa.go (MFAService),
// factors.go and factorproof.go (what the factor use cases share, and
// the proof that the caller owns the account). Messages: accountmail.go
// (MailService), mailqueue.go (the mail queued with a change),
// webhooks.go (the webhooks queued with a change, and their sending),
// delivery.go (DeliveryService, the outbox's sender). The rest: events.go
// (the audit trail and the counters), audit.go (AuditService), keys.go
// (KeyService), housekeeping.go (HousekeepingService).
package application
