package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// Request and response bodies of second factors and passkeys.

type currentPasswordRequest struct {
	CurrentPassword *string `json:"currentPassword"`
}

type codeRequest struct {
	Code *string `json:"code"`
}

type mfaLoginRequest struct {
	MFAToken     *string `json:"mfaToken"`
	Code         *string `json:"code"`
	RecoveryCode *string `json:"recoveryCode"`
}

type mfaTokenRequest struct {
	MFAToken *string `json:"mfaToken"`
}

type passkeyRegistrationRequest struct {
	CeremonyID *string         `json:"ceremonyId"`
	Name       *string         `json:"name"`
	Credential json.RawMessage `json:"credential"`
}

type passkeyRenameRequest struct {
	Name *string `json:"name"`
}

type passkeyLoginRequest struct {
	CeremonyID *string         `json:"ceremonyId"`
	Credential json.RawMessage `json:"credential"`
	MFAToken   *string         `json:"mfaToken"`
}

type mfaSummaryResponse struct {
	TOTP              bool `json:"totp"`
	Passkeys          int  `json:"passkeys"`
	RecoveryCodesLeft int  `json:"recoveryCodesLeft"`
}

type totpEnrolmentResponse struct {
	Secret     string `json:"secret"`
	OTPAuthURI string `json:"otpauthUri"`
}

type recoveryCodesResponse struct {
	RecoveryCodes []string `json:"recoveryCodes"`
}

type passkeyOptionsResponse struct {
	CeremonyID string          `json:"ceremonyId"`
	PublicKey  json.RawMessage `json:"publicKey"`
}

type passkeyResponse struct {
	ID         string  `json:"id"`
	Name       string  `json:"name"`
	CreatedAt  string  `json:"createdAt"`
	LastUsedAt *string `json:"lastUsedAt"`
}

func toPasskeyResponse(p domain.Passkey) passkeyResponse {
	r := passkeyResponse{ID: string(p.ID), Name: p.Name, CreatedAt: formatTime(p.CreatedAt)}
	if p.LastUsedAt != nil {
		s := formatTime(*p.LastUsedAt)
		r.LastUsedAt = &s
	}
	return r
}

// mfaSummary answers GET /api/users/me/mfa.
func (h *handler) mfaSummary(c *gin.Context) {
	s, err := h.mfa.Summary(c.Request.Context(), principal(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, mfaSummaryResponse{TOTP: s.TOTP, Passkeys: s.Passkeys, RecoveryCodesLeft: s.RecoveryCodesLeft})
}

// beginTOTP answers POST /api/users/me/mfa/totp: a pending factor, its
// secret shown once.
func (h *handler) beginTOTP(c *gin.Context) {
	var req currentPasswordRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	e, err := h.mfa.BeginTOTP(c.Request.Context(), principal(c), req.CurrentPassword)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusCreated, totpEnrolmentResponse{Secret: e.Secret, OTPAuthURI: e.URI})
}

// confirmTOTP answers POST /api/users/me/mfa/totp/confirm: the factor is
// active, and its recovery codes are shown once.
func (h *handler) confirmTOTP(c *gin.Context) {
	var req codeRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	codes, err := h.mfa.ConfirmTOTP(c.Request.Context(), principal(c), req.Code)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, recoveryCodesResponse{RecoveryCodes: codes})
}

// disableTOTP answers DELETE /api/users/me/mfa/totp, which takes a code in
// its body.
func (h *handler) disableTOTP(c *gin.Context) {
	var req codeRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	if err := h.mfa.DisableTOTP(c.Request.Context(), principal(c), req.Code); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// renewRecoveryCodes answers POST /api/users/me/mfa/recovery-codes. The
// body may be empty for an account whose only factors are passkeys.
func (h *handler) renewRecoveryCodes(c *gin.Context) {
	var req codeRequest
	if err := decodeOptionalJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	codes, err := h.mfa.RenewRecoveryCodes(c.Request.Context(), principal(c), req.Code)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, recoveryCodesResponse{RecoveryCodes: codes})
}

// resetMFA answers DELETE /api/users/{id}/mfa, for admins.
func (h *handler) resetMFA(c *gin.Context) { h.resetMFAOf(c, c.Param("id")) }

// resetOwnMFA answers DELETE /api/users/me/mfa: an admin's reset of its
// own factors.
func (h *handler) resetOwnMFA(c *gin.Context) {
	id := ""
	if p := principal(c); p != nil {
		id = p.UserID.String()
	}
	h.resetMFAOf(c, id)
}

func (h *handler) resetMFAOf(c *gin.Context, rawID string) {
	if err := decodeOptionalJSON(c.Request, &struct{}{}); err != nil {
		h.fail(c, err)
		return
	}
	if err := h.mfa.Reset(c.Request.Context(), principal(c), rawID); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// loginMFA answers POST /auth/login/mfa, the second step of a login.
func (h *handler) loginMFA(c *gin.Context) {
	var req mfaLoginRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	res, err := h.auth.LoginMFA(c.Request.Context(), application.MFALoginInput{
		MFAToken: req.MFAToken, Code: req.Code, RecoveryCode: req.RecoveryCode})
	if err != nil {
		h.fail(c, err)
		return
	}
	h.signedIn(c, res)
}

// listPasskeys answers GET /api/users/me/passkeys.
func (h *handler) listPasskeys(c *gin.Context) {
	ps, err := h.passkeys.List(c.Request.Context(), principal(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	out := make([]passkeyResponse, len(ps))
	for i, p := range ps {
		out[i] = toPasskeyResponse(p)
	}
	h.writeJSON(c, http.StatusOK, out)
}

// beginPasskeyRegistration answers POST /api/users/me/passkeys/registration,
// whose body is {"currentPassword"}: {} or none only for an account
// without a password (the use case judges).
func (h *handler) beginPasskeyRegistration(c *gin.Context) {
	var req currentPasswordRequest
	if err := decodeOptionalJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	o, err := h.passkeys.BeginRegistration(c.Request.Context(), principal(c), req.CurrentPassword)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, passkeyOptionsResponse{CeremonyID: o.CeremonyID, PublicKey: o.PublicKey})
}

// finishPasskeyRegistration answers
// POST /api/users/me/passkeys/registration/finish.
func (h *handler) finishPasskeyRegistration(c *gin.Context) {
	var req passkeyRegistrationRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	p, err := h.passkeys.FinishRegistration(c.Request.Context(), principal(c), application.PasskeyRegistrationInput{
		CeremonyID: req.CeremonyID, Name: req.Name, Credential: req.Credential})
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusCreated, toPasskeyResponse(p))
}

// renamePasskey answers PATCH /api/users/me/passkeys/{id}: the passkey,
// renamed.
func (h *handler) renamePasskey(c *gin.Context) {
	var req passkeyRenameRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	p, err := h.passkeys.Rename(c.Request.Context(), principal(c), c.Param("passkeyId"), deref(req.Name))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, toPasskeyResponse(p))
}

// deletePasskey answers DELETE /api/users/me/passkeys/{id}, whose body is
// {"currentPassword"}, or {} (or none) from a session that signed in with
// a second factor.
func (h *handler) deletePasskey(c *gin.Context) {
	var req currentPasswordRequest
	if err := decodeOptionalJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	if err := h.passkeys.Delete(c.Request.Context(), principal(c), c.Param("passkeyId"), req.CurrentPassword); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// beginPasskeyLogin answers POST /auth/passkey: a discoverable login, or
// with {"mfaToken"} the second step of a password login.
func (h *handler) beginPasskeyLogin(c *gin.Context) {
	var req mfaTokenRequest
	if err := decodeOptionalJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	o, err := h.passkeys.BeginLogin(c.Request.Context(), req.MFAToken)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, passkeyOptionsResponse{CeremonyID: o.CeremonyID, PublicKey: o.PublicKey})
}

// finishPasskeyLogin answers POST /auth/passkey/finish with the token
// response.
func (h *handler) finishPasskeyLogin(c *gin.Context) {
	var req passkeyLoginRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	res, err := h.passkeys.FinishLogin(c.Request.Context(), application.PasskeyLoginInput{
		CeremonyID: req.CeremonyID, Credential: req.Credential, MFAToken: req.MFAToken})
	if err != nil {
		h.fail(c, err)
		return
	}
	h.signedIn(c, res)
}
