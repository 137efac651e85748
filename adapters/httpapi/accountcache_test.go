package httpapi_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/userd/userd/domain"
	"github.com/userd/userd/ports"
)

// countingUsers counts the reads of accounts by id that reach the store.
type countingUsers struct {
	ports.UserRepository
	reads atomic.Int64
}

func (c *countingUsers) ByID(ctx context.Context, id domain.UserID) (domain.User, error) {
	c.reads.Add(1)
	return c.UserRepository.ByID(ctx, id)
}

// With the account cache on (the default), a signed-in request reads no
// store once its account is cached, and every change of the account made
// on this node is seen by the very next request: a new name is read, and
// a disabled user, a demoted admin and a deleted account are refused.
func TestAccountCache_changes_are_seen_at_once(t *testing.T) {
	t.Parallel()
	counting := &countingUsers{}
	s := newTestServer(t, withUserRepo(func(r ports.UserRepository) ports.UserRepository {
		counting.UserRepository = r
		return counting
	}))
	admin := s.adminToken()
	me := func(tok string) userBody {
		t.Helper()
		var u userBody
		wantJSON(t, s.do("GET", "/api/users/me", nil, withToken(tok)), http.StatusOK, &u)
		return u
	}
	refused := func(tok string) {
		t.Helper()
		wantProblem(t, s.do("GET", "/api/users/me", nil, withToken(tok)), http.StatusUnauthorized, "unauthorized")
	}
	change := func(id string, body map[string]any) {
		t.Helper()
		wantJSON(t, s.do("PUT", "/api/users/"+id, body, withToken(admin)), http.StatusOK, nil)
	}

	ada, tok := s.customer("Ada", "ada@example.com")
	me(tok.AccessToken)
	before := counting.reads.Load()
	for range 3 {
		me(tok.AccessToken)
	}
	if n := counting.reads.Load() - before; n != 0 {
		t.Fatalf("%d reads of the store for 3 requests of a cached account, want 0", n)
	}
	change(ada.ID, map[string]any{"name": "Ada L."})
	if got := me(tok.AccessToken).Name; got != "Ada L." {
		t.Errorf("name %q right after the rename", got)
	}
	change(ada.ID, map[string]any{"disabled": true})
	refused(tok.AccessToken)

	bob, _ := s.customer("Bob", "bob@example.com")
	change(bob.ID, map[string]any{"profiles": []string{"ROLE_ADMIN"}})
	bobAdmin := s.login("bob@example.com", custPassword)
	me(bobAdmin.AccessToken)
	change(bob.ID, map[string]any{"profiles": []string{"ROLE_CUSTOMER"}})
	refused(bobAdmin.AccessToken)

	carl, carlTok := s.customer("Carl", "carl@example.com")
	me(carlTok.AccessToken)
	wantNoContent(t, s.do("DELETE", "/api/users/"+carl.ID, nil, withToken(admin)))
	refused(carlTok.AccessToken)
}
