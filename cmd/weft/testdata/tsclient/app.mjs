// Reads the demo's MCP App with the TypeScript SDK v2 client, declaring the
// io.modelcontextprotocol/ui extension. Usage: node app.mjs URL
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.argv[2]);
const client = new Client(
  { name: 'weft-ts-apps', version: '1.0.0' },
  {
    capabilities: {
      extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } },
    },
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  },
);
await client.connect(new StreamableHTTPClientTransport(url));
const tools = await client.listTools();
const tool = tools.tools.find((t) => t.name === 'counter.show');
const resources = await client.listResources();
const uri = tool?._meta?.ui?.resourceUri;
const read = await client.readResource({ uri });
const c = read.contents[0];
console.log(JSON.stringify({
  toolUri: uri,
  listed: resources.resources.some((r) => r.uri === uri),
  mimeType: c.mimeType,
  startsWithDoctype: (c.text ?? '').startsWith('<!DOCTYPE html>'),
  meta: c._meta ?? null,
}));
await client.close();
