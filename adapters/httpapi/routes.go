package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// The routes, by area. Each area's group carries its checks in the
// contract's order: the form of the request's headers, then (for /auth/*
// and the routes that check a password or a code) the per-IP allowance,
// then authentication, then the query string.

// routeOperations routes what operators and tools read: health, the
// published keys, the OpenAPI document and its page, and the metrics when
// they are served here.
func (h *handler) routeOperations(e *gin.Engine, metrics http.Handler) {
	e.GET("/healthz", h.healthz)
	e.GET("/readyz", h.readyz)
	e.GET("/.well-known/jwks.json", h.jwks)
	// The OpenAPI document (converted from YAML once, here) and the
	// reference page that renders it.
	_ = openAPIDocument()
	e.GET("/openapi.json", h.openAPI)
	e.GET("/docs", h.docs)
	e.GET("/docs/:file", h.docsAsset)
	if metrics != nil {
		e.GET("/metrics", h.serveMetrics(metrics))
	}
}

// routeAPI routes /api/*: users, the audit trail, sessions, second
// factors and passkeys, the OAuth clients, and the identity providers.
// authenticate holds a personal access token to its scopes on every one
// of them; interactiveOnly marks those a token may never use.
func (h *handler) routeAPI(e *gin.Engine) {
	// Header checks (406, 415, early 413) run before authentication: they
	// are about the form of the request, which is wrong whoever sends it.
	// The query string is checked after authentication, with the rest of
	// the request's shape (the contract's order: 401 before 400).
	api := e.Group("/api", h.apiHeaders)
	h.routeUsers(api)
	h.routeFactors(api)
	h.routeOAuthClients(api)
	h.routeIdentityProviders(api)

	// /api/users/me answers GET only. Without these, PUT and DELETE on it
	// would reach the :id routes and answer 400 invalid_id; they sit outside
	// the header checks so that a wrong method wins over a wrong header, as
	// it does on every other route.
	for _, m := range meMethods {
		e.Handle(m, "/api/users/me", h.meNotAllowed)
	}
}

// routeUsers routes the users, an admin's tools on them, the audit trail
// and the sessions.
func (h *handler) routeUsers(api *gin.RouterGroup) {
	required, optional := h.authenticate(true), h.authenticate(false)
	api.GET("/users", required, h.validQuery, h.listUsers)
	api.GET("/users/me", required, h.validQuery, h.me)
	api.GET("/users/:id", required, h.validQuery, h.getUser)
	// Creating a user hashes a password: the per-IP limits apply
	// (limits.go), once the caller is known.
	api.POST("/users", optional, h.validQuery, h.limitRegistration, h.createUser)
	api.PUT("/users/:id", required, h.validQuery, h.updateUser)
	api.DELETE("/users/:id", required, h.validQuery, h.deleteUser)
	// An admin mails a user a reset link; "me" names the caller.
	api.POST("/users/:id/password-reset", required, h.validQuery, h.sendPasswordReset)
	// An admin lifts the login lock-out of a user's email; "me" names the
	// caller.
	api.POST("/users/:id/unlock", required, h.validQuery, h.unlockUser)
	api.GET("/audit", required, h.validQuery, h.listAudit)
	// A user's sessions; "me" names the caller. A personal access token
	// reads them but never ends one (interactive).
	interactive := h.interactiveOnly
	api.GET("/users/:id/sessions", required, h.validQuery, h.listSessions)
	api.DELETE("/users/:id/sessions", required, interactive, h.validQuery, h.revokeSessions)
	api.DELETE("/users/:id/sessions/:sid", required, interactive, h.validQuery, h.revokeSession)
	// A user's personal access tokens: only the user makes one, and a
	// token neither makes nor revokes one.
	api.POST("/users/:id/tokens", required, interactive, h.validQuery, h.createPersonalToken)
	api.GET("/users/:id/tokens", required, h.validQuery, h.listPersonalTokens)
	api.DELETE("/users/:id/tokens/:tokenId", required, interactive, h.validQuery, h.revokePersonalToken)
}

// routeFactors routes the second factors and passkeys of the caller, and
// an admin's reset of a user's. The routes that check a password or a
// code take from the caller's /auth allowance, once it is known to be
// signed in (limits.go): a stolen access token must not guess at them at
// full speed. A personal access token reads them but changes none
// (interactive).
func (h *handler) routeFactors(api *gin.RouterGroup) {
	required, interactive, limited := h.authenticate(true), h.interactiveOnly, h.limitAuthByIP
	api.GET("/users/me/mfa", required, h.validQuery, h.mfaSummary)
	api.POST("/users/me/mfa/totp", required, interactive, h.validQuery, limited, h.beginTOTP)
	api.POST("/users/me/mfa/totp/confirm", required, interactive, h.validQuery, limited, h.confirmTOTP)
	api.DELETE("/users/me/mfa/totp", required, interactive, h.validQuery, limited, h.disableTOTP)
	api.POST("/users/me/mfa/recovery-codes", required, interactive, h.validQuery, limited, h.renewRecoveryCodes)
	api.DELETE("/users/:id/mfa", required, interactive, h.validQuery, h.resetMFA)
	// Its own route: in OpenAPI a concrete path matches before a templated
	// one, so the document describes DELETE /api/users/me/mfa on its own.
	api.DELETE("/users/me/mfa", required, interactive, h.validQuery, h.resetOwnMFA)
	api.GET("/users/me/passkeys", required, h.validQuery, h.listPasskeys)
	api.POST("/users/me/passkeys/registration", required, interactive, h.validQuery, limited, h.beginPasskeyRegistration)
	api.POST("/users/me/passkeys/registration/finish", required, interactive, h.validQuery, h.finishPasskeyRegistration)
	api.PATCH("/users/me/passkeys/:passkeyId", required, interactive, h.validQuery, h.renamePasskey)
	api.DELETE("/users/me/passkeys/:passkeyId", required, interactive, h.validQuery, limited, h.deletePasskey)
}

// routeOAuthClients routes the OpenID provider's clients, an admin's.
func (h *handler) routeOAuthClients(api *gin.RouterGroup) {
	required := h.authenticate(true)
	api.GET("/oauth-clients", required, h.validQuery, h.listOAuthClients)
	api.POST("/oauth-clients", required, h.validQuery, h.createOAuthClient)
	api.GET("/oauth-clients/:id", required, h.validQuery, h.getOAuthClient)
	api.PUT("/oauth-clients/:id", required, h.validQuery, h.updateOAuthClient)
	api.DELETE("/oauth-clients/:id", required, h.validQuery, h.deleteOAuthClient)
	api.POST("/oauth-clients/:id/secret", required, h.validQuery, h.rotateOAuthClientSecret)
}

// routeIdentityProviders routes the identity providers people sign in
// with, an admin's, and the identities linked to an account, its own or
// an admin's ("me" names the caller).
func (h *handler) routeIdentityProviders(api *gin.RouterGroup) {
	required := h.authenticate(true)
	api.GET("/identity-providers", required, h.validQuery, h.listIdentityProviders)
	api.POST("/identity-providers", required, h.validQuery, h.createIdentityProvider)
	api.GET("/identity-providers/:slug", required, h.validQuery, h.getIdentityProvider)
	api.PUT("/identity-providers/:slug", required, h.validQuery, h.updateIdentityProvider)
	api.DELETE("/identity-providers/:slug", required, h.validQuery, h.deleteIdentityProvider)
	api.GET("/users/:id/identities", required, h.validQuery, h.listIdentities)
	// Unlinking an identity takes a way of signing in away: not for a
	// personal access token.
	api.DELETE("/users/:id/identities/:provider", required, h.interactiveOnly, h.validQuery, h.unlinkIdentity)
}

// routeAuth routes /auth/*: sign-in, refresh, logout and the links by
// mail. Every request to it counts against its client's IP limit, even
// one with a wrong header: the limit is about volume, and it guards the
// password hashing behind login.
func (h *handler) routeAuth(e *gin.Engine) {
	a := e.Group("/auth", h.limitAuthByIP, h.apiHeaders, h.validQuery)
	a.POST("/login", h.login)
	a.POST("/login/mfa", h.loginMFA)
	a.POST("/passkey", h.beginPasskeyLogin)
	a.POST("/passkey/finish", h.finishPasskeyLogin)
	a.POST("/refreshtoken", h.refresh)
	a.POST("/refresh-token", h.refresh)
	a.POST("/logout", h.logout)
	a.POST("/email-verification", h.requestEmailVerification)
	a.POST("/email-verification/confirm", h.confirmEmail)
	a.POST("/password-reset", h.requestPasswordReset)
	a.POST("/password-reset/confirm", h.resetPassword)
	// Sign-in by email alone; turned off, its routes are not there (404).
	if h.emailSignIn.Enabled() {
		a.POST("/email-code", h.requestEmailCode)
		a.POST("/email-code/verify", h.verifyEmailCode)
		a.POST("/magic-link/verify", h.verifyMagicLink)
	}
}

// meMethods are the methods other than GET that gin would route to
// /api/users/:id or that a client might try on /api/users/me.
var meMethods = []string{
	http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
	http.MethodHead, http.MethodOptions,
}
