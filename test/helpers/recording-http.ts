import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/**
 * A Streamable HTTP MCP server (SDK) in the test's own process that counts every tool call it
 * runs, so a test sees exactly how many calls reached the upstream across every gateway.
 * Tools: `limited`, `free` and `guarded` (the policy decides what each is).
 */
export class RecordingUpstream {
  readonly calls = new Map<string, number>();
  private readonly transports = new Map<string, StreamableHTTPServerTransport>();
  private constructor(private readonly http: Server) {}

  static async start(): Promise<RecordingUpstream> {
    const up: RecordingUpstream = new RecordingUpstream(createServer((req, res) => { up.handle(req, res).catch(() => res.writeHead(500).end()); }));
    await new Promise<void>((resolve) => up.http.listen(0, '127.0.0.1', resolve));
    return up;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}/mcp`;
  }

  count(tool: string): number {
    return this.calls.get(tool) ?? 0;
  }

  private async handle(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? this.transports.get(sid) : undefined;
    if (!transport) {
      if (req.method !== 'POST' || body?.method !== 'initialize') {
        res.writeHead(404).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
        return;
      }
      const t: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => { this.transports.set(id, t); } });
      t.onclose = () => { if (t.sessionId) this.transports.delete(t.sessionId); };
      const server = new McpServer({ name: 'recording-http', version: '1.0.0' });
      for (const tool of ['limited', 'free', 'guarded']) {
        server.registerTool(tool, { description: `${tool} tool`, inputSchema: { n: z.number().optional() } }, async () => {
          this.calls.set(tool, this.count(tool) + 1);
          return { content: [{ type: 'text', text: `${tool} done` }] };
        });
      }
      await server.connect(t);
      transport = t;
    }
    await transport.handleRequest(req, res, body);
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.transports.values()].map((t) => t.close()));
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}
