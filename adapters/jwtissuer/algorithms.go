package jwtissuer

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/userd/userd/domain"
)

// algorithm is what differs between the supported algorithms.
type algorithm struct {
	method jwt.SigningMethod
	// generate returns a new key's secret as stored: PKCS#8 DER for the
	// asymmetric algorithms, raw bytes for HMAC.
	generate func() ([]byte, error)
	// parse returns the signing and the verification key of a stored secret.
	parse func(secret []byte) (sign, verify any, err error)
	// jwk returns the public JWK of a verification key; false for a
	// symmetric key, which is never published.
	jwk func(kid string, verify any) (JWK, bool)
}

var algorithms = map[string]algorithm{
	EdDSA: {
		method: jwt.SigningMethodEdDSA,
		generate: func() ([]byte, error) {
			_, priv, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return nil, err
			}
			return x509.MarshalPKCS8PrivateKey(priv)
		},
		parse: func(secret []byte) (any, any, error) {
			priv, err := parseEd25519(secret)
			if err != nil {
				return nil, nil, err
			}
			return priv, priv.Public().(ed25519.PublicKey), nil
		},
		jwk: func(kid string, verify any) (JWK, bool) {
			return JWK{
				Kty: "OKP", Crv: "Ed25519",
				X:   base64.RawURLEncoding.EncodeToString(verify.(ed25519.PublicKey)),
				Kid: kid, Alg: EdDSA, Use: "sig",
			}, true
		},
	},
	ES256: {
		method: jwt.SigningMethodES256,
		generate: func() ([]byte, error) {
			priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				return nil, err
			}
			return x509.MarshalPKCS8PrivateKey(priv)
		},
		parse: func(secret []byte) (any, any, error) {
			priv, err := parseP256(secret)
			if err != nil {
				return nil, nil, err
			}
			return priv, &priv.PublicKey, nil
		},
		jwk: func(kid string, verify any) (JWK, bool) {
			// The uncompressed point 0x04 || x || y; parseP256 made sure it
			// encodes.
			b, err := verify.(*ecdsa.PublicKey).Bytes()
			if err != nil || len(b) != 65 {
				return JWK{}, false
			}
			return JWK{
				Kty: "EC", Crv: "P-256",
				X:   base64.RawURLEncoding.EncodeToString(b[1:33]),
				Y:   base64.RawURLEncoding.EncodeToString(b[33:]),
				Kid: kid, Alg: ES256, Use: "sig",
			}, true
		},
	},
	HS256: {
		method: jwt.SigningMethodHS256,
		generate: func() ([]byte, error) {
			key := make([]byte, MinHMACKeyLen)
			_, err := rand.Read(key)
			return key, err
		},
		parse: func(secret []byte) (any, any, error) {
			if len(secret) < MinHMACKeyLen {
				return nil, nil, fmt.Errorf("HMAC key shorter than %d bytes", MinHMACKeyLen)
			}
			return secret, secret, nil
		},
		jwk: func(string, any) (JWK, bool) { return JWK{}, false },
	},
}

// rs256 is the algorithm of the OpenID provider's keys. It is kept out of
// algorithms, so that access tokens can never be configured with it nor
// accept it.
var rs256 = algorithm{
	method: jwt.SigningMethodRS256,
	generate: func() ([]byte, error) {
		priv, err := rsa.GenerateKey(rand.Reader, ProviderKeyBits)
		if err != nil {
			return nil, err
		}
		return x509.MarshalPKCS8PrivateKey(priv)
	},
	parse: func(secret []byte) (any, any, error) {
		priv, err := parseRSA(secret)
		if err != nil {
			return nil, nil, err
		}
		return priv, &priv.PublicKey, nil
	},
	jwk: func(kid string, verify any) (JWK, bool) {
		pub := verify.(*rsa.PublicKey)
		return JWK{
			Kty: "RSA",
			N:   base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
			E:   base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
			Kid: kid, Alg: RS256, Use: "sig",
		}, true
	},
}

func parseEd25519(der []byte) (ed25519.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse PKCS#8: %w", err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("not an Ed25519 key but %T", k)
	}
	return priv, nil
}

func parseP256(der []byte) (*ecdsa.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse PKCS#8: %w", err)
	}
	priv, ok := k.(*ecdsa.PrivateKey)
	if !ok || priv.Curve != elliptic.P256() {
		return nil, fmt.Errorf("not a P-256 ECDSA key but %T", k)
	}
	if _, err := priv.PublicKey.Bytes(); err != nil {
		return nil, fmt.Errorf("invalid P-256 public key: %w", err)
	}
	return priv, nil
}

// parseRSA parses an RSA private key (which x509 validates and
// precomputes) of at least MinRSAKeyBits.
func parseRSA(der []byte) (*rsa.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse PKCS#8: %w", err)
	}
	priv, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("not an RSA key but %T", k)
	}
	if bits := priv.N.BitLen(); bits < MinRSAKeyBits {
		return nil, fmt.Errorf("RSA key of %d bits, fewer than %d", bits, MinRSAKeyBits)
	}
	return priv, nil
}

// newStoredKey generates a key of kind with a random kid, created at now.
func newStoredKey(kind keyKind, now time.Time) (domain.SigningKey, error) {
	name, alg := kind.name, kind.alg
	secret, err := alg.generate()
	if err != nil {
		return domain.SigningKey{}, fmt.Errorf("jwt issuer: generate %s key: %w", name, err)
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return domain.SigningKey{}, fmt.Errorf("jwt issuer: kid: %w", err)
	}
	return domain.SigningKey{
		ID:        hex.EncodeToString(id[:]),
		Purpose:   kind.purpose,
		Algorithm: name,
		Secret:    secret,
		CreatedAt: now,
	}, nil
}
