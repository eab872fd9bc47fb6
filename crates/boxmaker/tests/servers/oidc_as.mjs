// An OAuth authorization server for crates/boxmaker/tests/oauth.rs: the OpenID-certified
// `oidc-provider` (tests/node-conformance, pinned), configured as an MCP server's
// authorization server: dynamic client registration, PKCE, resource indicators (RFC 8707;
// opaque access tokens for the one resource, scope `mcp`), refresh tokens, revocation and
// introspection (the resource server checks tokens there). Interactions are consented at
// once for the test's account: the "browser" is a script.
//
// Run with tests/node-conformance's node:
//   oidc_as.mjs MODULES_DIR PORT RESOURCE ACCESS_TTL_SECONDS RS_SECRET STATE_DIR
// While STATE_DIR/revoked exists, every token request is refused (`invalid_grant`): a
// sign-in revoked at the authorization server.

import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [modules, port, resource, ttl, rsSecret, state] = process.argv.slice(2);
const { default: Provider, errors } = await import(
  pathToFileURL(path.join(modules, 'oidc-provider/lib/index.js')).href
);
const issuer = `http://localhost:${port}`;
const accessTtl = Number(ttl);

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'resource-server',
      client_secret: rsSecret,
      redirect_uris: [],
      response_types: [],
      grant_types: [],
    },
  ],
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => resource,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, indicator) => {
        if (indicator !== resource) throw new errors.InvalidTarget();
        return { scope: 'mcp', accessTokenFormat: 'opaque', accessTokenTTL: accessTtl };
      },
    },
  },
  scopes: ['openid', 'offline_access', 'mcp'],
  interactions: { url: async (_ctx, interaction) => `/interaction/${interaction.uid}` },
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: { AccessToken: accessTtl, RefreshToken: 3600, AuthorizationCode: 60, Interaction: 600, Session: 600, Grant: 3600 },
  pkce: { required: () => true },
  cookies: { keys: ['boxmaker-test-cookie-key'] },
});

const handler = provider.callback();

async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session, grantId } = details;
  if (prompt.name === 'login') {
    return provider.interactionFinished(req, res, { login: { accountId: 'tester' } }, {
      mergeWithLastSubmission: false,
    });
  }
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
  if (prompt.details.missingResourceScopes) {
    for (const [indicator, scopes] of Object.entries(prompt.details.missingResourceScopes)) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
  }
  const id = await grant.save();
  return provider.interactionFinished(req, res, { consent: { grantId: id } }, {
    mergeWithLastSubmission: true,
  });
}

http
  .createServer((req, res) => {
    if (req.url.startsWith('/interaction/')) {
      interaction(req, res).catch((e) => {
        res.statusCode = 500;
        res.end(String(e));
      });
      return;
    }
    if (req.url.startsWith('/token') && !req.url.startsWith('/token/') && fs.existsSync(path.join(state, 'revoked'))) {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'invalid_grant', error_description: 'grant revoked' }));
      return;
    }
    handler(req, res);
  })
  .listen(Number(port), '127.0.0.1');
