// Completes the authorization flow of a Weft authorization server with the
// TypeScript SDK v2 client's OAuth client provider, registering by Client ID
// Metadata Document, then calls whoami. The test plays the browser: this
// script prints "AUTH <url>" and reads the redirect's query from stdin.
// With "refresh" as a fourth argument it then waits until the access token
// has expired and calls whoami again, which the SDK can only do by
// refreshing ("REFRESHED <json>").
// Usage: node oauth.mjs MCP_URL CLIENT_ID_URL REDIRECT_URI [refresh]
import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [mcpURL, clientIdURL, redirect, mode] = process.argv.slice(2);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
let info, tokens, verifier, discovery, asURL, resourceURL;
const provider = {
  get redirectUrl() { return redirect; },
  clientMetadataUrl: clientIdURL,
  get clientMetadata() {
    return { client_name: 'Test MCP Client', redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'], token_endpoint_auth_method: 'none' };
  },
  clientInformation() { return info; },
  saveClientInformation(i) { info = i; },
  tokens() { return tokens; },
  saveTokens(t) { tokens = t; },
  redirectToAuthorization(u) { console.log('AUTH ' + u.toString()); },
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
  saveDiscoveryState(s) { discovery = s; },
  discoveryState() { return discovery; },
  saveAuthorizationServerUrl(u) { asURL = u; },
  authorizationServerUrl() { return asURL; },
  saveResourceUrl(u) { resourceURL = u; },
};
const opts = { versionNegotiation: { mode: { pin: '2026-07-28' } } };
const first = new Client({ name: 'weft-ts-oauth', version: '1.0.0' }, opts);
const transport = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
let needsAuth = false;
try {
  await first.connect(transport);
  await first.listTools();
} catch (e) {
  if (!String(e?.name).includes('Unauthorized') && !String(e?.message).includes('nauthorized')) throw e;
  needsAuth = true;
}
if (needsAuth) {
  const { value } = await lines.next();
  await transport.finishAuth(new URLSearchParams(value));
}
const client = new Client({ name: 'weft-ts-oauth', version: '1.0.0' }, opts);
await client.connect(new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider }));
const result = await client.callTool({ name: 'whoami', arguments: {} });
console.log('RESULT ' + JSON.stringify({ result, tokenType: tokens?.token_type, hasRefresh: !!tokens?.refresh_token }));
if (mode === 'refresh') {
  const old = tokens?.access_token;
  await new Promise((r) => setTimeout(r, ((tokens?.expires_in ?? 0) + 1.5) * 1000));
  const again = await client.callTool({ name: 'whoami', arguments: {} });
  console.log('REFRESHED ' + JSON.stringify({ result: again, changed: !!tokens?.access_token && tokens.access_token !== old }));
}
await client.close();
process.exit(0);
