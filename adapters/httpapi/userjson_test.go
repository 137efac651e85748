package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/userd/userd/domain"
)

// FuzzAppendUserJSON holds appendUserJSON to json.Marshal of the
// userResponse it stands for, byte for byte: every string field (with
// HTML characters, control characters, bytes that are not UTF-8, U+2028
// and U+2029), the metadata as domain.ParseMetadata makes it, and times
// in any zone and year.
func FuzzAppendUserJSON(f *testing.F) {
	f.Add("Ada <Lovelace> & co", "ada@example.com", `{"a":"<b>&\u2028","n":1.50}`, `{}`, int64(1700000000), true)
	f.Add("\x00\x1f\"\\\b\f\n\r\t\x7f", "\xff\xfe@example.com", `{"k":"\u2029 é 😀"}`, `{"z":[1,{"y":null}],"a":true}`, int64(-62135596800), false)
	f.Add("", "", "{}", `{"x":"\ud800"}`, int64(253402300799), false)
	f.Fuzz(func(t *testing.T, name, email, metadata, appMetadata string, unix int64, flags bool) {
		if len(name)+len(email)+len(metadata)+len(appMetadata) > 8<<10 {
			return // longer says nothing new, and slows the fuzzer down
		}
		meta, msg := domain.ParseMetadata([]byte(metadata), domain.AppMetadataMaxBytes)
		if msg != "" {
			meta = domain.Metadata{}
		}
		appMeta, msg := domain.ParseMetadata([]byte(appMetadata), domain.AppMetadataMaxBytes)
		if msg != "" {
			appMeta = domain.Metadata{}
		}
		at := time.Unix(unix%(400*365*24*3600), 0).In(time.FixedZone("fuzz", int(unix%86400)))
		u := domain.User{
			ID: domain.UserID(name + "-id"), Name: name, Email: domain.Email(email),
			Profiles:      domain.Profiles{domain.Profile(name), domain.ProfileCustomer},
			EmailVerified: flags, MFAEnabled: !flags, Disabled: flags,
			Metadata: meta, AppMetadata: appMeta, CreatedAt: at, UpdatedAt: at.Add(time.Hour),
		}
		if flags {
			u.Profiles = nil
		}
		want, err := json.Marshal(toUserResponse(u))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendUserJSON(nil, u); !bytes.Equal(got, want) {
			t.Errorf("appendUserJSON =\n%s\nwant (json.Marshal)\n%s", got, want)
		}
	})
}

// BenchmarkWriteUserBody compares the two encodings of a user.
func BenchmarkWriteUserBody(b *testing.B) {
	meta, _ := domain.ParseMetadata([]byte(`{"theme":"dark","lang":"en"}`), domain.MetadataMaxBytes)
	u := domain.User{ID: "01JZ0000000000000000000000", Name: "Ada Lovelace", Email: "ada@example.com",
		Profiles: domain.Profiles{domain.ProfileCustomer}, Metadata: meta,
		CreatedAt: time.Unix(1700000000, 0), UpdatedAt: time.Unix(1700000100, 0)}
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(toUserResponse(u)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("appendUserJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf = appendUserJSON(buf[:0], u)
		}
	})
}
