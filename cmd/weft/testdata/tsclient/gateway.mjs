// Signs in at a `weft gateway`'s authorization server with the TypeScript
// SDK v2 client's OAuth client provider (registering by Client ID Metadata
// Document, or dynamically when CLIENT_ID_URL is "-": the SDK takes only
// https metadata URLs), then lists the tools and makes the calls given as JSON. The
// test plays the browser: this script prints "AUTH <url>" and reads the
// redirect's query from stdin, again when a call needs more scopes (the
// SDK's 403 insufficient_scope step-up), then retries the call.
// Usage: node gateway.mjs MCP_URL CLIENT_ID_URL REDIRECT_URI CALLS_JSON
// CALLS_JSON: [{"name": "...", "arguments": {...}}, ...]; each prints
// "CALL <json>" with the result or the error.
import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [mcpURL, clientIdURL, redirect, callsJSON] = process.argv.slice(2);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
let info, tokens, verifier, discovery, asURL;
const provider = {
  get redirectUrl() { return redirect; },
  clientMetadataUrl: clientIdURL === '-' ? undefined : clientIdURL,
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
  saveResourceUrl() {},
};
const opts = { versionNegotiation: { mode: { pin: '2026-07-28' } } };
const first = new Client({ name: 'weft-ts-gateway', version: '1.0.0' }, opts);
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
const client = new Client({ name: 'weft-ts-gateway', version: '1.0.0' }, opts);
const second = new StreamableHTTPClientTransport(new URL(mcpURL), { authProvider: provider });
await client.connect(second);
const names = async () => (await client.listTools()).tools.map((t) => t.name);
console.log('TOOLS ' + JSON.stringify(await names()));
const unauthorized = (e) => String(e?.name).includes('Unauthorized') || String(e?.message).includes('nauthorized');
for (const c of JSON.parse(callsJSON)) {
  const call = () => client.callTool({ name: c.name, arguments: c.arguments ?? {} });
  try {
    let result;
    try {
      result = await call();
    } catch (e) {
      if (!unauthorized(e)) throw e;
      const { value } = await lines.next();
      await second.finishAuth(new URLSearchParams(value));
      result = await call();
    }
    console.log('CALL ' + JSON.stringify({ name: c.name, result }));
  } catch (e) {
    console.log('CALL ' + JSON.stringify({ name: c.name, error: String(e?.message ?? e), code: e?.code }));
  }
}
console.log('TOOLS ' + JSON.stringify(await names()));
console.log('SCOPE ' + JSON.stringify(tokens?.scope ?? ''));
await client.close();
process.exit(0);
