// A failing assert.ok without a message must not spin for minutes under tsx (see assert-guard.ts).
import './assert-guard.js';
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

export const ROOT = resolve(import.meta.dirname, '../..');
export const BIN = join(ROOT, 'bin/toolgate.js');
export const FIXTURES = join(ROOT, 'test/fixtures');
export const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
export const FILESYSTEM = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
export const MEMORY = join(ROOT, 'node_modules/@modelcontextprotocol/server-memory/dist/index.js');
export const LENIENT = join(FIXTURES, 'lenient-server.mjs');

const created: string[] = [];
// node --test runs each file in its own process: its temporary directories go when it exits,
// whatever the test that made them did (a dir is often shared by several tests of a suite).
process.once('exit', () => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
});

/** A fresh directory under os.tmpdir(), removed when the test process exits. */
export function tempDir(prefix = 'toolgate-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  created.push(dir);
  return dir;
}

export function writePolicy(dir: string, policy: unknown, name = 'policy.json'): string {
  const file = join(dir, name);
  writeFileSync(file, typeof policy === 'string' ? policy : JSON.stringify(policy, null, 2));
  return file;
}

/** The environment toolgate runs with in tests: its own home, quiet logs unless asked. */
export function testEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { ...(process.env as Record<string, string>), TOOLGATE_HOME: home, TOOLGATE_LOG_LEVEL: process.env.TOOLGATE_LOG_LEVEL ?? 'warn', ...extra };
}

/** Runs the built CLI to its end: the exit code and both streams, whatever the code. */
export async function cli(args: string[], env: Record<string, string>, cwd = ROOT): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { env, cwd });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

export interface Connected {
  client: Client;
  home: string;
  close(): Promise<void>;
}

/** An SDK Client talking to `toolgate run` wrapping a stdio server. */
export async function connectThroughToolgate(opts: {
  policy: string;
  server: string[];
  home?: string;
  runArgs?: string[];
  env?: Record<string, string>;
  capabilities?: ConstructorParameters<typeof Client>[1];
}): Promise<Connected> {
  const home = opts.home ?? tempDir();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'run', '-p', opts.policy, ...(opts.runArgs ?? []), '--', ...opts.server],
    env: testEnv(home, opts.env),
    stderr: 'pipe',
  });
  const client = new Client({ name: 'toolgate-test', version: '1.0.0' }, opts.capabilities);
  await client.connect(transport);
  return { client, home, close: () => client.close() };
}

/**
 * Raw JSON lines to `toolgate run`, for the malformed and hostile messages an SDK client would
 * never send.
 */
export class RawSession {
  readonly child: ChildProcessWithoutNullStreams;
  readonly lines: unknown[] = [];
  stderr = '';
  private waiters: (() => void)[] = [];
  readonly exited: Promise<number | null>;

  constructor(args: string[], env: Record<string, string>) {
    this.child = spawn(process.execPath, [BIN, 'run', ...args], { env });
    let buf = '';
    this.child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        this.lines.push(JSON.parse(line));
        for (const w of this.waiters.splice(0)) w();
      }
    });
    this.child.stderr.on('data', (d: Buffer) => { this.stderr += d.toString(); });
    this.exited = new Promise((r) => this.child.on('exit', (code) => r(code)));
  }

  send(line: string | object): void {
    this.child.stdin.write((typeof line === 'string' ? line : JSON.stringify(line)) + '\n');
  }

  /**
   * Waits for a message matching `pred` (default: a response with this id). The limit only tells a
   * hang from a slow machine (a loaded CI box takes seconds to start a server); on a hang the
   * child is ended, so the test file can finish.
   */
  async waitFor(pred: (m: any) => boolean, timeoutMs = 90_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.find(pred);
      if (found) return found;
      if (Date.now() > deadline) {
        this.child.kill('SIGKILL');
        throw new Error(`no answer in ${timeoutMs / 1000} s; got ${JSON.stringify(this.lines)}; stderr: ${this.stderr}`);
      }
      await new Promise<void>((r) => { this.waiters.push(r); setTimeout(r, 50); });
    }
  }

  response(id: unknown, timeoutMs?: number): Promise<any> {
    return this.waitFor((m) => m && m.id === id && ('result' in m || 'error' in m), timeoutMs);
  }

  async request(id: number | string, method: string, params?: unknown): Promise<any> {
    this.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    return this.response(id);
  }

  async initialize(): Promise<void> {
    await this.request('init', 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw-test', version: '1' } });
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  async close(): Promise<number | null> {
    this.child.stdin.end();
    return this.exited;
  }
}

export function denialText(result: any): string | undefined {
  return result?.isError ? result.content?.[0]?.text : undefined;
}
