package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/userd/userd/application"
	"github.com/userd/userd/domain"
	"github.com/userd/userd/test/kit"
)

// withWebhooks sends the webhook events to rec.
func withWebhooks(rec *kit.WebhookRecorder) envOption {
	return func(s *envSettings) { s.deps.Webhooks = rec }
}

// updatedFields delivers the events due and returns the changed fields of
// every user.updated sent so far, sorted (the sender delivers due events
// in any order).
func (e *env) updatedFields(rec *kit.WebhookRecorder) []string {
	e.t.Helper()
	if _, err := e.svc.Delivery.RunOnce(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range rec.Sent() {
		if ev.Type != domain.WebhookUserUpdated {
			continue
		}
		// The data went through the outbox as JSON.
		b, err := json.Marshal(ev.Data["changed"])
		var changed []string
		if err == nil {
			err = json.Unmarshal(b, &changed)
		}
		if err != nil {
			e.t.Fatalf("user.updated changed %s: %v", b, err)
		}
		out = append(out, strings.Join(changed, ","))
	}
	slices.Sort(out)
	return out
}

// formValue is the value of the page's input or textarea named name.
func formValue(body, name string) string {
	q := regexp.QuoteMeta(name)
	if m := regexp.MustCompile(`<textarea id="` + q + `"[^>]*>([^<]*)</textarea>`).FindStringSubmatch(body); m != nil {
		return html.UnescapeString(m[1])
	}
	if m := regexp.MustCompile(`<input [^>]*name="` + q + `"[^>]*value="([^"]*)"`).FindStringSubmatch(body); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

// userForm is the edit form of u as the page fills it, with the changes
// of edit on top (a field set to nil is left out).
func userForm(page answer, edit url.Values) url.Values {
	form := url.Values{}
	for _, f := range []string{"name", "email", "metadata", "metadataShown", "appMetadata", "appMetadataShown"} {
		form.Set(f, formValue(page.Body, f))
	}
	form["profiles"] = []string{"ROLE_CUSTOMER"}
	for k, v := range edit {
		if v == nil {
			delete(form, k)
			continue
		}
		form[k] = v
	}
	return form
}

func TestAdmin_edits_a_users_metadata(t *testing.T) {
	t.Parallel()
	hooks := &kit.WebhookRecorder{}
	e := newEnv(t, withWebhooks(hooks))
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	ada := e.pathOf("ada@example.com")
	ses := e.signedInUser("ada@example.com")

	// The page shows both objects in their textareas, tied to their hints.
	page := v.get(ada)
	wantBody(t, page, `<textarea id="metadata" name="metadata" rows="6"`, `aria-describedby="metadata-hint">{}</textarea>`,
		`<textarea id="appMetadata" name="appMetadata" rows="6"`, `aria-describedby="appMetadata-hint">{}</textarea>`,
		`<input type="hidden" name="appMetadataShown" value="{}">`)

	// Saved as typed (CRLF line ends, as a browser sends a textarea),
	// stored canonical, shown again indented; one user.updated naming the
	// field; audited; the sessions live on.
	typed := "{\r\n  \"roles\": [\"editor\"],\r\n  \"plan\": \"pro\"\r\n}"
	wantRedirect(t, v.post(ada, userForm(page, url.Values{"appMetadata": {typed}})), ada+"?done=saved")
	if got := e.user("ada@example.com").AppMetadata.String(); got != `{"plan":"pro","roles":["editor"]}` {
		t.Fatalf("the stored appMetadata: %s", got)
	}
	page = v.get(ada + "?done=saved")
	wantBody(t, page, "The changes are saved.",
		"aria-describedby=\"appMetadata-hint\">{\n  &#34;plan&#34;: &#34;pro&#34;,\n  &#34;roles&#34;: [\n    &#34;editor&#34;\n  ]\n}</textarea>",
		`name="appMetadataShown" value="{&#34;plan&#34;:&#34;pro&#34;,&#34;roles&#34;:[&#34;editor&#34;]}"`)
	if got := e.updatedFields(hooks); !slices.Equal(got, []string{"appMetadata"}) {
		t.Errorf("user.updated changed %q, want appMetadata", got)
	}
	e.wantAudited(domain.AuditUserUpdated, e.user("ada@example.com").ID)
	if n := e.activeSessions("ada@example.com"); n != 1 {
		t.Errorf("%d sessions after a change of appMetadata, want 1", n)
	}
	wantBody(t, ses.get("/account/"), "<pre id=\"profile-app-metadata\">{\n  &#34;plan&#34;: &#34;pro&#34;")

	// Bad values: the page again, each message beside its field, what was
	// typed kept, nothing saved.
	bads := []struct{ name, field, value, msg string }{
		{"not_json", "appMetadata", `{"plan": pro}`, "The app metadata must be a JSON object."},
		{"not_an_object", "metadata", `["a"]`, "The metadata must be a JSON object."},
		{"too_large", "metadata", `{"k":"` + strings.Repeat("x", domain.MetadataMaxBytes) + `"}`,
			"The metadata must be at most 4096 bytes in compact form."},
		{"too_deep", "appMetadata", strings.Repeat(`{"a":`, 16) + "{}" + strings.Repeat("}", 16),
			"The app metadata must nest at most 16 levels."},
	}
	for _, bad := range bads {
		res := v.post(ada, userForm(page, url.Values{bad.field: {bad.value}, "name": {"Ada L."}}))
		if res.Status != http.StatusBadRequest {
			t.Fatalf("%s: status %d", bad.name, res.Status)
		}
		wantTiedError(t, res, bad.field, bad.msg)
		wantBody(t, res, `href="#`+bad.field+`"`, ">"+template.HTMLEscapeString(bad.value)+"</textarea>")
	}
	if u := e.user("ada@example.com"); u.Name == "Ada L." || !u.Metadata.IsEmpty() || u.AppMetadata.String() != `{"plan":"pro","roles":["editor"]}` {
		t.Errorf("a refused edit changed the account: %+v", u)
	}
	if got := e.updatedFields(hooks); len(got) != 1 {
		t.Errorf("refused edits sent user.updated: %q", got)
	}

	// A field left as shown, however spaced, is not sent: saving the name
	// keeps a value that the API changed meanwhile.
	page = v.get(ada)
	changed := `{"plan":"team"}`
	root := e.user(rootEmail)
	if _, err := e.svc.Users.Update(context.Background(), &domain.Principal{UserID: root.ID, Profiles: root.Profiles},
		string(e.user("ada@example.com").ID), application.UpdateInput{AppMetadata: []byte(changed)}); err != nil {
		t.Fatal(err)
	}
	form := userForm(page, url.Values{"name": {"Ada Lovelace"}, "metadata": {" { } "}})
	wantRedirect(t, v.post(ada, form), ada+"?done=saved")
	if u := e.user("ada@example.com"); u.Name != "Ada Lovelace" || u.AppMetadata.String() != changed || !u.Metadata.IsEmpty() {
		t.Errorf("saving the name: %q %s %s", u.Name, u.Metadata, u.AppMetadata)
	}
	// Two more events, the API's and the form's.
	if got := e.updatedFields(hooks); !slices.Equal(got, []string{"appMetadata", "appMetadata", "name"}) {
		t.Errorf("user.updated changed %q, want appMetadata twice (the form's, the API's) and name", got)
	}

	// Another origin's post changes nothing.
	res := v.post(ada, userForm(page, url.Values{"appMetadata": {`{"plan":"free"}`}}),
		withHeader("Sec-Fetch-Site", "cross-site"), withHeader("Origin", "https://evil.example"))
	if res.Status != http.StatusForbidden || e.user("ada@example.com").AppMetadata.String() != changed {
		t.Errorf("a cross-site post: %d, appMetadata %s", res.Status, e.user("ada@example.com").AppMetadata)
	}
}

// TestAdmin_user_form_holds_the_largest_metadata: the largest objects,
// indented and percent-encoded, fit the form's body; past the form's
// bound the answer is 413 and nothing is saved.
func TestAdmin_user_form_holds_the_largest_metadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v := e.signedInAdmin()
	e.addUser("ada@example.com", false)
	ada := e.pathOf("ada@example.com")
	page := v.get(ada)

	// Many short members, indented as the page shows them: their quotes,
	// colons and line breaks are each three bytes once percent-encoded.
	largest := func(maxBytes int) string {
		members := []string{}
		for compact := 2; compact+13 <= maxBytes; compact += 13 {
			members = append(members, fmt.Sprintf(`  "k%06d": ""`, len(members)))
		}
		return "{\r\n" + strings.Join(members, ",\r\n") + "\r\n}"
	}
	form := userForm(page, url.Values{"metadata": {largest(domain.MetadataMaxBytes)}, "appMetadata": {largest(domain.AppMetadataMaxBytes)}})
	wantRedirect(t, v.post(ada, form), ada+"?done=saved")
	if u := e.user("ada@example.com"); len(u.Metadata.String()) < domain.MetadataMaxBytes-40 ||
		len(u.AppMetadata.String()) < domain.AppMetadataMaxBytes-40 {
		t.Errorf("stored %d and %d bytes", len(u.Metadata.String()), len(u.AppMetadata.String()))
	}

	huge := userForm(page, url.Values{"appMetadata": {`{"k":"` + strings.Repeat("x", 300<<10) + `"}`}})
	if res := v.post(ada, huge); res.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("a 300 KiB form: %d", res.Status)
	}
}
