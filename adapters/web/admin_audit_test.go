package web_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

var auditRows = regexp.MustCompile(`<tr><td><time datetime="[^"]+">`)

func TestAdmin_audit_trail_shows_who_did_what(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	ada := e.pathOf("ada@example.com")
	root := e.pathOf(rootEmail)
	wantRedirect(t, v.post(ada+"/disable", nil), ada+"?done=disabled")

	res := v.get("/admin/audit")
	wantPage(t, res, http.StatusOK, "Audit trail")
	// The newest first: the disabling, by the admin, about ada.
	first := regexp.MustCompile(`(?s)<tbody>\n<tr>(.*?)</tr>`).FindStringSubmatch(res.Body)
	if first == nil {
		t.Fatalf("no events:\n%s", res.Body)
	}
	for _, want := range []string{"session.revoked", `<a href="` + root + `">` + rootEmail + `</a>`,
		`<a href="` + ada + `">ada@example.com</a>`} {
		if !strings.Contains(first[1], want) {
			t.Errorf("the newest event lacks %s: %s", want, first[1])
		}
	}
	// An event without actor (the operator's bootstrap admin) says so.
	wantBody(t, res, `<td>user.created</td><td>—</td>`, `<label for="user">User</label>`, `<label for="type">Event type</label>`,
		`<option value="mfa.reset">mfa.reset</option>`)
}

func TestAdmin_audit_trail_filters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	e.addUser("bob@example.com", false)
	ada := e.pathOf("ada@example.com")
	wantRedirect(t, v.post(ada+"/verify-email", nil), ada+"?done=verified")
	wantRedirect(t, v.post(e.pathOf("bob@example.com")+"/verify-email", nil), e.pathOf("bob@example.com")+"?done=verified")

	// By email, resolved to the account: only ada's events.
	byEmail := v.get("/admin/audit?user=ADA%40example.com")
	wantPage(t, byEmail, http.StatusOK, "Audit trail")
	wantBody(t, byEmail, `value="ADA@example.com"`, "ada@example.com")
	if strings.Contains(byEmail.Body, "bob@example.com") {
		t.Errorf("the filter by ada shows bob's events:\n%s", byEmail.Body)
	}
	// By id and type.
	byType := v.get("/admin/audit?user=" + string(e.user("ada@example.com").ID) + "&type=user.updated")
	if n := len(auditRows.FindAllString(byType.Body, -1)); n != 1 {
		t.Errorf("%d events of ada of type user.updated, want 1:\n%s", n, byType.Body)
	}
	wantBody(t, byType, `<option value="user.updated" selected>`)

	// An email nobody has: the message beside the field, what was typed
	// kept.
	none := v.get("/admin/audit?user=nobody%40example.com&type=user.updated")
	wantPage(t, none, http.StatusBadRequest, "Audit trail")
	wantTiedError(t, none, "user", "No user has this email address or id.")
	wantBody(t, none, `value="nobody@example.com"`, `<option value="user.updated" selected>`)
	// A type that is none of the list: the use case's message, on the
	// select.
	badType := v.get("/admin/audit?type=user.exploded")
	wantPage(t, badType, http.StatusBadRequest, "Audit trail")
	wantTiedError(t, badType, "type", "The event type")
	// A cursor that is no event id.
	badAfter := v.get("/admin/audit?after=zz")
	wantPage(t, badAfter, http.StatusBadRequest, "Audit trail")
	wantBody(t, badAfter, `id="after-error"`, `<a id="after" href="/admin/audit">`)
}

func TestAdmin_audit_trail_pages_keep_the_filter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	ada := e.pathOf("ada@example.com")
	for range 30 {
		wantRedirect(t, v.post(ada+"/disable", nil), ada+"?done=disabled")
		wantRedirect(t, v.post(ada+"/enable", nil), ada+"?done=enabled")
	}
	first := v.get("/admin/audit?type=user.updated")
	if n := len(auditRows.FindAllString(first.Body, -1)); n != 50 {
		t.Fatalf("%d events on the first page, want 50", n)
	}
	next := regexp.MustCompile(`href="([^"]+)" rel="next" id="next-page">Older events`).FindStringSubmatch(first.Body)
	if next == nil || !strings.Contains(next[1], "type=user.updated") {
		t.Fatalf("no link to the older events that keeps the filter:\n%s", first.Body)
	}
	older := v.get(strings.ReplaceAll(next[1], "&amp;", "&"))
	if n := len(auditRows.FindAllString(older.Body, -1)); n != 10 {
		t.Errorf("%d older events, want 10", n)
	}
	if strings.Contains(older.Body, `rel="next"`) {
		t.Error("the oldest page links older events")
	}
}

func TestAdmin_rotates_a_key(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	before, err := e.svc.Keys.ListAsOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	bad := v.post("/admin/keys/rotate", url.Values{"when": {"yesterday"}})
	wantPage(t, bad, http.StatusBadRequest, "Signing keys")
	wantTiedError(t, bad, "when", "Choose when the new key starts signing.")

	// A rotation "now" signs from the clock's time: later than the first
	// key's, as in life.
	e.clock.Advance(time.Minute)
	res := v.post("/admin/keys/rotate", url.Values{"when": {"now"}})
	loc := res.Header.Get("Location")
	m := regexp.MustCompile(`^/admin/keys\?kid=([^&]+)&done=rotated$`).FindStringSubmatch(loc)
	if res.Status != http.StatusSeeOther || m == nil {
		t.Fatalf("rotate: %d to %q", res.Status, loc)
	}
	after, err := e.svc.Keys.ListAsOperator(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	added := slices.IndexFunc(after, func(k domain.KeyInfo) bool { return k.KID == m[1] })
	if len(after) != len(before)+1 || added < 0 || after[added].Status != domain.KeyActive {
		t.Fatalf("keys after a rotation now (%s): %+v", m[1], after)
	}
	page := v.get(loc)
	wantPage(t, page, http.StatusOK, "Signing keys")
	wantBody(t, page, "A new signing key is added: "+m[1]+", active (signs).", `<code>`+m[1]+`</code> <strong>(new)</strong>`)
	e.wantAudited(domain.AuditKeyRotated, "")

	// The default waits for the verifiers: the key is pending.
	res = v.post("/admin/keys/rotate", url.Values{"when": {"published"}})
	if res.Status != http.StatusSeeOther {
		t.Fatalf("rotate: %d", res.Status)
	}
	wantBody(t, v.get(res.Header.Get("Location")), ", pending.")
}
