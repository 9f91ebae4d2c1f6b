// Drives catalog.continue on a Weft server with the TypeScript SDK v2 client:
// the client resolves the form elicitation through its elicitation handler
// and retries with the echoed requestState. Usage: node catalog.mjs URL
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.argv[2]);
const asked = [];
const client = new Client(
  { name: 'weft-ts-test', version: '1.0.0' },
  {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: { pin: '2026-07-28' } },
  },
);
client.setRequestHandler('elicitation/create', async (request) => {
  asked.push(request.params.message);
  return { action: 'accept', content: {} };
});
await client.connect(new StreamableHTTPClientTransport(url));
const result = await client.callTool({ name: 'catalog.continue', arguments: {} });
const tools = await client.listTools();
console.log(JSON.stringify({ asked, result, toolCount: tools.tools.length }));
await client.close();
