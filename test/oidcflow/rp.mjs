// rp.mjs is a relying party written with openid-client 6 (panva), run by
// openidclient_test.go. It takes its settings as JSON in argv[2]:
//   {issuer, clientId, clientSecret?, clientAuth?, alg?, redirectUri, scope, postLogoutRedirectUri?, register?}
// and talks to the test in JSON lines. With register (a client name), it
// first registers a public client itself (RFC 7591) and writes
//   {"step":"registered","clientId":…,"metadata":…}
// Then it writes
//   {"step":"authorize","url":…}
// reads {"callback":…} (the URL the browser was sent back to), finishes
// the code flow, and writes
//   {"step":"result", …what each call answered…}
// then, when the settings name a postLogoutRedirectUri, the URL of
// RP-Initiated Logout with the flow's ID token as the hint,
//   {"step":"end_session","url":…}
// or, at the first call that throws, {"step":"error", …}. Every check of
// the library stays on: the ID token's signature against the JWKS, iss,
// aud, exp, nonce, at_hash, the state, and RFC 9207's iss parameter of
// the authorization response.
import * as client from 'openid-client'
import { createInterface } from 'node:readline'
import { attempt, failure, say } from './report.mjs'

const settings = JSON.parse(process.argv[2])
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()

// header is the decoded protected header of a JWS.
const header = (jws) => JSON.parse(Buffer.from(jws.split('.')[0], 'base64url').toString())

async function main() {
  const metadata = { redirect_uris: [settings.redirectUri] }
  if (settings.alg) metadata.id_token_signed_response_alg = settings.alg
  let auth
  if (settings.clientSecret) {
    metadata.client_secret = settings.clientSecret
    auth = settings.clientAuth === 'post' ? client.ClientSecretPost() : client.ClientSecretBasic()
  } else {
    auth = client.None()
  }
  const options = { execute: [client.allowInsecureRequests] } // http on the loopback issuer
  let config
  if (settings.register) {
    // Dynamic Client Registration (RFC 7591) of a public client at the
    // registration_endpoint of the metadata.
    metadata.token_endpoint_auth_method = 'none'
    metadata.grant_types = ['authorization_code', 'refresh_token']
    metadata.client_name = settings.register
    config = await client.dynamicClientRegistration(new URL(settings.issuer), metadata, client.None(), options)
    say({ step: 'registered', clientId: config.clientMetadata().client_id, metadata: config.clientMetadata() })
  } else {
    config = await client.discovery(new URL(settings.issuer), settings.clientId, metadata, auth, options)
  }

  const verifier = client.randomPKCECodeVerifier()
  const nonce = client.randomNonce()
  const state = client.randomState()
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: settings.redirectUri,
    scope: settings.scope,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    nonce,
    state,
  })
  say({ step: 'authorize', url: url.href })
  const { value: line } = await lines.next()
  const callback = new URL(JSON.parse(line).callback)

  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedNonce: nonce,
    expectedState: state,
    idTokenExpected: true,
  })
  const claims = tokens.claims()
  const result = {
    step: 'result',
    tokenType: tokens.token_type,
    scope: tokens.scope,
    expiresIn: tokens.expires_in,
    hasRefreshToken: typeof tokens.refresh_token === 'string',
    idTokenHeader: header(tokens.id_token),
    accessTokenHeader: header(tokens.access_token),
    claims,
  }
  result.userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub)
  if (settings.clientSecret) {
    result.introspection = await client.tokenIntrospection(config, tokens.access_token)
  }

  // Refresh: a new pair; the old refresh token is spent.
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token)
  result.refresh = {
    scope: refreshed.scope,
    rotated: typeof refreshed.refresh_token === 'string' && refreshed.refresh_token !== tokens.refresh_token,
    newAccessToken: refreshed.access_token !== tokens.access_token,
    // An ID token on refresh is optional (OpenID Connect Core 12.2);
    // when there is one, the library checked it, and sub stays.
    claims: refreshed.id_token ? refreshed.claims() : null,
  }
  result.refresh.userinfo = await attempt(() => client.fetchUserInfo(config, refreshed.access_token, claims.sub))

  // Revocation of the refresh token (RFC 7009) ends the grant's session:
  // neither it nor the access token of the same session serves any more.
  await client.tokenRevocation(config, refreshed.refresh_token)
  result.afterRevocation = {
    refresh: await attempt(() => client.refreshTokenGrant(config, refreshed.refresh_token)),
    userinfo: await attempt(() => client.fetchUserInfo(config, refreshed.access_token, claims.sub)),
  }
  if (settings.clientSecret) {
    result.afterRevocation.introspection = await client.tokenIntrospection(config, refreshed.access_token)
  }
  say(result)

  // RP-Initiated Logout with the ID token of the flow as the hint, when
  // the test gives a post-logout redirect URI.
  if (settings.postLogoutRedirectUri) {
    const end = client.buildEndSessionUrl(config, {
      id_token_hint: tokens.id_token,
      post_logout_redirect_uri: settings.postLogoutRedirectUri,
      state: 'signed-out',
    })
    say({ step: 'end_session', url: end.href })
  }
}

main().then(
  () => process.exit(0),
  async (e) => {
    say({ step: 'error', ...(await failure(e)), stack: e?.stack })
    process.exit(1)
  },
)
