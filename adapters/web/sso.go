package web

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"time"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
)

// SSOCookie is the OpenID provider's browser session: the sign-in that
// /oauth2/authorize and /oauth2/end_session see. It is a cookie of its
// own beside ConsoleCookie because an app's link to the provider is a
// cross-site navigation, on which the console's SameSite=Strict cookie is
// not sent; this one is Lax, so it goes with a top-level GET from another
// site and never with another site's POST or subresource. It holds no
// token: only who signed in and which session (the console session's
// refresh family), so that a leak of it grants nothing the provider does
// not check against the live session.
const SSOCookie = "__Host-userd_sso"

// ssoSealAD binds the sealed cookie to its purpose: a console cookie's
// value (sealed under consoleSealAD) does not open as this one, nor this
// one as a console cookie.
var ssoSealAD = []byte("userd provider browser session v1")

// ssoState is what SSOCookie holds, sealed with the secret box as the
// console cookie is, with the same two times its timeouts count from.
type ssoState struct {
	UserID    string `json:"u"`
	SessionID string `json:"s"`
	SignedIn  int64  `json:"i"`
	Seen      int64  `json:"t"`
}

// startSSO sets the provider's cookie for the session that principal's
// token belongs to, signed in now. With the provider off there is no
// such cookie: nothing would read it.
func (p *Pages) startSSO(w http.ResponseWriter, principal *domain.Principal) error {
	if p.provider == nil || principal == nil {
		return nil
	}
	now := p.clock.Now()
	return p.setSSOCookie(w, ssoState{UserID: string(principal.UserID), SessionID: principal.Session.ID,
		SignedIn: now.Unix(), Seen: now.Unix()}, now)
}

// browserSession is the provider's view of the request's browser: the
// sign-in its SSOCookie holds, its idle time counted from now (the cookie
// set again), or nil when it has none that serves: absent, not sealed by
// this deployment for this purpose, or past a timeout (then cleared).
// Whether the session itself still lives (not revoked, the user not
// disabled) is the provider's to check: it holds the stores.
func (p *Pages) browserSession(w http.ResponseWriter, r *http.Request) *application.BrowserSession {
	st, ok := p.readSSO(r)
	if !ok {
		if _, err := r.Cookie(SSOCookie); err == nil {
			clearSSOCookie(w)
		}
		return nil
	}
	now := p.clock.Now()
	if !st.live(now) {
		clearSSOCookie(w)
		return nil
	}
	st.Seen = now.Unix()
	if err := p.setSSOCookie(w, st, now); err != nil {
		return nil
	}
	return st.browser()
}

// live reports whether the sign-in is within both timeouts at now.
func (st ssoState) live(now time.Time) bool {
	return now.Sub(time.Unix(st.SignedIn, 0)) < ConsoleAbsoluteTimeout && now.Sub(time.Unix(st.Seen, 0)) < ConsoleIdleTimeout
}

func (st ssoState) browser() *application.BrowserSession {
	return &application.BrowserSession{UserID: domain.UserID(st.UserID), SessionID: st.SessionID}
}

// readSSO opens the request's SSOCookie, whatever its times.
func (p *Pages) readSSO(r *http.Request) (ssoState, bool) {
	c, err := r.Cookie(SSOCookie)
	if err != nil || c.Value == "" {
		return ssoState{}, false
	}
	sealed, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return ssoState{}, false
	}
	plain, err := p.box.Open(sealed, ssoSealAD)
	if err != nil {
		return ssoState{}, false
	}
	var st ssoState
	if json.Unmarshal(plain, &st) != nil || st.UserID == "" || st.SessionID == "" {
		return ssoState{}, false
	}
	return st, true
}

// setSSOCookie seals st into the cookie, with a Max-Age as the console
// cookie's: what is left of the idle time, or of the absolute time when
// less.
func (p *Pages) setSSOCookie(w http.ResponseWriter, st ssoState, now time.Time) error {
	plain, err := json.Marshal(st)
	if err != nil {
		return err
	}
	sealed, err := p.box.Seal(plain, ssoSealAD)
	if err != nil {
		return err
	}
	left := min(ConsoleIdleTimeout, time.Unix(st.SignedIn, 0).Add(ConsoleAbsoluteTimeout).Sub(now))
	http.SetCookie(w, &http.Cookie{Name: SSOCookie, Value: base64.RawURLEncoding.EncodeToString(sealed),
		Path: "/", MaxAge: max(int(left/time.Second), 1), Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	return nil
}

func clearSSOCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: SSOCookie, Value: "", Path: "/", MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// clearSessionCookies clears both cookies of a signed-in browser: a
// sign-out anywhere ends the console's session and the provider's alike,
// which are one session (the SSO cookie names the console's).
func clearSessionCookies(w http.ResponseWriter) {
	clearConsoleCookie(w)
	clearSSOCookie(w)
}
