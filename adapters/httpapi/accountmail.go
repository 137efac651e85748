package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// requestEmailVerification answers POST /auth/email-verification: 202
// whether or not the email is an account's, and at once (the request is
// queued, never served inline).
func (h *handler) requestEmailVerification(c *gin.Context) {
	var req emailRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	if err := h.mail.RequestEmailVerification(c.Request.Context(), deref(req.Email)); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusAccepted)
}

// confirmEmail answers POST /auth/email-verification/confirm: the user,
// its email verified.
func (h *handler) confirmEmail(c *gin.Context) {
	var req tokenRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	u, err := h.mail.ConfirmEmail(c.Request.Context(), deref(req.Token))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeUser(c, http.StatusOK, u)
}

// requestPasswordReset answers POST /auth/password-reset: 202, always.
func (h *handler) requestPasswordReset(c *gin.Context) {
	var req emailRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	if err := h.mail.RequestPasswordReset(c.Request.Context(), deref(req.Email)); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusAccepted)
}

// sendPasswordReset answers POST /api/users/{id}/password-reset: an
// admin's 202 once the link is queued.
func (h *handler) sendPasswordReset(c *gin.Context) {
	h.userAction(c, h.mail.SendPasswordReset, http.StatusAccepted)
}

// resetPassword answers POST /auth/password-reset/confirm: 204 once the
// password is set.
func (h *handler) resetPassword(c *gin.Context) {
	var req resetRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	if err := h.mail.ResetPassword(c.Request.Context(), deref(req.Token), deref(req.Password)); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
