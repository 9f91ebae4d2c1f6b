// An MCP 2025-11-25 client built on the official TypeScript SDK v1, driving
// a Weft server: legacy_e2e_test.go runs it against one process and against
// two processes sharing PostgreSQL behind a round-robin proxy.
//
//   node client.mjs <url>
//
// It prints one JSON object with what it observed and exits non-zero on an
// unexpected failure.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const url = process.argv[2];
const out = { elicitations: [], logs: [] };

const client = new Client({ name: 'weft-e2e', version: '1.0.0' }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  out.elicitations.push(req.params.message);
  const props = req.params.requestedSchema?.properties ?? {};
  const content = {};
  for (const [name, schema] of Object.entries(props)) {
    content[name] = schema.type === 'boolean' ? true : 'octocat';
  }
  return { action: 'accept', content };
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
  out.logs.push(n.params.data);
});

const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
out.sessionId = transport.sessionId;
out.protocolVersion = transport.protocolVersion;
out.server = client.getServerVersion();

// All pages of tools/list (the server pages with sealed cursors).
const names = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  names.push(...page.tools.map((t) => t.name));
  cursor = page.nextCursor;
} while (cursor);
out.tools = names;

// A multi-round handler written for 2026-07-28 (input_required, twice):
// the client sees two real elicitation/create requests.
const multi = await client.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
out.multiRound = multi.content[0].text;

// A single-round elicitation with arguments.
const one = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Who are you?' } });
out.elicitation = one.content[0].text;

// Logging at the level the session set.
await client.setLoggingLevel('info');
await client.callTool({ name: 'test_tool_with_logging', arguments: {} });

// The 2025-11-25 error code for a missing resource.
try {
  await client.readResource({ uri: 'test://nonexistent-resource-for-conformance-testing' });
  out.notFoundCode = 'no error';
} catch (e) {
  out.notFoundCode = e.code;
}

await client.ping();
await transport.terminateSession();
await client.close();
console.log(JSON.stringify(out));
