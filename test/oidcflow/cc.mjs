// cc.mjs is a service written with oauth4webapi 3 (panva), run by
// openidclient_test.go: a confidential client that gets its own access
// token with the client_credentials grant and introspects tokens
// (RFC 7662), from the RFC 8414 metadata
// (/.well-known/oauth-authorization-server). Its settings are JSON in
// argv[2]: {issuer, clientId, clientSecret, scope, userToken}; it writes
// one JSON line, {"step":"result", …what each call answered…}, or
// {"step":"error", …} when something it did not expect threw.
import * as oauth from 'oauth4webapi'
import { attempt, failure, say } from './report.mjs'

const settings = JSON.parse(process.argv[2])
const insecure = { [oauth.allowInsecureRequests]: true } // http on the loopback issuer

// part is the decoded part i of a JWS.
const part = (jws, i) => JSON.parse(Buffer.from(jws.split('.')[i], 'base64url').toString())

async function main() {
  const issuer = new URL(settings.issuer)
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
  )
  const client = { client_id: settings.clientId }
  const basic = oauth.ClientSecretBasic(settings.clientSecret)
  const post = oauth.ClientSecretPost(settings.clientSecret)

  const grant = (auth, scope) =>
    attempt(async () =>
      oauth.processClientCredentialsResponse(
        as,
        client,
        await oauth.clientCredentialsGrantRequest(as, client, auth, { scope }, insecure),
      ),
    )
  const introspect = (auth, token) =>
    attempt(async () =>
      oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, auth, token, insecure)),
    )

  const result = { step: 'result', metadataIssuer: as.issuer }
  const tokens = await grant(basic, settings.scope)
  result.grant = tokens
  if (tokens.ok) {
    const at = tokens.value.access_token
    result.accessTokenHeader = part(at, 0)
    result.accessTokenClaims = part(at, 1)
    result.introspection = await introspect(post, at)
  }
  result.introspectUser = await introspect(basic, settings.userToken)
  result.introspectGarbage = await introspect(basic, 'not-a-token')
  result.wrongSecretGrant = await grant(oauth.ClientSecretBasic('x' + settings.clientSecret), settings.scope)
  result.wrongSecretIntrospection = await introspect(oauth.ClientSecretPost('x' + settings.clientSecret), 'not-a-token')
  result.unknownScope = await grant(basic, 'openid admin')
  say(result)
}

main().then(
  () => process.exit(0),
  async (e) => {
    say({ step: 'error', ...(await failure(e)), stack: e?.stack })
    process.exit(1)
  },
)
