import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { BIN, testEnv } from './toolgate.js';

/** The SDK v2 negotiation modes a modern client can connect with. */
export type Mode = 'auto' | 'pinned' | 'legacy';
/** The modes that reach the 2026-07-28 era through toolgate. */
export const MODES: Mode[] = ['auto', 'pinned'];

type ClientOptions = NonNullable<ConstructorParameters<typeof Client>[1]>;

function negotiation(mode: Mode, extra: ClientOptions = {}): ClientOptions {
  return { ...extra, versionNegotiation: { mode: mode === 'pinned' ? { pin: '2026-07-28' } : mode } };
}

export interface ModernRun { client: Client; stderr: () => string; close(): Promise<void> }

/** An SDK v2 client on `toolgate run ARGS` (stdio), negotiating the 2026-07-28 era. */
export async function modernRun(mode: Mode, args: string[], home: string, env: Record<string, string> = {}, options?: ClientOptions): Promise<ModernRun> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'run', ...args], env: testEnv(home, env), stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
  const client = new Client({ name: 'modern-test', version: '2.0.0' }, negotiation(mode, options));
  await client.connect(transport);
  return { client, stderr: () => stderr, close: () => client.close() };
}

/** An SDK v2 client on a `toolgate serve` URL (Streamable HTTP, stateless when modern). */
export async function modernHttp(mode: Mode, url: string, token?: string, options?: ClientOptions): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : {});
  const client = new Client({ name: 'modern-test', version: '2.0.0' }, negotiation(mode, options));
  await client.connect(transport);
  return client;
}
