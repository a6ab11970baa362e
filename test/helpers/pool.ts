// Pools of fake upstream sessions for tests of src/pool/ (UpstreamPools, PoolView) without processes.
import { pino } from 'pino';
import { GatewayConfigSchema, type PoolConfig, type ServerConfig } from '../../src/config/gateway.js';
import type { Json } from '../../src/proxy/messages.js';
import type { Upstream } from '../../src/proxy/upstream.js';
import { UpstreamPools } from '../../src/pool/upstreams.js';
import type { PoolView } from '../../src/pool/view.js';
import type { Grant } from '../../src/state/types.js';

/** One upstream session of a server that numbers its tasks per session: every session's first task is "task-1". */
export class CountingUpstream implements Upstream {
  onmessage?: (message: unknown) => void;
  onclose?: (reason: string) => void;
  readonly started = Promise.resolve();
  readonly sent: Json[] = [];
  /** The params of the initialize this session was started with. */
  initialized?: Json;
  constructor(readonly name: string) {}
  async send(message: Json): Promise<void> {
    if (message.method === 'initialize') this.initialized = message.params as Json;
    if (message.method === 'initialize') queueMicrotask(() => this.onmessage?.({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-11-25', capabilities: { tasks: {} }, serverInfo: { name: 'counting', version: '1' } } }));
    else this.sent.push(message);
  }
  /** The last request toolgate sent here. */
  last(method: string): Json | undefined {
    return this.sent.filter((m) => m.method === method).at(-1);
  }
  reply(message: Json): void {
    this.onmessage?.(message);
  }
  closed = false;
  async close(): Promise<void> {
    this.closed = true;
  }
}

export const grant = (id: string): Grant => ({ id, server: 's', label: id, tags: [], createdAt: new Date(0).toISOString() });

export function setup(share: 'server' | 'grant', pool: Partial<PoolConfig> = {}) {
  const ups: CountingUpstream[] = [];
  const pools = new UpstreamPools({ log: pino({ level: 'silent' }), start: () => { const u = new CountingUpstream(`u${ups.length + 1}`); ups.push(u); return u; } });
  const config = GatewayConfigSchema.parse({ servers: { s: { command: 'x', protocol: 'legacy', pool: { share, max: 2, ...(share === 'server' ? { clients: 'all' } : {}), ...pool } } } });
  const server = config.servers.s as ServerConfig;
  const open = (g: Grant, era: 'legacy' | 'modern' = 'modern') => {
    const view = pools.view('s', server, g, era)!;
    const got: Json[] = [];
    view.onmessage = (m) => got.push(m as Json);
    return { view, got };
  };
  return { ups, open };
}

/** Sends a request through a view and waits until an upstream session has it. */
export async function request(view: PoolView, ups: CountingUpstream[], message: Json): Promise<{ up: CountingUpstream; inner: string }> {
  await view.send(message);
  for (const up of ups) {
    const m = up.sent.find((s) => s.method === message.method && JSON.stringify(s.params) === JSON.stringify(message.params) && !(s as { seen?: true }).seen);
    if (m) {
      (m as { seen?: true }).seen = true;
      return { up, inner: m.id as string };
    }
  }
  throw new Error(`no upstream session got ${String(message.method)}`);
}

