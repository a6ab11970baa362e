import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES } from './toolgate.js';

/** The SDK v2 fixture (test/fixtures/modern-server.mjs): both eras, or 2026-07-28 only with MODERN_ONLY. */
export const MODERN = join(FIXTURES, 'modern-server.mjs');

export type Entry = { via?: string; message?: any; method?: string; headers?: Record<string, string>; body?: any; tool?: string; args?: any; envelope?: any; round?: string; state?: unknown };

/** Everything the fixture recorded, in order. */
export function entries(file: string): Entry[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
}

/** The JSON-RPC messages that reached the fixture on stdio. */
export const stdioReceived = (file: string) => entries(file).filter((e) => e.via === 'stdio').map((e) => e.message);
/** The HTTP requests that reached the fixture: method, headers (lower-case names) and parsed body. */
export const httpReceived = (file: string) => entries(file).filter((e) => e.via === 'http');
/** The tool runs that completed (not the rounds that asked for input). */
export const ran = (file: string) => entries(file).filter((e) => e.tool !== undefined && e.round === undefined);

/** The tasks fixture (test/fixtures/modern-tasks-server.mjs): `research` runs as a task. */
export const MODERN_TASKS = join(FIXTURES, 'modern-tasks-server.mjs');

/** A fixture (the modern one unless `script` says) over Streamable HTTP in its own process (`--http`): its URL once it listens. */
export class ModernHttpFixture {
  readonly child: ChildProcessWithoutNullStreams;
  readonly url: Promise<string>;

  constructor(env: Record<string, string>, script = MODERN) {
    this.child = spawn(process.execPath, [script, '--http'], { env: { ...process.env, ...env } });
    let out = '';
    this.url = new Promise((resolve, reject) => {
      this.child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /listening (\d+)/.exec(out);
        if (m) resolve(`http://127.0.0.1:${m[1]}/mcp`);
      });
      this.child.on('exit', (code) => reject(new Error(`the fixture exited (${code})`)));
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const gone = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGKILL');
    await gone;
  }
}
