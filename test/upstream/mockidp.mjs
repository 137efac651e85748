// mockidp.mjs runs oauth2-mock-server as an OpenID provider that
// misbehaves when told to. Its one argument is JSON: {"port": …}; the
// issuer is http://127.0.0.1:<port>. Its authorize endpoint approves at
// once (oauth2-mock-server's way), so a flow needs no browser.
//
// What a flow gets is set beforehand with POST /control/flows and a JSON
// body {"state": …, "case": …, "claims": {…}}: state names the flow (the
// state parameter of its authorization request); without it the entry
// serves the next flow that has none of its own. claims are the
// person's (sub, email, email_verified, name), in the ID token and at
// userinfo. case is one of
//   ok                the flow as it should be;
//   provider_error    the redirect carries error=access_denied, no code;
//   wrong_nonce, wrong_issuer, wrong_audience, expired
//                     the ID token's nonce, iss, aud or exp is wrong;
//   foreign_key       the ID token is signed by a key not in the JWKS,
//                     under the kid of the one that is.
// It writes one line, {"step":"ready","issuer":…}, once it listens, and
// runs until it is killed.
import { createServer } from 'node:http'
import { OAuth2Issuer, OAuth2Service } from 'oauth2-mock-server'

const arg = JSON.parse(process.argv[2])
const issuer = new OAuth2Issuer()
issuer.url = `http://127.0.0.1:${arg.port}`
await issuer.keys.generate('RS256')
// The foreign key signs under the issuer's url, like a forger would.
const foreign = new OAuth2Issuer()
foreign.url = issuer.url
await foreign.keys.generate('RS256')
const publishedKid = issuer.keys.toJSON()[0].kid

const service = new OAuth2Service(issuer)

const defaultClaims = { sub: 'mock-person', email: 'mock-person@example.com', email_verified: true, name: 'Mock Person' }
const byState = new Map()
const queued = []
const byCode = new Map()
const byAccessToken = new Map()

const cases = new Set(['ok', 'provider_error', 'wrong_nonce', 'wrong_issuer', 'wrong_audience', 'expired', 'foreign_key'])

// At the authorize endpoint: the flow of the request's state, or the
// next queued one, kept under the code it gets.
service.on('beforeAuthorizeRedirect', (redirect, req) => {
  const state = req.query.state
  const flow = byState.get(state) ?? queued.shift() ?? { case: 'ok', claims: defaultClaims }
  byState.delete(state)
  const code = redirect.url.searchParams.get('code')
  if (flow.case === 'provider_error') {
    redirect.url.searchParams.delete('code')
    redirect.url.searchParams.set('error', 'access_denied')
    redirect.url.searchParams.set('error_description', 'The person said no')
    return
  }
  if (code) byCode.set(code, flow)
})

// At the token endpoint: the request learns its flow, which the
// response's rewrite below reads.
service.on('beforeTokenSigning', (_token, req) => {
  const flow = byCode.get(req.body?.code)
  if (flow) req.mockFlow = flow
})
service.on('beforeResponse', (response, req) => {
  if (req.mockFlow && response.body?.access_token) byAccessToken.set(response.body.access_token, req.mockFlow)
})
service.on('beforeUserinfo', (response, req) => {
  const token = (req.headers.authorization ?? '').replace(/^Bearer /i, '')
  const flow = byAccessToken.get(token)
  if (flow) response.body = { ...flow.claims }
})

const decode = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString())

// idToken is the ID token the flow gets: oauth2-mock-server's, with the
// person's claims and the case's fault, signed again.
async function idToken (original, flow) {
  const claims = { ...decode(original), ...flow.claims }
  const now = Math.floor(Date.now() / 1000)
  switch (flow.case) {
    case 'wrong_nonce': claims.nonce = 'not-the-nonce-of-this-flow'; break
    case 'wrong_issuer': claims.iss = 'http://127.0.0.1:1'; break
    case 'wrong_audience': claims.aud = 'another-client'; break
    case 'expired': Object.assign(claims, { iat: now - 7200, nbf: now - 7200, exp: now - 3600 }); break
  }
  const signer = flow.case === 'foreign_key' ? foreign : issuer
  return signer.buildToken({
    scopesOrTransform: (header, payload) => {
      for (const k of Object.keys(payload)) delete payload[k]
      Object.assign(payload, claims)
      header.kid = publishedKid
    },
  })
}

// rewriteToken holds back the token endpoint's answer (express ends it
// with one res.end) and sends it with the flow's ID token instead.
function rewriteToken (req, res) {
  const end = res.end
  res.end = function (chunk, ...rest) {
    if (!req.mockFlow || res.headersSent || chunk === undefined) return end.call(this, chunk, ...rest)
    let body
    try {
      body = JSON.parse(chunk.toString())
    } catch {
      return end.call(this, chunk, ...rest)
    }
    if (!body.id_token) return end.call(this, chunk, ...rest)
    idToken(body.id_token, req.mockFlow).then((jwt) => {
      body.id_token = jwt
      const out = JSON.stringify(body)
      res.setHeader('Content-Length', Buffer.byteLength(out))
      res.removeHeader('ETag')
      end.call(res, out)
    }, (e) => {
      process.stderr.write(`mockidp: sign the ID token: ${e}\n`)
      end.call(res, chunk, ...rest)
    })
    return res
  }
}

function control (req, res) {
  let data = ''
  req.on('data', (c) => { data += c })
  req.on('end', () => {
    let flow
    try {
      flow = JSON.parse(data)
    } catch {
      flow = {}
    }
    if (req.method !== 'POST' || !cases.has(flow.case)) {
      res.writeHead(400).end(`want POST {"case": one of ${[...cases].join(', ')}}\n`)
      return
    }
    const entry = { case: flow.case, claims: { ...defaultClaims, ...flow.claims } }
    if (flow.state) byState.set(flow.state, entry)
    else queued.push(entry)
    res.writeHead(204).end()
  })
}

const server = createServer((req, res) => {
  if (req.url === '/control/flows') return control(req, res)
  if (req.method === 'POST' && req.url.startsWith('/token')) rewriteToken(req, res)
  return service.requestHandler(req, res)
})
server.listen(arg.port, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ step: 'ready', issuer: issuer.url }) + '\n')
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
