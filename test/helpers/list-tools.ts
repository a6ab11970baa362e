// Lists an npm MCP server's tools over stdio, for the harvest scripts of test/corpus and the blind
// sets (each keeps its own targets; the blind sets share one output format, harvestToFile).
import { chmodSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Implementation } from '@modelcontextprotocol/sdk/types.js';

/**
 * A server installed with `npm install --ignore-scripts` under ROOT, started with its (named or first) bin,
 * or with `exe`, a file of the package: a native executable (a Go build in a platform package), or with
 * `node` a script that no bin names.
 */
export interface HarvestTarget { slug: string; pkg: string; bin?: string; args?: string[]; env?: Record<string, string>; exe?: string; node?: boolean }

export interface Listing {
  /** The installed package's version. */
  version: string;
  serverInfo: Implementation | null;
  instructions: string | null;
  /** Every page of tools/list, unchanged. */
  tools: unknown[];
}

export interface ListOptions {
  /** The client name the server sees. */
  client: string;
  timeoutMs: number;
  /** Working directory and HOME of the server (placeholder config files live there). */
  scratch?: string;
  stderr?: 'inherit' | 'ignore';
}

function packageJson(root: string, pkg: string): { version: string; bin?: string | Record<string, string> } {
  return JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8'));
}

function binOf(root: string, t: HarvestTarget): string {
  const meta = packageJson(root, t.pkg);
  const bins: Record<string, string> = typeof meta.bin === 'string' ? { main: meta.bin } : (meta.bin ?? {});
  const bin = t.bin ? bins[t.bin] : Object.values(bins)[0];
  if (!bin) throw new Error(`${t.pkg} has no bin ${t.bin ?? ''}`);
  return join(root, 'node_modules', t.pkg, bin);
}

/** The command and arguments that start a target. */
function commandOf(root: string, t: HarvestTarget): [string, string[]] {
  if (!t.exe) return [process.execPath, [binOf(root, t), ...(t.args ?? [])]];
  const exe = join(root, 'node_modules', t.pkg, t.exe);
  if (t.node) return [process.execPath, [exe, ...(t.args ?? [])]];
  chmodSync(exe, 0o755); // npm keeps the mode of a file that no bin field names as it was packed
  return [exe, t.args ?? []];
}

export async function listTools(root: string, t: HarvestTarget, opts: ListOptions): Promise<Listing> {
  const [command, args] = commandOf(root, t);
  const transport = new StdioClientTransport({
    command, args, cwd: opts.scratch,
    env: { ...(process.env as Record<string, string>), ...(opts.scratch ? { HOME: opts.scratch } : {}), ...(t.env ?? {}) },
    stderr: opts.stderr ?? 'ignore',
  });
  const client = new Client({ name: opts.client, version: '1' }, { capabilities: { sampling: {}, elicitation: {}, roots: {} } });
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), opts.timeoutMs).unref());
  try {
    await Promise.race([client.connect(transport), timeout]);
    const tools: unknown[] = [];
    let cursor: string | undefined;
    do {
      const page = await Promise.race([client.listTools(cursor ? { cursor } : {}), timeout]);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return { version: packageJson(root, t.pkg).version, serverInfo: client.getServerVersion() ?? null, instructions: client.getInstructions() ?? null, tools };
  } finally {
    await client.close().catch(() => {});
  }
}

/** The blind sets' harvest step: lists one target and writes SERVERS_DIR/<slug>.json
 * ({server: {package, serverInfo, instructions}, tools}); a failure is printed, not thrown. */
export async function harvestToFile(root: string, t: HarvestTarget, serversDir: string, opts: ListOptions): Promise<void> {
  try {
    const l = await listTools(root, t, opts);
    const out = { server: { package: `${t.pkg}@${l.version}`, serverInfo: l.serverInfo, instructions: l.instructions }, tools: l.tools };
    mkdirSync(serversDir, { recursive: true });
    writeFileSync(join(serversDir, `${t.slug}.json`), JSON.stringify(out, null, 1) + '\n');
    console.log(`${t.slug}: ${l.tools.length} tools`);
  } catch (err) {
    console.log(`${t.slug}: FAILED ${(err as Error).message}`);
  }
}
