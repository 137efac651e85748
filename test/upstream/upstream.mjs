// upstream.mjs runs oidc-provider, an OpenID-certified provider, as the
// upstream a userd signs people in through (it stands for Google or
// Okta). Its one argument is JSON: the port, the host of the issuer
// (http://<host>:<port>), one confidential client (id, secret, redirect
// URIs) that must use PKCE, and the accounts people may sign in as, by
// login: each account's claims (email, email_verified, name; sub is the
// login). Sign-in and consent are oidc-provider's own development pages
// (devInteractions): any password signs an account in. The claims of
// the scopes go into the ID token as well as userinfo, as Google's do.
// It writes one line, {"step":"ready","issuer":…}, once it listens, and
// runs until it is killed.
import { Provider } from 'oidc-provider'

const arg = JSON.parse(process.argv[2])
const issuer = `http://${arg.host}:${arg.port}`
const accounts = arg.accounts ?? {}

const provider = new Provider(issuer, {
  clients: [{
    client_id: arg.clientId,
    client_secret: arg.clientSecret,
    redirect_uris: arg.redirectUris,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: arg.clientAuth ?? 'client_secret_basic',
  }],
  // Every client, confidential ones too, must send an S256 challenge.
  pkce: { required: () => true },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
  },
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['upstream-test-cookie-key-not-a-secret'] },
  async findAccount (_ctx, sub) {
    const claims = accounts[sub]
    if (claims === undefined) return undefined
    return { accountId: sub, async claims () { return { sub, ...claims } } }
  },
})
// Unknown logins at the development sign-in page are refused by
// findAccount's undefined: oidc-provider then asks again.

const server = provider.listen(arg.port, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ step: 'ready', issuer }) + '\n')
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
