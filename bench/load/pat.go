package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// scPATRead is the authenticated read with a personal access token
// (issue 28): GET /api/users/me with a udp_ token, whose every use reads
// the token and its user from the store, priced against the read with a
// JWT, which the verifier checks alone.
const scPATRead = "pat-read"

// patReadStep: GET /api/users/me with the pool's personal access tokens,
// going round them from the worker's own place, as readStep goes round
// the access tokens.
func (t *target) patReadStep(w int) step {
	i := w % len(t.pats)
	return func() error {
		auth := t.pats[i]
		i = (i + 1) % len(t.pats)
		return do(t.hc, newGet(t.meURL, auth), http.StatusOK, nil)
	}
}

// ensurePATs makes one read-only personal access token for each session
// of the pool, with the session's access token, once: they live a day,
// longer than any run. Against a --target used again and again, a user
// holds at most 50 live tokens (409 token_limit).
func (t *target) ensurePATs(ctx context.Context, conc int) error {
	if len(t.pats) == len(t.pool) {
		return nil
	}
	tokensURL := t.base.ResolveReference(&url.URL{Path: "/api/users/me/tokens"})
	body := []byte(`{"name":"load","scopes":["users:read"],"expiresInDays":1}`)
	pats := make([][]string, len(t.pool))
	err := parallel(ctx, len(t.pool), conc, func(i int) error {
		var created struct {
			Token string `json:"token"`
		}
		if err := do(t.hc, newPost(tokensURL, t.pool[i].auth, body), http.StatusCreated, &created); err != nil {
			return fmt.Errorf("make a personal access token for pat-read: %w", err)
		}
		pats[i] = bearer(created.Token)
		return nil
	})
	if err != nil {
		return err
	}
	t.pats = pats
	return nil
}

// patGoals hold pat-read to issue 28's goal: at least 0.8 × the read
// with a JWT at each concurrency level, beside the read of the same path
// (me) for the same work with a JWT.
func patGoals(r *Report) []Goal {
	var gs []Goal
	for _, p := range r.Results {
		if p.Scenario != scPATRead {
			continue
		}
		if read, ok := r.point("read", p.Concurrency); ok && read.RPS > 0 {
			v := p.RPS / read.RPS
			gs = append(gs, Goal{Name: scPATRead + " req/s ÷ read req/s", Concurrency: p.Concurrency,
				Value: round(v, 3), Target: "≥ 0.8", Met: yes(v >= 0.8), Noisy: noisy(p, read)})
		}
		if me, ok := r.point("me", p.Concurrency); ok && me.RPS > 0 {
			gs = append(gs, Goal{Name: scPATRead + " req/s ÷ me req/s", Concurrency: p.Concurrency,
				Value: round(p.RPS/me.RPS, 3), Noisy: noisy(p, me)})
		}
	}
	return gs
}
