package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/userd/userd/application"
	"github.com/userd/userd/config"
)

// The provider's handler is built only when it is on and the application
// has a provider; a page handler without the provider's error page is no
// reason to fail.
func TestProviderHandler(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	pages := http.NotFoundHandler()
	params := func(on bool, svc *application.Services) handlerParams {
		return handlerParams{Config: config.Config{OIDCProvider: on, PublicURL: "https://id.example.com/"}, Services: svc, Log: log}
	}
	if h := newProviderHandler(params(false, &application.Services{Provider: &application.ProviderService{}}), pages); h != nil {
		t.Error("a handler with USERD_OIDC_PROVIDER=false")
	}
	if h := newProviderHandler(params(true, &application.Services{}), pages); h != nil {
		t.Error("a handler over no provider")
	}
	if !strings.Contains(logs.String(), "routes are off") {
		t.Errorf("no warning of the missing provider: %q", logs.String())
	}
	h := newProviderHandler(params(true, &application.Services{Provider: &application.ProviderService{}}), pages)
	if h == nil {
		t.Fatal("no handler")
	}
	// The adapter's own error page stands in for the pages' (which have
	// none here): an unknown client is a 400 that never redirects.
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/oauth2/authorize?client_id=x&redirect_uri=https%3A%2F%2Fa.example%2Fcb", nil))
	if w.Code != http.StatusBadRequest || w.Header().Get("Location") != "" {
		t.Errorf("%d, Location %q", w.Code, w.Header().Get("Location"))
	}
}
