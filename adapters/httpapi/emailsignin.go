package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// emailCodeRight is the detail of mfa_required after a code or link.
const emailCodeRight = "the code is right; finish the login with a second factor (POST /auth/login/mfa or /auth/passkey)"

// emailCodeRequest uses a sign-in code sent by mail.
type emailCodeRequest struct {
	Email *string `json:"email"`
	Code  *string `json:"code"`
}

// requestEmailCode answers POST /auth/email-code: 202 whatever the email,
// at once (the request is queued, as a reset request is).
func (h *handler) requestEmailCode(c *gin.Context) {
	var req emailRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	if err := h.emailSignIn.RequestCode(c.Request.Context(), deref(req.Email)); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusAccepted)
}

// verifyEmailCode answers POST /auth/email-code/verify as /auth/login
// answers: tokens, or 401 mfa_required.
func (h *handler) verifyEmailCode(c *gin.Context) {
	var req emailCodeRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	res, err := h.emailSignIn.VerifyCode(c.Request.Context(), deref(req.Email), deref(req.Code))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.signedInBy(c, res, emailCodeRight)
}

// verifyMagicLink answers POST /auth/magic-link/verify as /auth/login
// answers.
func (h *handler) verifyMagicLink(c *gin.Context) {
	var req tokenRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	res, err := h.emailSignIn.VerifyLink(c.Request.Context(), deref(req.Token))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.signedInBy(c, res, emailCodeRight)
}
