// A 2025-11-25 client built on the TypeScript SDK v2 (@modelcontextprotocol/client)
// that checks a stdio server's unsolicited notifications, as gosdkstdio does
// with the Go SDK:
//
//   node events.mjs SERVER-COMMAND [ARGS...]
//
// Over the SDK's StdioClientTransport it subscribes to RESOURCE, calls UPDATE
// and waits for the update; calls TOOL_CHANGE and waits for
// tools/list_changed; unsubscribes, calls UPDATE again, then PROMPT_CHANGE,
// and waits for prompts/list_changed (the server's events keep their order,
// so an update sent after the unsubscribe would have arrived first). The
// names come from the environment (internal/sdkclients sets them).
// It prints what it heard as one JSON object and exits non-zero on a timeout.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const need = (name) => {
  const v = process.env[name];
  if (!v) {
    console.error(`${name} must be set`);
    process.exit(2);
  }
  return v;
};
const env = process.env;
const resource = need('RESOURCE');
const update = need('UPDATE');
const toolChange = need('TOOL_CHANGE');
const promptChange = need('PROMPT_CHANGE');
const timeoutMs = Number(env.TIMEOUT_MS ?? 30000);
const [command, ...args] = process.argv.slice(2);

const out = { updated: [], updatedAfterUnsubscribe: [], toolsListChanged: 0, promptsListChanged: 0 };
let unsubscribed = false;
const waiters = { updated: [], tools: [], prompts: [] };
const fire = (kind) => {
  const w = waiters[kind].shift();
  if (w) w();
};
const waitFor = (kind, what) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${what} within ${timeoutMs} ms`)), timeoutMs);
    waiters[kind].push(() => {
      clearTimeout(timer);
      resolve();
    });
  });

// The default negotiation mode is 'legacy': the plain 2025 initialize.
const client = new Client({ name: 'weft-tsstdio', version: '1.0.0' }, { capabilities: {} });
client.setNotificationHandler('notifications/resources/updated', (n) => {
  (unsubscribed ? out.updatedAfterUnsubscribe : out.updated).push(n.params.uri);
  fire('updated');
});
client.setNotificationHandler('notifications/tools/list_changed', () => {
  out.toolsListChanged++;
  fire('tools');
});
client.setNotificationHandler('notifications/prompts/list_changed', () => {
  out.promptsListChanged++;
  fire('prompts');
});

const call = async (name) => {
  const res = await client.callTool({ name, arguments: {} });
  if (res.isError) throw new Error(`tools/call ${name}: a tool error`);
};

try {
  await client.connect(new StdioClientTransport({ command, args, stderr: 'inherit' }));
  out.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? null;
  out.capabilities = client.getServerCapabilities();

  await client.subscribeResource({ uri: resource });
  let w = waitFor('updated', 'notifications/resources/updated');
  await call(update);
  await w;
  w = waitFor('tools', 'notifications/tools/list_changed');
  await call(toolChange);
  await w;

  await client.unsubscribeResource({ uri: resource });
  unsubscribed = true;
  await call(update);
  w = waitFor('prompts', 'notifications/prompts/list_changed');
  await call(promptChange);
  await w;
  console.log(JSON.stringify(out));
  await client.close();
} catch (e) {
  console.error(e?.stack ?? String(e));
  try {
    await client.close();
  } catch {}
  process.exit(1);
}
