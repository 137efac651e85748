package httpapi

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// listUsers answers GET /api/users: a page of users ordered by id, and a
// Link to the next page when there is one.
func (h *handler) listUsers(c *gin.Context) {
	in := application.ListInput{Limit: c.Query("limit"), After: c.Query("after"), Email: c.Query("email")}
	page, err := h.users.List(c.Request.Context(), principal(c), in)
	if err != nil {
		h.fail(c, err)
		return
	}
	if page.Next != "" {
		c.Header("Link", nextLink(page.Page.Limit, page.Next, in.Email))
	}
	h.writeJSON(c, http.StatusOK, toUserResponses(page.Items))
}

// nextLink is the RFC 8288 link to the page after the one that ended at
// last, with the same limit and filter.
func nextLink(limit int, last domain.UserID, email string) string {
	q := "limit=" + strconv.Itoa(limit) + "&after=" + last.String()
	if email != "" {
		q += "&email=" + url.QueryEscape(email)
	}
	return `</api/users?` + q + `>; rel="next"`
}

func (h *handler) me(c *gin.Context) {
	u, err := h.users.Me(c.Request.Context(), principal(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, toUserResponse(u))
}

func (h *handler) getUser(c *gin.Context) {
	u, err := h.users.Get(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, toUserResponse(u))
}

// createUser answers POST /api/users, open to anonymous callers while
// registration is open; the application decides who may create what.
func (h *handler) createUser(c *gin.Context) {
	var req createUserRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	u, err := h.users.Register(c.Request.Context(), principal(c), req.toInput())
	if err != nil {
		h.fail(c, err)
		return
	}
	c.Header("Location", "/api/users/"+u.ID.String())
	h.writeJSON(c, http.StatusCreated, toUserResponse(u))
}

func (h *handler) updateUser(c *gin.Context) {
	var req updateUserRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	if !h.allowPasswordUpdate(c, req) {
		return
	}
	u, err := h.users.Update(c.Request.Context(), principal(c), c.Param("id"), req.toInput())
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeJSON(c, http.StatusOK, toUserResponse(u))
}

func (h *handler) deleteUser(c *gin.Context) {
	if err := h.users.Delete(c.Request.Context(), principal(c), c.Param("id")); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// meNotAllowed answers every method but GET on /api/users/me.
func (h *handler) meNotAllowed(c *gin.Context) {
	c.Header("Allow", http.MethodGet)
	h.writeProblem(c, methodNotAllowed())
}
