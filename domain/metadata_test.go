package domain_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

func TestParseMetadata(t *testing.T) {
	t.Parallel()
	nested := func(levels int) string {
		return strings.Repeat(`{"a":`, levels-1) + "{}" + strings.Repeat("}", levels-1)
	}
	// padded is an object whose compact form is exactly n bytes:
	// {"k":"xxx…"} is 8 bytes of frame around the value.
	padded := func(n int) string { return `{"k":"` + strings.Repeat("x", n-8) + `"}` }
	for _, tc := range []struct {
		name, in, want, wantMsg string
	}{
		{"empty_object", `{}`, `{}`, ""},
		{"spaces_removed", " {\n \"b\" : 1 ,\t\"a\" : [ true , null ] } ", `{"a":[true,null],"b":1}`, ""},
		{"keys_sorted_at_every_level", `{"z":{"y":1,"x":2},"a":0}`, `{"a":0,"z":{"x":2,"y":1}}`, ""},
		{"numbers_as_written", `{"n":1.50,"big":12345678901234567890,"e":1e3}`, `{"big":12345678901234567890,"e":1e3,"n":1.50}`, ""},
		{"html_not_escaped", `{"h":"<b>&</b>"}`, `{"h":"<b>&</b>"}`, ""},
		{"escapes_normalised", `{"s":"\u00e9\/"}`, `{"s":"é/"}`, ""},
		{"duplicate_key_last_wins", `{"a":1,"a":2}`, `{"a":2}`, ""},
		{"depth_16", nested(16), nested(16), ""},
		{"depth_17", nested(17), "", "must nest at most 16 levels"},
		{"array_depth_counts", `{"a":` + strings.Repeat("[", 16) + strings.Repeat("]", 16) + `}`, "", "must nest at most 16 levels"},
		{"at_the_limit", padded(domain.MetadataMaxBytes), padded(domain.MetadataMaxBytes), ""},
		{"one_byte_over", padded(domain.MetadataMaxBytes + 1), "", "must be at most 4096 bytes in compact form"},
		{"whitespace_not_counted", strings.Replace(padded(domain.MetadataMaxBytes), ":", " :  ", 1), padded(domain.MetadataMaxBytes), ""},
		{"null", `null`, "", "must be a JSON object"},
		{"array", `[]`, "", "must be a JSON object"},
		{"string", `"{}"`, "", "must be a JSON object"},
		{"number", `1`, "", "must be a JSON object"},
		{"empty", ``, "", "must be a JSON object"},
		{"trailing_data", `{}{}`, "", "must be a JSON object"},
		{"broken", `{"a":}`, "", "must be a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, msg := domain.ParseMetadata([]byte(tc.in), domain.MetadataMaxBytes)
			if msg != tc.wantMsg {
				t.Fatalf("ParseMetadata(%q) message %q, want %q", tc.in, msg, tc.wantMsg)
			}
			if msg == "" && m.String() != tc.want {
				t.Fatalf("ParseMetadata(%q) = %s, want %s", tc.in, m, tc.want)
			}
		})
	}
}

func TestMetadata_zero_is_the_empty_object(t *testing.T) {
	t.Parallel()
	var zero domain.Metadata
	parsed, _ := domain.ParseMetadata([]byte(" { } "), domain.MetadataMaxBytes)
	for _, m := range []domain.Metadata{zero, parsed, domain.MetadataFromStore(""), domain.MetadataFromStore("{}")} {
		if m.String() != "{}" || string(m.JSON()) != "{}" || !m.IsEmpty() || !m.Equal(zero) {
			t.Fatalf("%#v: want the empty object", m)
		}
	}
	one := domain.MetadataFromStore(`{"a":1}`)
	if one.IsEmpty() || one.Equal(zero) || one.String() != `{"a":1}` {
		t.Fatalf("%#v: want {\"a\":1}", one)
	}
}

func TestMetadata_Equal_compares_as_JSON(t *testing.T) {
	t.Parallel()
	a, _ := domain.ParseMetadata([]byte(`{"b":[1,2],"a":{"y":"z"}}`), domain.AppMetadataMaxBytes)
	b, _ := domain.ParseMetadata([]byte("{ \"a\" : {\"y\":\"z\"},\n \"b\" : [1, 2] }"), domain.AppMetadataMaxBytes)
	c, _ := domain.ParseMetadata([]byte(`{"b":[2,1],"a":{"y":"z"}}`), domain.AppMetadataMaxBytes)
	if !a.Equal(b) || a.Equal(c) {
		t.Fatalf("a=%s b=%s c=%s: want a equal to b, not c", a, b, c)
	}
}

func TestParseUserChange_metadata(t *testing.T) {
	t.Parallel()
	c, err := domain.ParseUserChange(domain.UserChangeInput{Metadata: []byte(`{"b":1, "a":2}`), AppMetadata: []byte(`{}`)})
	if err != nil || c.Metadata == nil || c.Metadata.String() != `{"a":2,"b":1}` || c.AppMetadata == nil || !c.AppMetadata.IsEmpty() {
		t.Fatalf("ParseUserChange = %+v, %v", c, err)
	}
	if c, err := domain.ParseUserChange(domain.UserChangeInput{}); err != nil || c.Metadata != nil || c.AppMetadata != nil {
		t.Fatalf("absent: %+v, %v; want both nil", c, err)
	}
	big := []byte(`{"k":"` + strings.Repeat("x", domain.MetadataMaxBytes) + `"}`)
	_, err = domain.ParseUserChange(domain.UserChangeInput{Metadata: []byte("null"), AppMetadata: big})
	if verr := fieldNames(t, err); !slices.Equal(verr, []string{domain.FieldMetadata}) {
		t.Fatalf("null metadata and 4 KiB+ appMetadata (fine under 16 KiB): fields %v, want [metadata]", verr)
	}
	huge := []byte(`{"k":"` + strings.Repeat("x", domain.AppMetadataMaxBytes) + `"}`)
	_, err = domain.ParseUserChange(domain.UserChangeInput{Metadata: big, AppMetadata: huge})
	if got := fieldNames(t, err); !slices.Equal(got, []string{domain.FieldMetadata, domain.FieldAppMetadata}) {
		t.Fatalf("both too large: fields %v", got)
	}
}

func TestUser_Apply_metadata_ends_no_session(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	md, _ := domain.ParseMetadata([]byte(`{"theme":"dark"}`), domain.MetadataMaxBytes)
	app, _ := domain.ParseMetadata([]byte(`{"plan":"pro"}`), domain.AppMetadataMaxBytes)
	var empty domain.Metadata
	for _, tc := range []struct {
		name       string
		change     domain.UserChange
		wantFields []string
	}{
		{"same_metadata", domain.UserChange{Metadata: &empty, AppMetadata: &empty}, nil},
		{"metadata", domain.UserChange{Metadata: &md}, []string{"metadata"}},
		{"app_metadata", domain.UserChange{AppMetadata: &app}, []string{"appMetadata"}},
		{"both", domain.UserChange{Metadata: &md, AppMetadata: &app}, []string{"metadata", "appMetadata"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := domain.User{ID: selfID, Profiles: customers}
			ch := u.Apply(tc.change, "", now)
			if !slices.Equal(ch.Fields, tc.wantFields) || ch.EndsSessions {
				t.Fatalf("changes %+v, want fields %v and no session ended", ch, tc.wantFields)
			}
			if tc.change.Metadata != nil && !u.Metadata.Equal(*tc.change.Metadata) ||
				tc.change.AppMetadata != nil && !u.AppMetadata.Equal(*tc.change.AppMetadata) {
				t.Fatalf("user after %+v: %+v", tc.change, u)
			}
		})
	}
}

func TestCanChangeAccount_appMetadata(t *testing.T) {
	t.Parallel()
	app, _ := domain.ParseMetadata([]byte(`{"plan":"pro","seats":3}`), domain.AppMetadataMaxBytes)
	same, _ := domain.ParseMetadata([]byte(`{ "seats": 3, "plan": "pro" }`), domain.AppMetadataMaxBytes)
	other, _ := domain.ParseMetadata([]byte(`{"plan":"enterprise"}`), domain.AppMetadataMaxBytes)
	md, _ := domain.ParseMetadata([]byte(`{"theme":"dark"}`), domain.MetadataMaxBytes)
	cust := domain.User{ID: selfID, Profiles: customers, AppMetadata: app}
	for _, tc := range []struct {
		name   string
		actor  *domain.Principal
		change domain.UserChange
		want   error
	}{
		{"customer_changes_own_metadata", customer, domain.UserChange{Metadata: &md}, nil},
		{"customer_sends_current_app_metadata", customer, domain.UserChange{AppMetadata: &same}, nil},
		{"customer_changes_app_metadata", customer, domain.UserChange{AppMetadata: &other}, domain.ErrForbidden},
		{"admin_changes_app_metadata", admin, domain.UserChange{AppMetadata: &other, Metadata: &md}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.actor.CanChangeAccount(cust, tc.change); !sameErr(got, tc.want) {
				t.Fatalf("CanChangeAccount(%+v) = %v, want %v", tc.change, got, tc.want)
			}
		})
	}
}

// fieldNames names the fields of a *ValidationError.
func fieldNames(t *testing.T, err error) []string {
	t.Helper()
	var names []string
	for _, f := range validationFields(t, err) {
		names = append(names, f.Field)
	}
	return names
}
