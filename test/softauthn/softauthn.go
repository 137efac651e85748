// Package softauthn is a browser and a passkey authenticator in software,
// for tests of a WebAuthn relying party: it reads the publicKey options a
// server returns and answers what navigator.credentials.create and get,
// then PublicKeyCredential.toJSON, would give a page
// (RegistrationResponseJSON, AuthenticationResponseJSON).
//
// It is written from the WebAuthn Level 3 specification alone, without the
// relying party's library, so that a test of that library's use checks it
// against an independent reading of the format. Its credentials are ES256
// (P-256) discoverable keys, its attestation "none". Faults makes one
// response wrong in one chosen way.
package softauthn

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// coseES256 is the COSE algorithm id of ECDSA with SHA-256 on P-256.
const coseES256 = -7

// Flags of authenticator data (WebAuthn §6.1).
const (
	flagUP = 0x01 // user present
	flagUV = 0x04 // user verified
	flagBE = 0x08 // backup eligible
	flagBS = 0x10 // backed up
	flagAT = 0x40 // attested credential data included
)

// Credential is a passkey the authenticator holds.
type Credential struct {
	ID []byte
	// RPID is the relying party it was made for.
	RPID string
	// UserHandle is the user.id of the creation options, returned in
	// every assertion, as a resident key does.
	UserHandle []byte
	// Counter is the signature counter of the last response; the next
	// assertion signs Counter+1.
	Counter uint32
	key     *ecdsa.PrivateKey
}

// Authenticator holds credentials and answers ceremonies for the pages of
// one origin. It is safe for concurrent use.
type Authenticator struct {
	origin string
	mu     sync.Mutex
	creds  []*Credential
}

// New returns an authenticator without credentials, used from pages of
// origin (scheme://host[:port]).
func New(origin string) *Authenticator { return &Authenticator{origin: origin} }

// Faults make one response wrong; the zero value is an honest browser and
// a passkey that verifies its user.
type Faults struct {
	// Origin is the origin the client data reports instead of the
	// authenticator's: a page the relying party does not serve (phishing).
	Origin string
	// RPID is hashed into the authenticator data instead of the options'
	// rp id: a credential of another relying party.
	RPID string
	// Challenge is signed instead of the options' challenge: an answer
	// to another ceremony, a replay.
	Challenge []byte
	// BadSignature signs other bytes than the ones sent: the signature
	// (the attestation's none has none) does not verify.
	BadSignature bool
	// Counter, when set, is the signature counter of the assertion
	// instead of the next one: equal to or below the last one, it is what
	// a cloned authenticator sends.
	Counter *uint32
	// NoUserVerification clears the UV flag: the user touched the key but
	// gave no PIN or biometric.
	NoUserVerification bool
	// NoUserHandle leaves userHandle out of an assertion, as a
	// credential that is not discoverable does.
	NoUserHandle bool
	// Credential picks the credential of an assertion by id; otherwise
	// it is the first allowed one, or in a discoverable login the first
	// of the rp id.
	Credential []byte
}

// Credentials returns the credentials made so far, oldest first.
func (a *Authenticator) Credentials() []*Credential {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.creds)
}

// creationOptions is what Create reads of
// PublicKeyCredentialCreationOptionsJSON.
type creationOptions struct {
	RP struct {
		ID string `json:"id"`
	} `json:"rp"`
	User struct {
		ID string `json:"id"`
	} `json:"user"`
	Challenge          string       `json:"challenge"`
	PubKeyCredParams   []credParam  `json:"pubKeyCredParams"`
	ExcludeCredentials []descriptor `json:"excludeCredentials"`
	Extensions         struct {
		CredProps bool `json:"credProps"`
	} `json:"extensions"`
}

// requestOptions is what Get reads of
// PublicKeyCredentialRequestOptionsJSON.
type requestOptions struct {
	Challenge        string       `json:"challenge"`
	RPID             string       `json:"rpId"`
	AllowCredentials []descriptor `json:"allowCredentials"`
}

type credParam struct {
	Type string `json:"type"`
	Alg  int    `json:"alg"`
}

type descriptor struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Create makes a credential as navigator.credentials.create({publicKey})
// would, and returns credential.toJSON(). Like a browser, it fails when
// the options exclude a credential it holds or do not offer ES256.
func (a *Authenticator) Create(publicKey json.RawMessage, f Faults) (json.RawMessage, error) {
	var o creationOptions
	if err := json.Unmarshal(publicKey, &o); err != nil {
		return nil, fmt.Errorf("creation options: %w", err)
	}
	challenge, err := b64(o.Challenge)
	if err != nil {
		return nil, fmt.Errorf("challenge: %w", err)
	}
	userHandle, err := b64(o.User.ID)
	if err != nil || len(userHandle) == 0 || len(userHandle) > 64 {
		return nil, fmt.Errorf("user.id %q is not 1 to 64 bytes of base64url", o.User.ID)
	}
	if !slices.Contains(o.PubKeyCredParams, credParam{Type: "public-key", Alg: coseES256}) {
		return nil, errors.New("NotSupportedError: the options do not offer ES256")
	}
	rpID, err := a.rpID(o.RP.ID)
	if err != nil {
		return nil, err
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	for _, d := range o.ExcludeCredentials {
		if id, err := b64(d.ID); err == nil && a.find(rpID, id) != nil {
			return nil, errors.New("InvalidStateError: the authenticator holds an excluded credential")
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	c := &Credential{ID: make([]byte, 16), RPID: rpID, UserHandle: userHandle, key: key}
	_, _ = rand.Read(c.ID)

	clientData := a.clientData("webauthn.create", challenge, f)
	authData, err := authenticatorData(rpID, flags(f)|flagAT, 0, f, c)
	if err != nil {
		return nil, err
	}
	attestation, err := ctap2.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": authData})
	if err != nil {
		return nil, err
	}
	spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	a.creds = append(a.creds, c)
	extensions := map[string]any{}
	if o.Extensions.CredProps {
		extensions["credProps"] = map[string]bool{"rk": true} // every credential here is discoverable
	}
	return json.Marshal(map[string]any{
		"id":                      enc(c.ID),
		"rawId":                   enc(c.ID),
		"type":                    "public-key",
		"authenticatorAttachment": "platform",
		"clientExtensionResults":  extensions,
		"response": map[string]any{
			"clientDataJSON":     enc(clientData),
			"authenticatorData":  enc(authData),
			"transports":         []string{"hybrid", "internal"},
			"publicKey":          enc(spki),
			"publicKeyAlgorithm": coseES256,
			"attestationObject":  enc(attestation),
		},
	})
}

// Get signs an assertion as navigator.credentials.get({publicKey}) would,
// and returns credential.toJSON(). With allowCredentials, only those may
// answer; without, any credential of the rp id (a discoverable login).
func (a *Authenticator) Get(publicKey json.RawMessage, f Faults) (json.RawMessage, error) {
	var o requestOptions
	if err := json.Unmarshal(publicKey, &o); err != nil {
		return nil, fmt.Errorf("request options: %w", err)
	}
	challenge, err := b64(o.Challenge)
	if err != nil {
		return nil, fmt.Errorf("challenge: %w", err)
	}
	rpID, err := a.rpID(o.RPID)
	if err != nil {
		return nil, err
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	c, err := a.pick(rpID, o.AllowCredentials, f.Credential)
	if err != nil {
		return nil, err
	}
	counter := c.Counter + 1
	if f.Counter != nil {
		counter = *f.Counter
	}
	c.Counter = counter

	clientData := a.clientData("webauthn.get", challenge, f)
	authData, err := authenticatorData(rpID, flags(f), counter, f, nil)
	if err != nil {
		return nil, err
	}
	signed := slices.Concat(authData, sum(clientData))
	if f.BadSignature {
		signed = slices.Concat(authData, sum(append(clientData, ' ')))
	}
	sig, err := ecdsa.SignASN1(rand.Reader, c.key, sum(signed))
	if err != nil {
		return nil, err
	}
	response := map[string]any{
		"clientDataJSON":    enc(clientData),
		"authenticatorData": enc(authData),
		"signature":         enc(sig),
	}
	if !f.NoUserHandle {
		response["userHandle"] = enc(c.UserHandle)
	}
	return json.Marshal(map[string]any{
		"id":                      enc(c.ID),
		"rawId":                   enc(c.ID),
		"type":                    "public-key",
		"authenticatorAttachment": "platform",
		"clientExtensionResults":  map[string]any{},
		"response":                response,
	})
}

// rpID is the options' rp id, or the origin's host when they name none
// (as a browser does); a browser refuses one its origin may not use.
func (a *Authenticator) rpID(fromOptions string) (string, error) {
	u, err := url.Parse(a.origin)
	if err != nil {
		return "", fmt.Errorf("origin %q: %w", a.origin, err)
	}
	host := u.Hostname()
	if fromOptions == "" {
		return host, nil
	}
	if host != fromOptions && !bytes.HasSuffix([]byte(host), []byte("."+fromOptions)) {
		return "", fmt.Errorf("SecurityError: rp id %q is not %q or a parent of it", fromOptions, host)
	}
	return fromOptions, nil
}

// pick chooses the credential that answers; the caller holds a.mu.
func (a *Authenticator) pick(rpID string, allow []descriptor, want []byte) (*Credential, error) {
	for _, c := range a.creds {
		if c.RPID != rpID || (want != nil && !bytes.Equal(c.ID, want)) {
			continue
		}
		if len(allow) == 0 || slices.ContainsFunc(allow, func(d descriptor) bool {
			id, err := b64(d.ID)
			return err == nil && bytes.Equal(id, c.ID)
		}) {
			return c, nil
		}
	}
	return nil, errors.New("NotAllowedError: no credential of the authenticator may answer")
}

func (a *Authenticator) find(rpID string, id []byte) *Credential {
	for _, c := range a.creds {
		if c.RPID == rpID && bytes.Equal(c.ID, id) {
			return c
		}
	}
	return nil
}

// clientData is the clientDataJSON of a ceremony (WebAuthn §5.8.1), in the
// member order browsers write.
func (a *Authenticator) clientData(typ string, challenge []byte, f Faults) []byte {
	origin := a.origin
	if f.Origin != "" {
		origin = f.Origin
	}
	if f.Challenge != nil {
		challenge = f.Challenge
	}
	data, _ := json.Marshal(struct {
		Type        string `json:"type"`
		Challenge   string `json:"challenge"`
		Origin      string `json:"origin"`
		CrossOrigin bool   `json:"crossOrigin"`
	}{typ, enc(challenge), origin, false})
	return data
}

func flags(f Faults) byte {
	fl := byte(flagUP | flagBE | flagBS)
	if !f.NoUserVerification {
		fl |= flagUV
	}
	return fl
}

// authenticatorData is rpIdHash, flags, counter and, for a new credential
// c, the attested credential data: an AAGUID of zeros (attestation none),
// the id's length and id, and the COSE_Key of the public key (WebAuthn
// §6.1, §6.5.1).
func authenticatorData(rpID string, fl byte, counter uint32, f Faults, c *Credential) ([]byte, error) {
	if f.RPID != "" {
		rpID = f.RPID
	}
	out := slices.Concat(sum([]byte(rpID)), []byte{fl}, binary.BigEndian.AppendUint32(nil, counter))
	if c == nil {
		return out, nil
	}
	point, err := c.key.PublicKey.Bytes() // 0x04, x, y
	if err != nil {
		return nil, err
	}
	x, y := point[1:33], point[33:65]
	// COSE_Key, RFC 9053 §7.1.1: kty EC2 (1: 2), alg ES256 (3: -7),
	// crv P-256 (-1: 1), x (-2), y (-3). CTAP2 canonical CBOR.
	key, err := ctap2.Marshal(map[int]any{1: 2, 3: coseES256, -1: 1, -2: x, -3: y})
	if err != nil {
		return nil, err
	}
	out = append(out, make([]byte, 16)...)
	out = binary.BigEndian.AppendUint16(out, uint16(len(c.ID))) //nolint:gosec // G115: ids are 16 bytes
	out = append(out, c.ID...)
	return append(out, key...), nil
}

// ctap2 encodes CBOR the way authenticators must (CTAP2 canonical form).
var ctap2, _ = cbor.CTAP2EncOptions().EncMode()

func sum(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}

func enc(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// b64 decodes base64url with or without padding, as parse*FromJSON does.
func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(string(bytes.TrimRight([]byte(s), "=")))
}
