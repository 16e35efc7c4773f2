// A real OAuth 2.1 / OpenID Connect authorization server for the suite: npm `oidc-provider`
// (certified), on 127.0.0.1, configured for what an MCP resource server meets.
//
// Environment:
//   OIDC_PROVIDER  the installed package's folder (tests/integration/clients.py installs it)
//   OIDC_PORTS     one port, or several separated by commas: an issuer on each
//                  (http://127.0.0.1:PORT), all signing with the same keys
//   OIDC_KEYS      a JSON file {"keys": [private JWKs]}: the first of each kind signs, all
//                  are published (rotate: restart with a new key first)
//   OIDC_ACCOUNT   the account the automated login signs in (the tokens' `sub`)
//
// Clients: `ci-rs` and `ci-es` (secret `secret`) for client_credentials, their access
// tokens signed RS256 and ES256; open dynamic registration for the authorization-code +
// PKCE flow, whose login and consent are approved without a browser. An access token asked
// for with `resource=<URL>` is a JWT whose `aud` is that URL.
//
// For tests only: `POST /test/clock?offset=S` moves this server's clock S seconds (tokens
// issued "in the past" or "in the future"). Prints `ready` once every issuer listens.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const entry = path.join(process.env.OIDC_PROVIDER, 'lib', 'index.js');
const { default: Provider } = await import(pathToFileURL(entry).href);

const ports = process.env.OIDC_PORTS.split(',').map(Number);
const jwks = JSON.parse(readFileSync(process.env.OIDC_KEYS, 'utf8'));
const account = process.env.OIDC_ACCOUNT;

let offsetMs = 0;
const realNow = Date.now;
Date.now = () => realNow() + offsetMs;

const SIGNING = { 'ci-es': 'ES256' };

function configuration() {
  return {
    clients: ['ci-rs', 'ci-es'].map((id) => ({
      client_id: id,
      client_secret: 'secret',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
    })),
    jwks,
    scopes: ['openid', 'offline_access'],
    pkce: { required: () => true },
    findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    clientBasedCORS: () => true,
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx, client, oneOf) => oneOf,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => ({
          scope: '',
          audience: resource,
          accessTokenTTL: 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: SIGNING[client.clientId] ?? 'RS256' } },
        }),
      },
    },
  };
}

// The login and consent a person would give: the fixed account, every scope asked for.
async function interact(provider, req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session, grantId } = details;
  if (prompt.name === 'login') {
    await provider.interactionFinished(req, res, { login: { accountId: account } },
      { mergeWithLastSubmission: false });
    return;
  }
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) {
    grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  }
  for (const [resource, scopes] of Object.entries(prompt.details.missingResourceScopes ?? {})) {
    grant.addResourceScope(resource, scopes.join(' '));
  }
  if (params.resource) {
    grant.addResourceScope(params.resource, '');
  }
  await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } },
    { mergeWithLastSubmission: true });
}

function serve(port) {
  const provider = new Provider(`http://127.0.0.1:${port}`, configuration());
  const callback = provider.callback();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, `http://127.0.0.1:${port}`);
    if (url.pathname === '/test/clock' && req.method === 'POST') {
      offsetMs = Number(url.searchParams.get('offset')) * 1000;
      res.writeHead(204).end();
    } else if (url.pathname.startsWith('/interaction/')) {
      interact(provider, req, res).catch((err) => {
        res.writeHead(500).end(String(err));
      });
    } else {
      callback(req, res);
    }
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
}

await Promise.all(ports.map(serve));
process.stdout.write('ready\n');
