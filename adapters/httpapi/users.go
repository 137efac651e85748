package httpapi

import (
	"context"
	"errors"
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
	in := application.ListInput{Limit: c.Query("limit"), After: c.Query("after"),
		Email: c.Query("email"), EmailPrefix: c.Query("emailPrefix")}
	page, err := h.users.List(c.Request.Context(), principal(c), in)
	if err != nil {
		h.fail(c, err)
		return
	}
	if page.Next != "" {
		c.Header("Link", nextLink("/api/users", page.Page.Limit, page.Next.String(),
			"email", in.Email, "emailPrefix", in.EmailPrefix))
	}
	h.writeJSON(c, http.StatusOK, toUserResponses(page.Items))
}

// nextLink is the RFC 8288 link to the page of the list at path after the
// one that ended at after, with the same limit and filters: filters are
// name, value pairs, kept as the client wrote them and left out when
// empty, so that the next page is judged exactly as the first was.
func nextLink(path string, limit int, after string, filters ...string) string {
	q := "limit=" + strconv.Itoa(limit) + "&after=" + url.QueryEscape(after)
	for i := 0; i+1 < len(filters); i += 2 {
		if filters[i+1] != "" {
			q += "&" + filters[i] + "=" + url.QueryEscape(filters[i+1])
		}
	}
	return "<" + path + "?" + q + `>; rel="next"`
}

func (h *handler) me(c *gin.Context) {
	u, err := h.users.Me(c.Request.Context(), principal(c))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeUser(c, http.StatusOK, u)
}

func (h *handler) getUser(c *gin.Context) {
	u, err := h.users.Get(c.Request.Context(), principal(c), c.Param("id"))
	if err != nil {
		h.fail(c, err)
		return
	}
	h.writeUser(c, http.StatusOK, u)
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
	h.writeUser(c, http.StatusCreated, u)
}

func (h *handler) updateUser(c *gin.Context) {
	var req updateUserRequest
	if err := decodeJSON(c.Request, &req); err != nil {
		h.fail(c, err)
		return
	}
	if !h.allowCredentialUpdate(c, req) {
		return
	}
	u, err := h.users.Update(c.Request.Context(), principal(c), c.Param("id"), req.toInput())
	if err != nil {
		if errors.Is(err, domain.ErrEmailTaken) && !h.allowEmailTaken(c) {
			return
		}
		h.fail(c, err)
		return
	}
	h.writeUser(c, http.StatusOK, u)
}

func (h *handler) deleteUser(c *gin.Context) {
	if err := h.users.Delete(c.Request.Context(), principal(c), c.Param("id")); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// unlockUser answers POST /api/users/{id}/unlock: an admin's 204 once the
// login lock-out of the user's email is lifted.
func (h *handler) unlockUser(c *gin.Context) {
	h.userAction(c, h.auth.Unlock, http.StatusNoContent)
}

// userAction answers an admin's action on the user of the path that takes
// no body (none, or {}): status once act has done it.
func (h *handler) userAction(c *gin.Context, act func(context.Context, *domain.Principal, string) error, status int) {
	if err := decodeOptionalJSON(c.Request, &struct{}{}); err != nil {
		h.fail(c, err)
		return
	}
	if err := act(c.Request.Context(), principal(c), pathUser(c)); err != nil {
		h.fail(c, err)
		return
	}
	c.Status(status)
}

// meNotAllowed answers every method but GET on /api/users/me.
func (h *handler) meNotAllowed(c *gin.Context) {
	c.Header("Allow", http.MethodGet)
	h.writeProblem(c, methodNotAllowed())
}
