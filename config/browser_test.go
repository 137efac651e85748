package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestBrowserSettings: the CORS origins are checked at load and kept as a
// browser writes them; a path, a non-origin or "*" with the refresh
// cookie refuses the start, naming the setting.
func TestBrowserSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		env         map[string]string
		file        string
		wantOrigins []string
		wantCookie  bool
		wantErr     string // a substring of the error; "" for none
	}{
		{name: "defaults", wantOrigins: []string{}},
		{name: "list",
			env:         map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "https://App.Example.com:443, http://localhost:3000,", "USERD_REFRESH_COOKIE": "true"},
			wantOrigins: []string{"https://app.example.com", "http://localhost:3000"}, wantCookie: true},
		{name: "default_http_port", env: map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "http://localhost:80"},
			wantOrigins: []string{"http://localhost"}},
		{name: "any_without_cookie", env: map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "*"}, wantOrigins: []string{"*"}},
		{name: "file_list", file: "cors_allowed_origins:\n  - https://a.example.com\n  - http://127.0.0.1:5173\nrefresh_cookie: true\n",
			wantOrigins: []string{"https://a.example.com", "http://127.0.0.1:5173"}, wantCookie: true},
		{name: "any_with_cookie", env: map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "*", "USERD_REFRESH_COOKIE": "true"},
			wantErr: `USERD_CORS_ALLOWED_ORIGINS: "*" cannot go with USERD_REFRESH_COOKIE=true`},
		{name: "any_with_others", env: map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "*,https://a.example.com"},
			wantErr: `USERD_CORS_ALLOWED_ORIGINS: "*" admits every origin`},
		{name: "with_path", env: map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "https://app.example.com/login"},
			wantErr: `USERD_CORS_ALLOWED_ORIGINS: "https://app.example.com/login" has a path`},
		{name: "trailing_slash", env: map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "https://app.example.com/"},
			wantErr: `USERD_CORS_ALLOWED_ORIGINS: "https://app.example.com/" has a path`},
		{name: "no_scheme", env: map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "app.example.com"},
			wantErr: "USERD_CORS_ALLOWED_ORIGINS: \"app.example.com\" is not an origin"},
		{name: "other_scheme", env: map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "ftp://app.example.com"},
			wantErr: "USERD_CORS_ALLOWED_ORIGINS"},
		{name: "query", env: map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "https://app.example.com?x=1"},
			wantErr: "USERD_CORS_ALLOWED_ORIGINS"},
		{name: "wildcard_host", env: map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "https://*.example.com"},
			wantErr: "USERD_CORS_ALLOWED_ORIGINS"},
		{name: "spaces_not_commas", env: map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "https://a.example.com https://b.example.com"},
			wantErr: "USERD_CORS_ALLOWED_ORIGINS"},
		{name: "credentials", env: map[string]string{"USERD_CORS_ALLOWED_ORIGINS": "https://user:pw@a.example.com"},
			wantErr: "USERD_CORS_ALLOWED_ORIGINS"},
		{name: "bad_in_file", file: "cors_allowed_origins: [https://a.example.com, 'https://b.example.com/x']\n",
			wantErr: "line 1: cors_allowed_origins"},
		{name: "cookie_not_bool", env: map[string]string{"USERD_REFRESH_COOKIE": "yes"}, wantErr: "USERD_REFRESH_COOKIE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := map[string]string{}
			for k, v := range tt.env {
				e[k] = v
			}
			if tt.file != "" {
				e[EnvConfigFile] = writeYAML(t, tt.file)
			}
			c, err := LoadFrom(env(e))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.CORSAllowedOrigins(); !reflect.DeepEqual(got, tt.wantOrigins) {
				t.Errorf("CORSAllowedOrigins() = %q, want %q", got, tt.wantOrigins)
			}
			if c.RefreshCookie != tt.wantCookie {
				t.Errorf("RefreshCookie = %v", c.RefreshCookie)
			}
			// config print shows both, and what it shows loads back the same.
			shown := c.Redacted()
			if _, ok := shown["USERD_CORS_ALLOWED_ORIGINS"]; !ok {
				t.Error("USERD_CORS_ALLOWED_ORIGINS is not shown")
			}
			if got := shown["USERD_REFRESH_COOKIE"]; got != map[bool]string{true: "true", false: "false"}[tt.wantCookie] {
				t.Errorf("USERD_REFRESH_COOKIE shown as %q", got)
			}
			again, err := LoadFrom(env(shown))
			if err != nil || !reflect.DeepEqual(again, c) {
				t.Errorf("round trip: %v\n%v\n---\n%v", err, c, again)
			}
		})
	}
}
