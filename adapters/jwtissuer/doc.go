// Package jwtissuer holds the server-held keys of userd and what is made
// with them, in three types over one ports.KeyStore, so that every node of
// a deployment signs, verifies and derives alike:
//
//   - Issuer implements ports.TokenIssuer: JWT access tokens signed with
//     one configured algorithm (EdDSA by default, ES256 or HS256). It also
//     renders the public keys as a JWK set for /.well-known/jwks.json
//     (JWKSJSON), which the application never needs.
//   - KeyManager implements ports.AccessTokenKeys: it rotates the signing
//     keys and lists them; old keys retire once no token they signed can
//     still be valid (RFC 8725).
//   - RefreshCodec implements ports.RefreshTokenCodec: refresh tokens, their
//     successors (an HMAC under a shared key) and their stored hashes.
//
// With Options.OIDCProvider the Issuer also keeps the OpenID provider's
// RS256 keys (domain.KeyPurposeOIDC), published in the same JWK set and
// rotated by the KeyManager in the same call as the access-token keys;
// Issuer.ProviderKeys hands them to the provider's adapter in
// standard-library types (providerkeys.go).
//
// Constructors only check their arguments and do no I/O. Issuer.Start and
// RefreshCodec.Start read (or create) the keys and must succeed before
// anything is served; Issuer.Run, in a goroutine from then until the
// service stops, reloads the keys so that a rotation made elsewhere is
// picked up.
//
// Files: options.go (Options and defaults), algorithms.go (key generation
// and parsing per algorithm), keyset.go (loading, retirement schedule,
// reloads), issuer.go, signer.go (Issue), verifier.go (Verify) with
// cache.go, jwks.go, keymanager.go, providerkeys.go, refreshcodec.go.
package jwtissuer
