package softauthn

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/fxamacker/cbor/v2"
)

const creation = `{"rp":{"id":"example.test","name":"userd"},"user":{"id":"AQIDBAUGBwgJCgsM","name":"a@example.test","displayName":"A"},
"challenge":"c2VydmVyLWNoYWxsZW5nZS0wMQ","pubKeyCredParams":[{"type":"public-key","alg":-7}]}`

type response struct {
	ID, RawID, Type string
	Response        struct {
		ClientDataJSON, AuthenticatorData, AttestationObject, PublicKey, Signature, UserHandle string
	}
}

func decode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return b
}

// TestCreateThenGet reads the responses back by the specification: the
// client data, the flags and counter, the attestation object, and a
// signature that the public key of the registration verifies.
func TestCreateThenGet(t *testing.T) {
	t.Parallel()
	a := New("https://app.example.test")
	raw, err := a.Create(json.RawMessage(creation), Faults{})
	if err != nil {
		t.Fatal(err)
	}
	var reg response
	if err := json.Unmarshal(raw, &reg); err != nil {
		t.Fatal(err)
	}
	var cd struct{ Type, Challenge, Origin string }
	_ = json.Unmarshal(decode(t, reg.Response.ClientDataJSON), &cd)
	if cd.Type != "webauthn.create" || cd.Challenge != "c2VydmVyLWNoYWxsZW5nZS0wMQ" || cd.Origin != "https://app.example.test" {
		t.Errorf("client data %+v", cd)
	}
	var att struct {
		Fmt      string         `cbor:"fmt"`
		AttStmt  map[string]any `cbor:"attStmt"`
		AuthData []byte         `cbor:"authData"`
	}
	if err := cbor.Unmarshal(decode(t, reg.Response.AttestationObject), &att); err != nil {
		t.Fatal(err)
	}
	rpHash := sha256.Sum256([]byte("example.test"))
	if att.Fmt != "none" || len(att.AttStmt) != 0 || !bytes.HasPrefix(att.AuthData, rpHash[:]) ||
		att.AuthData[32] != flagUP|flagUV|flagBE|flagBS|flagAT || !bytes.Equal(att.AuthData, decode(t, reg.Response.AuthenticatorData)) {
		t.Errorf("attestation object: fmt %q, attStmt %v, flags %#x", att.Fmt, att.AttStmt, att.AuthData[32])
	}
	id := decode(t, reg.RawID)
	if idLen := binary.BigEndian.Uint16(att.AuthData[53:55]); !bytes.Equal(att.AuthData[55:55+int(idLen)], id) {
		t.Error("attested credential data without the credential id")
	}
	var key map[int]any
	if err := cbor.Unmarshal(att.AuthData[55+len(id):], &key); err != nil || key[1] != uint64(2) || key[3] != int64(-7) || key[-1] != uint64(1) {
		t.Errorf("COSE key %v, %v", key, err)
	}

	raw, err = a.Get(json.RawMessage(`{"challenge":"c2Vjb25kLWNoYWxsZW5nZQ","rpId":"example.test","allowCredentials":[{"type":"public-key","id":"`+reg.RawID+`"}]}`), Faults{NoUserVerification: true})
	if err != nil {
		t.Fatal(err)
	}
	var got response
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	authData, clientData := decode(t, got.Response.AuthenticatorData), decode(t, got.Response.ClientDataJSON)
	if authData[32] != flagUP|flagBE|flagBS || binary.BigEndian.Uint32(authData[33:37]) != 1 || got.Response.UserHandle != "AQIDBAUGBwgJCgsM" {
		t.Errorf("assertion: flags %#x, counter %d, user handle %q", authData[32], binary.BigEndian.Uint32(authData[33:37]), got.Response.UserHandle)
	}
	pub, err := x509.ParsePKIXPublicKey(decode(t, reg.Response.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	cdHash := sha256.Sum256(clientData)
	signed := sha256.Sum256(append(authData, cdHash[:]...))
	if !ecdsa.VerifyASN1(pub.(*ecdsa.PublicKey), signed[:], decode(t, got.Response.Signature)) {
		t.Error("the signature does not verify")
	}
}

func TestGetRefusesWhatABrowserRefuses(t *testing.T) {
	t.Parallel()
	a := New("https://app.example.test")
	if _, err := a.Get(json.RawMessage(`{"challenge":"AAAA","rpId":"example.test"}`), Faults{}); err == nil {
		t.Error("an assertion without a credential")
	}
	if _, err := a.Create(json.RawMessage(`{"rp":{"id":"other.test"},"user":{"id":"AQ"},"challenge":"AAAA","pubKeyCredParams":[{"type":"public-key","alg":-7}]}`), Faults{}); err == nil {
		t.Error("a credential for an rp id the origin may not use")
	}
	if _, err := a.Create(json.RawMessage(`{"rp":{"id":"example.test"},"user":{"id":"AQ"},"challenge":"AAAA","pubKeyCredParams":[{"type":"public-key","alg":-257}]}`), Faults{}); err == nil {
		t.Error("a credential without ES256 offered")
	}
}
