// A TypeScript SDK v2 server, both eras on one endpoint: an echo tool.
// Usage: node server.mjs            (stdio)
//        node server.mjs -http ADDR (Streamable HTTP at http://ADDR/mcp)
import { createServer } from 'node:http';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { toNodeHandler } from '@modelcontextprotocol/node';
import * as z from 'zod';

const factory = () => {
  const s = new McpServer({ name: 'ts-partner', version: '1.0.0' });
  s.registerTool('echo', { description: 'Echoes the message.', inputSchema: z.object({ message: z.string() }) },
    async ({ message }) => ({ content: [{ type: 'text', text: 'echo: ' + message }] }));
  return s;
};

const i = process.argv.indexOf('-http');
if (i < 0) {
  serveStdio(factory);
} else {
  const [host, port] = process.argv[i + 1].split(/:(?=[0-9]+$)/);
  const handler = toNodeHandler(createMcpHandler(factory));
  createServer((req, res) => {
    if (new URL(req.url, 'http://x').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    handler(req, res);
  }).listen(Number(port), host);
}
