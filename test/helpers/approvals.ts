import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BIN, FIXTURES, testEnv } from './toolgate.js';

const exec = promisify(execFile);

export const RECORDING = join(FIXTURES, 'recording-server.mjs');

/** The calls the recording server ran, in order. */
export function recorded(file: string): { tool: string; args: Record<string, unknown> }[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

/** Polls until `fn` returns a value (a safety deadline only: nothing here asserts speed). */
export async function until<T>(fn: () => T | undefined | Promise<T | undefined>, what: string, deadlineMs = 20_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== null && v !== false) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs the toolgate CLI in its own process; resolves with its exit code and output. */
export async function cli(home: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [BIN, ...args], { env: testEnv(home, env) });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** Pending approvals as `toolgate approvals list --json` prints them. */
export async function pendingApprovals(home: string, stateArgs: string[] = []): Promise<any[]> {
  const r = await cli(home, ['approvals', 'list', '--json', ...stateArgs]);
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout);
}

/** Audit rows with this decision, through `toolgate audit --decision`. */
export async function auditRows(home: string, decision: string, extra: string[] = []): Promise<any[]> {
  const r = await cli(home, ['audit', '--decision', decision, '--json', ...extra]);
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout);
}
