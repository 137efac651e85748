package application

import (
	"context"
	"testing"

	"github.com/userd/userd/domain"
)

// Without a hook, asking for claims allocates nothing: the request, and
// the user's representation in it, are built only for a hook.
func TestClaimsHook_unset_costs_nothing(t *testing.T) {
	var shared *claimsHook // newShared leaves it nil without Deps.ClaimsHook
	unset := &claimsHook{}
	u := domain.User{ID: "6740f1c2a1b2c3d4e5f60718", Email: "ada@example.com", Profiles: domain.Profiles{domain.ProfileCustomer}}
	ctx := context.Background()
	for _, h := range []*claimsHook{shared, unset} {
		allocs := testing.AllocsPerRun(100, func() {
			if c, err := h.forUser(ctx, domain.ClaimsGrantSignIn, u, "sid", domain.AMRPassword, "", nil); err != nil || !c.Empty() {
				t.Fatalf("forUser = %v, %v", c, err)
			}
			if c, err := h.forClient(ctx, "cli_1", nil); err != nil || !c.Empty() {
				t.Fatalf("forClient = %v, %v", c, err)
			}
		})
		if allocs != 0 {
			t.Errorf("%v allocations without a hook", allocs)
		}
	}
}
