package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// ConsoleCookie is the cookie of a signed-in person on the web pages, the
// admin console and the account page alike. The __Host- prefix makes the
// browser refuse it unless it is Secure, has Path=/ and no Domain, so that
// no other host, and no page of another path, can set or overwrite it.
const ConsoleCookie = "__Host-userd_console"

// The timeouts of a console session (the contract's): it ends after
// ConsoleIdleTimeout without a request, and ConsoleAbsoluteTimeout after
// its sign-in however busy it is.
const (
	ConsoleIdleTimeout     = 30 * time.Minute
	ConsoleAbsoluteTimeout = 8 * time.Hour
)

// consoleLimits are the timeouts as the session's store keeps them: a
// session of the pages ends there too once it has lapsed, so that it is
// neither listed nor refreshed whether or not its cookie comes back.
var consoleLimits = domain.SessionLimits{Absolute: ConsoleAbsoluteTimeout, Idle: ConsoleIdleTimeout}

// signInContext is the context of a sign-in on the pages: the session it
// opens carries consoleLimits. The pages refresh the session's access
// token when a request finds it expired, as domain.SessionLimits.Idle
// expects of its client.
func signInContext(r *http.Request) context.Context {
	meta := domain.RequestMetaFrom(r.Context())
	meta.SessionLimits = consoleLimits
	return domain.WithRequestMeta(r.Context(), meta)
}

// consoleSealAD binds a sealed cookie to its purpose: a value the secret
// box sealed for anything else (a signing key, a TOTP secret) does not
// open as a cookie.
var consoleSealAD = []byte("userd console session v1")

// consoleState is what the cookie holds, sealed with the secret box
// (AES-GCM under USERD_SECRET_KEY): the session's tokens, as the API's
// clients hold them, and the two times the timeouts are counted from. The
// browser cannot read it (HttpOnly), and nobody can change it or make one
// without the key. Every node holds the key, so any node serves it.
type consoleState struct {
	Access  string `json:"a"`
	Refresh string `json:"r"`
	// SignedIn and Seen are Unix seconds: the sign-in, and the last
	// request.
	SignedIn int64 `json:"i"`
	Seen     int64 `json:"s"`
}

// visitor is the person a request comes from, once its cookie is checked.
type visitor struct {
	principal *domain.Principal
	user      domain.User
}

// errNoSession is a request without a usable console session.
var errNoSession = errors.New("no console session")

// session returns the request's console session, renewed: its access
// token refreshed once it no longer serves, its idle time counted from
// now, and its cookie set again. A session past a timeout is ended (its
// refresh token revoked, so it leaves the user's session list) and its
// cookie cleared; so is one whose tokens no longer serve (signed out
// elsewhere, revoked by an admin). expired reports a session that ended
// by a timeout, which the sign-in page says.
func (p *Pages) session(w http.ResponseWriter, r *http.Request) (v visitor, expired bool, err error) {
	c, err := r.Cookie(ConsoleCookie)
	if err != nil || c.Value == "" {
		return visitor{}, false, errNoSession
	}
	st, ok := p.openState(c.Value)
	if !ok {
		clearConsoleCookie(w)
		return visitor{}, false, errNoSession
	}
	ctx := r.Context()
	now := p.clock.Now()
	if now.Sub(time.Unix(st.SignedIn, 0)) >= ConsoleAbsoluteTimeout || now.Sub(time.Unix(st.Seen, 0)) >= ConsoleIdleTimeout {
		p.endSession(r, st)
		clearConsoleCookie(w)
		return visitor{}, true, errNoSession
	}
	principal, err := p.svc.Auth.Authenticate(ctx, st.Access)
	if err != nil {
		// Expired, or its session ended: a refresh tells which. Two
		// requests that refresh the same token at once both succeed: the
		// second gets the same successor within the refresh grace window.
		pair, rerr := p.svc.Auth.Refresh(ctx, st.Refresh)
		if rerr != nil {
			if transient(rerr) {
				return visitor{}, false, rerr
			}
			clearConsoleCookie(w)
			return visitor{}, false, errNoSession
		}
		st.Access, st.Refresh = pair.Access.Token, pair.RefreshToken
		if principal, err = p.svc.Auth.Authenticate(ctx, st.Access); err != nil {
			clearConsoleCookie(w)
			return visitor{}, false, errNoSession
		}
	}
	u, err := p.svc.Users.Me(ctx, principal)
	if err != nil {
		if transient(err) {
			return visitor{}, false, err
		}
		clearConsoleCookie(w)
		return visitor{}, false, errNoSession
	}
	st.Seen = now.Unix()
	if err := p.setConsoleCookie(w, st, now); err != nil {
		return visitor{}, false, err
	}
	return visitor{principal: principal, user: u}, false, nil
}

// startSession sets the cookie of a session that pair has just opened.
func (p *Pages) startSession(w http.ResponseWriter, pair application.TokenPair) error {
	now := p.clock.Now()
	return p.setConsoleCookie(w, consoleState{Access: pair.Access.Token, Refresh: pair.RefreshToken,
		SignedIn: now.Unix(), Seen: now.Unix()}, now)
}

// endSession revokes the session's refresh-token family, which ends its
// access tokens on every node too. A failure is logged, not shown: the
// cookie goes anyway, and the family expires on its own.
func (p *Pages) endSession(r *http.Request, st consoleState) {
	if err := p.svc.Auth.Logout(r.Context(), st.Refresh); err != nil {
		p.log.LogAttrs(r.Context(), slog.LevelWarn, "console session not revoked", slog.String("error", err.Error()))
	}
}

// endCookieSession ends the session of the request's cookie: at a
// sign-out, and when a sign-in has just replaced the cookie (live, timed
// out or ended already, nothing can use that session any more). A
// cookie that does not open is no session.
func (p *Pages) endCookieSession(r *http.Request) {
	if c, err := r.Cookie(ConsoleCookie); err == nil {
		if st, ok := p.openState(c.Value); ok {
			p.endSession(r, st)
		}
	}
}

// signOut ends the request's session, if it has one, and clears its
// cookie and the provider's (SSOCookie), which names the same session.
func (p *Pages) signOut(w http.ResponseWriter, r *http.Request) {
	p.endCookieSession(r)
	clearSessionCookies(w)
}

// transient reports an error that says nothing of the session: the store
// is down or the request ran out of time. The session is kept; the page
// says to try again.
func transient(err error) bool {
	return errors.Is(err, domain.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled)
}

func (p *Pages) openState(value string) (consoleState, bool) {
	sealed, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		return consoleState{}, false
	}
	plain, err := p.box.Open(sealed, consoleSealAD)
	if err != nil {
		return consoleState{}, false
	}
	var st consoleState
	if json.Unmarshal(plain, &st) != nil || st.Access == "" || st.Refresh == "" {
		return consoleState{}, false
	}
	return st, true
}

// setConsoleCookie seals st into the cookie. Its Max-Age is what is left
// of the idle time, or of the absolute time when less: a browser drops a
// session that could no longer serve.
func (p *Pages) setConsoleCookie(w http.ResponseWriter, st consoleState, now time.Time) error {
	plain, err := json.Marshal(st)
	if err != nil {
		return err
	}
	sealed, err := p.box.Seal(plain, consoleSealAD)
	if err != nil {
		return err
	}
	left := min(ConsoleIdleTimeout, time.Unix(st.SignedIn, 0).Add(ConsoleAbsoluteTimeout).Sub(now))
	http.SetCookie(w, &http.Cookie{Name: ConsoleCookie, Value: base64.RawURLEncoding.EncodeToString(sealed),
		Path: "/", MaxAge: max(int(left/time.Second), 1), Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return nil
}

// signedOutTo ends a visit whose session has just ended on the sign-in
// page of a, with the notice done: the cookie that the guard renewed
// earlier in the answer is replaced by one that clears it (its tokens no
// longer serve).
func signedOutTo(w http.ResponseWriter, r *http.Request, a *area, done string) {
	w.Header().Del("Set-Cookie")
	clearSessionCookies(w)
	seeOther(w, r, a.LoginPath(), done)
}

func clearConsoleCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: ConsoleCookie, Value: "", Path: "/", MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
}
