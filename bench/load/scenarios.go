package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"
)

// stepFactory returns the scenario's step maker: called once per worker
// and point, it returns that worker's step.
func (t *target) stepFactory(name string) func(w int) step {
	switch name {
	case "read":
		return t.readStep
	case "read-many":
		return t.readManyStep
	case "me":
		return t.meStep
	case scPATRead:
		return t.patReadStep
	case "list":
		return t.listStep
	case "create":
		return t.createStep
	case "login":
		return t.loginStep
	case "refresh":
		return t.refreshStep
	case "mixed":
		return t.mixedStep
	case "reset":
		return t.linkRequestStep(t.resetURL)
	case "verify":
		return t.linkRequestStep(t.verifyURL)
	case scEmailCodeRequest:
		return t.linkRequestStep(t.emailCodeURL)
	case scOIDCFlow:
		return t.oidcFlowStep
	case scOIDCRefresh:
		return t.oidcRefreshStep
	case scOIDCClientCredentials:
		return t.oidcClientCredentialsStep
	case scOIDCUserInfo:
		return t.oidcUserInfoStep
	}
	panic("unknown scenario " + name)
}

// readStep: GET /api/users/{own id} with that user's token, going round
// the pool from the worker's own place in it.
func (t *target) readStep(w int) step {
	i := w % len(t.pool)
	return func() error {
		s := t.pool[i]
		i = (i + 1) % len(t.pool)
		return do(t.hc, newGet(s.readURL, s.auth), http.StatusOK, nil)
	}
}

// verifiedCacheSize is the size of userd's verified-token cache
// (adapters/jwtissuer): read-many goes round more tokens than that, so
// that no read finds its token there (the cache drops the least recently
// used, which, round a cycle longer than itself, is always the next one).
const verifiedCacheSize = 10_000

// readManyStep: GET /api/users/{own id} as readStep, but going round the
// many tokens of mintMany, each read paying the token's full verification.
// The workers share one turn: a token comes back after len(t.many)
// requests, more than the cache holds, whereas workers each going round
// from their own place would read the same tokens shortly after each
// other and find them cached.
func (t *target) readManyStep(int) step {
	return func() error {
		s := t.many[(t.manyNext.Add(1)-1)%int64(len(t.many))]
		return do(t.hc, newGet(s.readURL, s.auth), http.StatusOK, nil)
	}
}

// mintMany makes n distinct access tokens for read-many, unless those of
// the last call are still that many and within the first half of their
// lifetime. They cost no password hash: each is the answer of a refresh
// of one of the pool's chains (one chain per goroutine: a chain's
// refreshes follow each other), and all stay valid, as the chains'
// sessions do.
func (t *target) mintMany(ctx context.Context, n, conc int) error {
	if len(t.many) == n && (t.accessTTL <= 0 || time.Since(t.manyAt) < t.accessTTL/2) {
		return nil
	}
	start := time.Now()
	per := (n + len(t.pool) - 1) / len(t.pool)
	many := make([]*session, per*len(t.pool))
	err := parallel(ctx, len(t.pool), conc, func(i int) error {
		for j := range per {
			body := fmt.Appendf(nil, `{"refreshToken":%q}`, t.chains[i])
			var tr tokenResponse
			if err := do(t.hc, newPost(t.refreshURL, nil, body), http.StatusOK, &tr); err != nil {
				return fmt.Errorf("mint a token for read-many: %w", err)
			}
			t.chains[i] = tr.RefreshToken
			many[j*len(t.pool)+i] = &session{user: t.pool[i].user, auth: bearer(tr.AccessToken), readURL: t.pool[i].readURL}
		}
		return nil
	})
	if err != nil {
		return err
	}
	t.many, t.manyAt = many[:n], start
	return nil
}

// bareStep loads the reference server exactly as readStep loads userd: the
// same client, the same headers, the same rotation.
func (t *target) bareStep(u *url.URL) func(w int) step {
	return func(w int) step {
		i := w % len(t.pool)
		return func() error {
			s := t.pool[i]
			i = (i + 1) % len(t.pool)
			return do(t.hc, newGet(u, s.auth), http.StatusOK, nil)
		}
	}
}

func (t *target) meStep(w int) step {
	i := w % len(t.pool)
	return func() error {
		s := t.pool[i]
		i = (i + 1) % len(t.pool)
		return do(t.hc, newGet(t.meURL, s.auth), http.StatusOK, nil)
	}
}

func (t *target) listStep(int) step {
	return func() error {
		return do(t.hc, newGet(t.listURL, t.adminAuth), http.StatusOK, nil)
	}
}

// createStep: the admin creates a user with a fresh email.
func (t *target) createStep(int) step {
	return func() error {
		n := t.created.Add(1)
		body := fmt.Appendf(nil, `{"name":"Load Created","email":"new-%s-%d@example.com","password":%q}`, t.runTag, n, userPassword)
		return do(t.hc, newPost(t.usersURL, t.adminAuth, body), http.StatusCreated, nil)
	}
}

// loginStep logs in the seeded users in turn.
func (t *target) loginStep(w int) step {
	i := (w * 7919) % len(t.users)
	return func() error {
		body := t.users[i].loginBody
		i = (i + 1) % len(t.users)
		return do(t.hc, newPost(t.loginURL, nil, body), http.StatusOK, nil)
	}
}

// refreshStep: worker w rotates its own chain, sending each time the token
// the previous refresh returned. A broken chain is started again with a
// login, outside the count but inside the time.
func (t *target) refreshStep(w int) step {
	return func() error {
		body := fmt.Appendf(nil, `{"refreshToken":%q}`, t.chains[w])
		var tr tokenResponse
		err := do(t.hc, newPost(t.refreshURL, nil, body), http.StatusOK, &tr)
		if err == nil && tr.RefreshToken == "" {
			err = errors.New("refresh answer without a refresh token")
		}
		if err != nil {
			if again, lerr := t.login(t.users[t.pool[w].user].loginBody); lerr == nil {
				t.chains[w] = again.RefreshToken
			}
			return err
		}
		t.chains[w] = tr.RefreshToken
		return nil
	}
}

// linkRequestStep: POST {"email"} of the seeded users in turn to a route
// that asks for a link by mail (202). The answer queues the request; the
// sender sends the message in the background, to the loader's SMTP sink.
func (t *target) linkRequestStep(u *url.URL) func(w int) step {
	return func(w int) step {
		i := (w * 7919) % len(t.users)
		return func() error {
			body := t.users[i].emailBody
			i = (i + 1) % len(t.users)
			return do(t.hc, newPost(u, nil, body), http.StatusAccepted, nil)
		}
	}
}

// mixedStep: 80% read, 10% refresh, 5% login, 5% create.
func (t *target) mixedStep(w int) step {
	read, refresh, login, create := t.readStep(w), t.refreshStep(w), t.loginStep(w), t.createStep(w)
	rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano()))) //nolint:gosec // G404: picks the next request of the mix; no secret depends on it
	return func() error {
		switch r := rng.IntN(100); {
		case r < 80:
			return read()
		case r < 90:
			return refresh()
		case r < 95:
			return login()
		default:
			return create()
		}
	}
}

// fetchReadBody returns the body of a user read, which the bare reference
// server answers.
func (t *target) fetchReadBody() ([]byte, error) {
	s := t.pool[0]
	res, err := t.hc.Do(newGet(s.readURL, s.auth)) //nolint:gosec // G704: a read from the userd under test, started by the loader or named by --target
	if err != nil {
		return nil, err
	}
	defer func() { _ = res.Body.Close() }() // read to the end below; Close has nothing to add
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read for the reference body: status %d", res.StatusCode)
	}
	return b, nil
}
