// Package application holds userd's use cases: registration, reads, lists,
// updates, deletion, login, refresh, logout, the audit trail, imports and
// key rotation. They are built once, by New, over the ports; each starts
// the same way (signedIn, then the form of the request, then the domain's
// authorization rule, then existence), so that the rules themselves live
// in the domain and are tested there, and the use cases are tested with the
// in-memory adapters whatever drives them.
//
// Files: app.go builds the services; caller.go confirms the signed-in
// caller; register.go, users.go and update.go are the account use cases;
// login.go, refresh.go, throttle.go and unlock.go the sessions and the
// lock-out; audit.go, events.go, keys.go and import.go the rest.
package application
