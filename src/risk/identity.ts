import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { originOf, type Source } from './source.js';

/**
 * What a server is, for its pins: not how its command is spelt. `npx mcp-server-memory` and
 * `npx -y @modelcontextprotocol/server-memory@1.2` are one package; `node a.js` and `node b.js`
 * are two scripts. The version is kept beside the identity, not in it, so an upgrade that
 * changes a tool shows as a change against the pins rather than as a new, unpinned server.
 */
export interface ServerIdentity {
  /** The package (npm or PyPI), else the script's or executable's resolved absolute path, else the URL, else the command line. */
  what: string;
  version: string | null;
}

/** The nearest package.json with a name, from `dir` up. */
function packageAbove(dir: string): { name: string; version: string | null } | null {
  for (; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    try {
      const meta = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
      if (typeof meta.name === 'string' && meta.name) return { name: meta.name, version: typeof meta.version === 'string' ? meta.version : null };
    } catch { /* an unreadable package.json names nothing */ }
  }
  return null;
}

/** The argument (or the command) that names a file, resolved through links. */
function scriptOf(command: string, args: string[], cwd: string): string | null {
  for (const a of [...args, command]) {
    if (a.startsWith('-') || !(a.includes('/') || /\.(m?[jt]s|cjs|py|rb|sh|php)$/.test(a))) continue;
    const path = isAbsolute(a) ? a : resolve(cwd, a);
    try {
      if (statSync(path).isFile()) return realpathSync(path);
    } catch { /* not a file */ }
  }
  return null;
}

export function serverIdentity(source: Source): ServerIdentity {
  if (source.kind === 'url') {
    const u = new URL(source.url);
    return { what: `${u.protocol}//${u.host}${u.pathname}`, version: null };
  }
  const cwd = source.cwd ?? process.cwd();
  const origin = originOf(source, cwd);
  if (origin.package) return { what: origin.package, version: origin.version ?? null };
  const script = scriptOf(source.command, source.args, cwd);
  if (script) {
    const pkg = packageAbove(dirname(script));
    return pkg ? { what: pkg.name, version: pkg.version } : { what: script, version: null };
  }
  return { what: [source.command, ...source.args].join(' '), version: null };
}

/** The key pins are kept under: the identity and the name the server declares in its initialize answer. */
export function pinKey(identity: ServerIdentity, serverInfoName: string | undefined): string {
  return serverInfoName ? `${identity.what} (${serverInfoName})` : identity.what;
}

interface PinReader {
  get(server: string): Promise<Record<string, string> | null> | Record<string, string> | null;
}

/**
 * The pins under `key`, else under the first older key that has some (pins stored before they
 * were keyed by identity: the gateway's server name, or the name `toolgate run` derived from the
 * command line). Writing always uses `key`; the older entry is left alone.
 */
export async function readPins(store: PinReader, key: string, older: readonly string[]): Promise<{ pins: Record<string, string> | null; under: string }> {
  for (const k of [key, ...older]) {
    const pins = await store.get(k);
    if (pins) return { pins, under: k };
  }
  return { pins: null, under: key };
}
