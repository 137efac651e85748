package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

func (h *handler) login(c *gin.Context) {
	var req loginRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	res, err := h.auth.Login(c.Request.Context(), application.LoginInput{Email: deref(req.Email), Password: deref(req.Password)})
	if err != nil {
		h.fail(c, err)
		return
	}
	h.signedIn(c, res)
}

// passwordRight is the detail of mfa_required after a password.
const passwordRight = "the password is right; finish the login with a second factor (POST /auth/login/mfa or /auth/passkey)"

// signedIn answers a sign-in: the token response of the session it
// opened, or 401 mfa_required with the mfaToken and the methods of the
// second step it asks for.
func (h *handler) signedIn(c *gin.Context, res application.SignInResult) {
	h.signedInBy(c, res, passwordRight)
}

// signedInBy is signedIn with the detail of mfa_required, which says
// what was right.
func (h *handler) signedInBy(c *gin.Context, res application.SignInResult, firstStepRight string) {
	if step := res.SecondStep; step != nil {
		h.writeProblem(c, problem{Status: http.StatusUnauthorized, Code: "mfa_required",
			Detail: firstStepRight, MFAToken: step.MFAToken, MFAMethods: step.Methods})
		return
	}
	h.writeTokens(c, *res.Tokens)
}

// refresh answers both spellings of the refresh route.
func (h *handler) refresh(c *gin.Context) {
	token, ok := h.refreshToken(c)
	if !ok {
		return
	}
	pair, err := h.auth.Refresh(c.Request.Context(), token)
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeTokens(c, pair)
}

// logout ends the token's session; an unknown token is fine, since the
// caller's goal, no live session for it, holds.
func (h *handler) logout(c *gin.Context) {
	token, ok := h.refreshToken(c)
	if !ok {
		return
	}
	if err := h.auth.Logout(c.Request.Context(), token); err != nil {
		h.fail(c, err)
		return
	}
	if h.browser.cookie {
		clearRefreshCookie(c)
	}
	c.Status(http.StatusNoContent)
}

// refreshToken reads {"refreshToken"}; a missing or empty one is a
// validation failure (the request's shape), not an invalid token. With
// the refresh cookie, the body may be left out or hold no token: the
// cookie's is taken then.
func (h *handler) refreshToken(c *gin.Context) (string, bool) {
	var req refreshRequest
	decode := decodeJSON
	if h.browser.cookie {
		decode = decodeOptionalJSON
	}
	if err := decode(c.Request, &req); err != nil {
		h.fail(c, err)
		return "", false
	}
	if (req.RefreshToken == nil || *req.RefreshToken == "") && h.browser.cookie {
		if tok := refreshCookie(c.Request); tok != "" {
			return tok, true
		}
	}
	if req.RefreshToken == nil || *req.RefreshToken == "" {
		var verr domain.ValidationError
		verr.Add("refreshToken", "must not be empty")
		h.fail(c, &verr)
		return "", false
	}
	return *req.RefreshToken, true
}

// writeTokens sends a token response. Tokens must stay out of every cache
// (RFC 6749, section 5.1): requestID sets no-store already, Pragma covers
// HTTP/1.0 caches. With the refresh cookie, the refresh token goes into
// the cookie and stays out of the body, out of reach of the page's
// scripts.
func (h *handler) writeTokens(c *gin.Context, pair application.TokenPair) {
	if s := scopeOf(c); s != nil {
		s.userID = pair.User.ID
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Pragma", "no-cache")
	res := toTokenResponse(pair, h.clock.Now())
	if h.browser.cookie {
		setRefreshCookie(c, res.RefreshToken, res.RefreshExpiresIn)
		res.RefreshToken = ""
	}
	h.writeJSON(c, http.StatusOK, res)
}
