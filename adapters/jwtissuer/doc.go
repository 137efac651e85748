// Package jwtissuer implements ports.TokenIssuer: JWT access tokens signed
// with one configured algorithm (EdDSA by default, ES256 or HS256) by keys
// that live in a ports.KeyStore, so that every node of a deployment signs and
// verifies with the same keys. It renders the public keys as a JWK set for
// /.well-known/jwks.json, rotates keys and retires them once no token they
// signed can still be valid (RFC 8725).
package jwtissuer
