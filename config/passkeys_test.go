package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestPasskeySettings: the relying party id and origins default to
// USERD_PUBLIC_URL's, the TOTP issuer to the RP name; an IP address as the
// RP id, given or derived, and an origin that is not one refuse the start.
func TestPasskeySettings(t *testing.T) {
	t.Parallel()
	const ipMessage = "USERD_WEBAUTHN_RP_ID: must be a domain name (localhost for local use), not an IP address"
	tests := []struct {
		name        string
		env         map[string]string
		file        string // YAML, if any
		wantRPID    string
		wantOrigins []string
		wantIssuer  string
		wantErr     string // a substring of the error; "" for none
	}{
		{name: "defaults", wantRPID: "localhost", wantOrigins: []string{"http://localhost:8080"}, wantIssuer: "userd"},
		{name: "from_public_url",
			env:      map[string]string{"USERD_PUBLIC_URL": "https://ID.Example.com:443/userd/"},
			wantRPID: "id.example.com", wantOrigins: []string{"https://id.example.com"}, wantIssuer: "userd"},
		{name: "from_public_url_with_port",
			env:      map[string]string{"USERD_PUBLIC_URL": "http://dev.example.test:8080"},
			wantRPID: "dev.example.test", wantOrigins: []string{"http://dev.example.test:8080"}, wantIssuer: "userd"},
		{name: "given",
			env: map[string]string{
				"USERD_PUBLIC_URL":       "https://id.example.com",
				"USERD_WEBAUTHN_RP_ID":   "example.com",
				"USERD_WEBAUTHN_RP_NAME": "Example",
				"USERD_WEBAUTHN_ORIGINS": "https://app.example.com, https://id.example.com:8443,",
			},
			wantRPID: "example.com", wantOrigins: []string{"https://app.example.com", "https://id.example.com:8443"}, wantIssuer: "Example"},
		{name: "given_over_an_ip_public_url",
			env:      map[string]string{"USERD_PUBLIC_URL": "http://127.0.0.1:8080", "USERD_WEBAUTHN_RP_ID": "localhost", "USERD_TOTP_ISSUER": "Example Accounts"},
			wantRPID: "localhost", wantOrigins: []string{"http://127.0.0.1:8080"}, wantIssuer: "Example Accounts"},
		{name: "file_list",
			file:     "webauthn_rp_id: example.com\nwebauthn_origins:\n  - https://a.example.com\n  - https://b.example.com\n",
			wantRPID: "example.com", wantOrigins: []string{"https://a.example.com", "https://b.example.com"}, wantIssuer: "userd"},
		{name: "ip_rp_id", env: map[string]string{"USERD_WEBAUTHN_RP_ID": "10.0.0.1"}, wantErr: ipMessage},
		{name: "ipv6_rp_id", env: map[string]string{"USERD_WEBAUTHN_RP_ID": "[::1]"}, wantErr: ipMessage},
		{name: "ip_public_url", env: map[string]string{"USERD_PUBLIC_URL": "http://127.0.0.1:8080"}, wantErr: ipMessage + "; unset, it is the host of USERD_PUBLIC_URL (127.0.0.1)"},
		{name: "ipv6_public_url", env: map[string]string{"USERD_PUBLIC_URL": "http://[::1]:8080"}, wantErr: ipMessage},
		{name: "ip_rp_id_in_file", file: "webauthn_rp_id: 192.168.1.10\n", wantErr: "line 1: webauthn_rp_id: must be a domain name (localhost for local use), not an IP address"},
		{name: "rp_id_with_port", env: map[string]string{"USERD_WEBAUTHN_RP_ID": "example.com:443"}, wantErr: "USERD_WEBAUTHN_RP_ID"},
		{name: "rp_id_url", env: map[string]string{"USERD_WEBAUTHN_RP_ID": "https://example.com"}, wantErr: "USERD_WEBAUTHN_RP_ID"},
		{name: "origin_with_path", env: map[string]string{"USERD_WEBAUTHN_ORIGINS": "https://example.com/login"}, wantErr: "USERD_WEBAUTHN_ORIGINS"},
		{name: "origin_with_slash", env: map[string]string{"USERD_WEBAUTHN_ORIGINS": "https://example.com/"}, wantErr: "USERD_WEBAUTHN_ORIGINS"},
		{name: "origin_without_scheme", env: map[string]string{"USERD_WEBAUTHN_ORIGINS": "example.com"}, wantErr: "USERD_WEBAUTHN_ORIGINS"},
		{name: "origin_in_file", file: "webauthn_origins: [https://a.example.com, 'ftp://b.example.com']\n", wantErr: "line 1: webauthn_origins"},
		{name: "rp_name_blank", env: map[string]string{"USERD_WEBAUTHN_RP_NAME": " "}, wantErr: "USERD_WEBAUTHN_RP_NAME: must not be empty"},
		{name: "issuer_colon", env: map[string]string{"USERD_TOTP_ISSUER": "Example: Accounts"}, wantErr: "USERD_TOTP_ISSUER: must not contain a colon"},
		{name: "issuer_from_rp_name_colon", env: map[string]string{"USERD_WEBAUTHN_RP_NAME": "Example: Accounts"}, wantErr: "USERD_TOTP_ISSUER: unset, it is USERD_WEBAUTHN_RP_NAME"},
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
			if got := c.WebAuthnRelyingPartyID(); got != tt.wantRPID {
				t.Errorf("WebAuthnRelyingPartyID() = %q, want %q", got, tt.wantRPID)
			}
			if got := c.WebAuthnAllowedOrigins(); !reflect.DeepEqual(got, tt.wantOrigins) {
				t.Errorf("WebAuthnAllowedOrigins() = %q, want %q", got, tt.wantOrigins)
			}
			if got := c.TOTPIssuerName(); got != tt.wantIssuer {
				t.Errorf("TOTPIssuerName() = %q, want %q", got, tt.wantIssuer)
			}
			// What is shown loads back the same.
			again, err := LoadFrom(env(c.Redacted()))
			if err != nil || !reflect.DeepEqual(again, c) {
				t.Errorf("round trip: %v\n%v\n---\n%v", err, c, again)
			}
		})
	}
}
