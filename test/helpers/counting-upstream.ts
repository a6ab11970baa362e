import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** One tool call the upstream ran: the tool and the caller's call number `n`. */
export interface Run { tool: string; n: number }

/**
 * A Streamable HTTP MCP server (SDK) in the test's own process that records every tool call it
 * starts with the caller's number `n`, so a test can tell exactly which calls reached it, and how
 * often, across gateways that stop and start. Tools: `work` (answers after `ms` milliseconds, or,
 * with `gate: true`, once the test opens the gate) and `guarded` (the policy holds it for approval).
 */
export class CountingUpstream {
  readonly runs: Run[] = [];
  /** Calls started and not yet answered. */
  running = 0;
  /** Gated calls waiting at the gate now. */
  atGate = 0;
  private readonly transports = new Map<string, StreamableHTTPServerTransport>();
  private gate: { open: Promise<void>; release: () => void };

  private constructor(private readonly http: Server) {
    this.gate = CountingUpstream.newGate();
  }

  private static newGate(): { open: Promise<void>; release: () => void } {
    let release!: () => void;
    const open = new Promise<void>((resolve) => { release = resolve; });
    return { open, release };
  }

  static async start(): Promise<CountingUpstream> {
    const up: CountingUpstream = new CountingUpstream(createServer((req, res) => { up.handle(req, res).catch(() => { if (!res.headersSent) res.writeHead(500); res.end(); }); }));
    await new Promise<void>((resolve) => up.http.listen(0, '127.0.0.1', resolve));
    return up;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.http.address() as AddressInfo).port}/mcp`;
  }

  /** How many times the call numbered `n` ran. */
  ran(n: number): number {
    return this.runs.filter((r) => r.n === n).length;
  }

  /** Lets the gated calls waiting now answer; gated calls that come later wait for the next opening. */
  openGate(): void {
    this.gate.release();
    this.gate = CountingUpstream.newGate();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
      const t: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => { this.transports.set(id, t); },
      });
      t.onclose = () => { if (t.sessionId) this.transports.delete(t.sessionId); };
      const server = new McpServer({ name: 'counting-http', version: '1.0.0' });
      server.registerTool('work', { description: 'does some work', inputSchema: { n: z.number(), ms: z.number().optional(), gate: z.boolean().optional() } }, async ({ n, ms, gate }) => {
        this.runs.push({ tool: 'work', n });
        this.running++;
        try {
          if (gate) {
            this.atGate++;
            await this.gate.open.finally(() => { this.atGate--; });
          } else if (ms) await new Promise((r) => setTimeout(r, ms));
          return { content: [{ type: 'text', text: `work ${n} done` }] };
        } finally {
          this.running--;
        }
      });
      server.registerTool('guarded', { description: 'needs approval', inputSchema: { n: z.number() } }, async ({ n }) => {
        this.runs.push({ tool: 'guarded', n });
        return { content: [{ type: 'text', text: `guarded ${n} done` }] };
      });
      await server.connect(t);
      transport = t;
    }
    await transport.handleRequest(req, res, body);
  }

  async stop(): Promise<void> {
    this.gate.release();
    await Promise.allSettled([...this.transports.values()].map((t) => t.close()));
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}
