package web_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkConsolePage measures a signed-in page of the account area:
// the cookie opened (AES-GCM), the access token verified, the account
// read, the page rendered with its nonce and the cookie sealed again.
// go test -run '^$' -bench ConsolePage -benchmem ./adapters/web/
func BenchmarkConsolePage(b *testing.B) {
	e := newEnv(b)
	e.addUser("ada@example.com", false)
	v := e.visitor()
	if res := v.signIn("/account/", "ada@example.com", custPassword); res.Status != http.StatusSeeOther {
		b.Fatalf("sign-in: %d", res.Status)
	}
	cookie := v.cookie
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodGet, "/account/", nil)
		r.AddCookie(cookie)
		rec := httptest.NewRecorder()
		e.pages.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
