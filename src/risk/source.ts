import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { DEFAULT_INHERITED_ENV_VARS, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { canonicalJson, sha256 } from '../policy/load.js';
import { withEra, type EraUpstream } from '../proxy/upstream-modern.js';
import { httpUpstream } from '../proxy/upstream-modern-http.js';
import { MODERN_VERSION } from '../proxy/upstream-modern-wire.js';
import { sdkTransport, upstreamOf } from '../proxy/upstream-sdk.js';
import { maskArgs, maskUrl, maskUrlsIn } from '../secrets/credentials.js';
import { clientEnv, OwnSecrets } from '../upstream-env/index.js';
import type { Readable } from 'node:stream';
import { exitOf, startFailureDetail, StderrTail } from './stderr-tail.js';
import type { ToolDefinition } from './types.js';

/**
 * Where a server comes from: a command toolgate starts, or a URL. A command's `env` is its whole
 * environment (by default toolgate's own, without toolgate's secrets).
 */
export type Source =
  | { kind: 'command'; command: string; args: string[]; env?: Record<string, string>; cwd?: string }
  | { kind: 'url'; url: string; headers?: Record<string, string> };

export interface Origin {
  kind: 'command' | 'url';
  commandLine?: string;
  url?: string;
  package?: string;
  version?: string | null;
  /** Credentials in the command line or URL were masked (see src/secrets/credentials.ts): it cannot be started again from here. */
  masked?: true;
}

export interface AuthPosture {
  /** For a URL: open, oauth or token; for a command: local-process. */
  kind: 'open' | 'oauth' | 'token' | 'local-process' | 'unknown';
  tls?: boolean;
  /** Names of secret-looking environment variables the process receives (never values). */
  secretEnv?: string[];
  detail?: string;
}

export interface Listing {
  serverInfo: { name: string; title?: string; version?: string };
  protocolVersion: string | null;
  instructions: string | null;
  capabilities: Record<string, unknown>;
  tools: ToolDefinition[];
  resources: { uri: string; name?: string }[];
  resourceTemplates: { uriTemplate: string; name?: string }[];
  prompts: { name: string; description?: string }[];
  origin: Origin;
  auth: AuthPosture;
}

export class SourceError extends Error {}

const SECRET_ENV = /(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH|SESSION|COOKIE|DSN|CONNECTION_STRING)/i;

/** SHA-256 over a tool's canonical definition: what a pin records and a rug pull changes. */
export function toolFingerprint(tool: ToolDefinition & { outputSchema?: unknown }): string {
  return sha256(canonicalJson({
    name: tool.name, title: tool.title ?? null, description: tool.description ?? null,
    inputSchema: tool.inputSchema ?? null, outputSchema: tool.outputSchema ?? null, annotations: tool.annotations ?? null,
  }));
}

export function serverFingerprint(tools: readonly ToolDefinition[], instructions: string | null): string {
  const fps = tools.map((t) => [t.name, toolFingerprint(t)]).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sha256(canonicalJson({ instructions, tools: fps }));
}

/**
 * An origin as it may be shown and stored: the credentials in its command line (URL passwords,
 * `--api-key=…`, secret-shaped tokens) and its URL (userinfo, query values) masked. Records are
 * built with it; the catalog applies it to records stored before it existed.
 */
export function maskOrigin(origin: Origin): Origin {
  if (origin.kind === 'url' && origin.url !== undefined) {
    const m = maskUrl(origin.url);
    return m.found.length ? { ...origin, url: m.value, masked: true } : origin;
  }
  if (origin.commandLine === undefined) return origin;
  const m = maskArgs(origin.commandLine.split(' '));
  return m.found.length ? { ...origin, commandLine: m.value.join(' '), masked: true } : origin;
}

/** The npm (or PyPI) package a command line runs, and its version where it can tell; credentials masked (see `maskOrigin`). */
export function originOf(source: Source, cwd = process.cwd()): Origin {
  if (source.kind === 'url') return maskOrigin({ kind: 'url', url: source.url });
  const shown = maskArgs(source.args);
  const commandLine = [source.command, ...shown.value].join(' ');
  const origin: Origin = { kind: 'command', commandLine, ...(shown.found.length ? { masked: true as const } : {}) };
  const launcher = basename(source.command);
  const args = source.args;
  let spec: string | undefined;
  if (['npx', 'bunx', 'pnpx', 'uvx', 'pipx'].includes(launcher) || (launcher === 'npm' && args[0] === 'exec')) {
    spec = args.find((a, i) => !a.startsWith('-') && !(launcher === 'npm' && i === 0) && args[i - 1] !== '-p' && args[i - 1] !== '--package');
    const pkgFlag = args.findIndex((a) => a === '-p' || a === '--package');
    if (pkgFlag >= 0) spec = args[pkgFlag + 1];
  } else {
    const installed = [source.command, ...args].map((a) => /node_modules\/((?:@[\w.-]+\/)?[\w.-]+)\//.exec(a)).find(Boolean);
    if (installed) spec = installed[1];
    else if (!source.command.includes('/') && binPackage(source.command, cwd)) spec = source.command;
  }
  if (!spec) return origin;
  const pyVersion = /^([\w.-]+)==(.+)$/.exec(spec);
  const m = pyVersion ?? /^((?:@[\w.-]+\/)?[\w.-]+)(?:@(.+))?$/.exec(spec);
  if (!m) return origin;
  origin.package = m[1];
  origin.version = m[2] ?? null;
  if (pyVersion) return origin;
  // npx runs a package's bin by its bin name (mcp-server-filesystem): name the package it belongs to.
  const found = installedPackage(m[1], cwd) ?? binPackage(m[1], cwd);
  if (found) {
    origin.package = found.name;
    origin.version ??= found.version;
  }
  return origin;
}

type Installed = { name: string; version: string | null };

function readPackage(file: string): Installed | null {
  try {
    const meta = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
    return typeof meta.name === 'string' ? { name: meta.name, version: typeof meta.version === 'string' ? meta.version : null } : null;
  } catch {
    return null;
  }
}

/** The nearest node_modules, from `cwd` up, holding `file`. */
function nearest(cwd: string, file: string): string | null {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const path = join(dir, 'node_modules', file);
    if (existsSync(path)) return path;
    if (dir === dirname(dir)) return null;
  }
}

function installedPackage(pkg: string, cwd: string): Installed | null {
  const file = nearest(cwd, join(pkg, 'package.json'));
  return file ? readPackage(file) : null;
}

/** The package whose bin `name` is: node_modules/.bin/<name> links into it. */
function binPackage(name: string, cwd: string): Installed | null {
  if (!/^[\w.-]+$/.test(name)) return null;
  const link = nearest(cwd, join('.bin', name));
  if (!link) return null;
  let dir: string;
  try { dir = dirname(realpathSync(link)); } catch { return null; }
  for (; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return readPackage(join(dir, 'package.json'));
  }
  return null;
}

/** Asks a URL server to initialize without credentials, to tell open from OAuth from token. */
export async function probeAuth(url: string, timeoutMs = 10_000): Promise<AuthPosture> {
  const tls = new URL(url).protocol === 'https:';
  const init = { jsonrpc: '2.0', id: 'toolgate-probe', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'toolgate-probe', version: '1' } } };
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(init),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const challenge = res.headers.get('www-authenticate') ?? '';
    void res.body?.cancel();
    if (res.status === 401 || res.status === 403) {
      if (/resource_metadata|oauth/i.test(challenge)) return { kind: 'oauth', tls, detail: `HTTP ${res.status} with OAuth metadata` };
      const wellKnown = new URL('/.well-known/oauth-protected-resource', url);
      const meta = await fetch(wellKnown, { signal: AbortSignal.timeout(timeoutMs) }).catch(() => undefined);
      if (meta?.ok) return { kind: 'oauth', tls, detail: 'OAuth protected-resource metadata published' };
      return { kind: 'token', tls, detail: `HTTP ${res.status} without OAuth metadata: a static credential is expected` };
    }
    if (res.ok) return { kind: 'open', tls, detail: `HTTP ${res.status} to an unauthenticated initialize` };
    return { kind: 'unknown', tls, detail: `HTTP ${res.status}` };
  } catch (err) {
    return { kind: 'unknown', tls, detail: `probe failed: ${maskUrlsIn((err as Error).message)}` };
  }
}

/**
 * The SDK's transport adds HOME, LOGNAME, PATH, SHELL, TERM and USER from toolgate's environment
 * to the one given; a name set to undefined is left out by spawn, so the child gets exactly `env`.
 */
function exactly(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string | undefined> = { ...env };
  for (const name of DEFAULT_INHERITED_ENV_VARS) if (!Object.hasOwn(env, name)) out[name] = undefined;
  return out as Record<string, string>;
}

/** Records the initialize result as it passes, for the negotiated protocol version. */
function observe(transport: Transport, seen: { protocolVersion: string | null }): Transport {
  const original = transport.start.bind(transport);
  transport.start = async () => {
    const onmessage = transport.onmessage;
    transport.onmessage = (m: JSONRPCMessage, extra) => {
      const result = (m as { result?: { protocolVersion?: unknown } }).result;
      if (result && typeof result.protocolVersion === 'string' && seen.protocolVersion === null) seen.protocolVersion = result.protocolVersion;
      onmessage?.(m, extra);
    };
    return original();
  };
  return transport;
}

async function allPages<T>(fetchPage: (cursor?: string) => Promise<{ nextCursor?: string } & Record<string, unknown>>, key: string): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1000; page++) {
    const result = await fetchPage(cursor);
    out.push(...((result[key] as T[]) ?? []));
    cursor = result.nextCursor;
    if (!cursor) break;
  }
  return out;
}

/**
 * What the one-shot lister declares: everything a capable client may (sampling, form and URL
 * elicitation, roots, and tasks for both), since a server may offer tools only to clients that
 * declare a capability, and a recommended policy must cover every tool such a client sees.
 */
export const LISTER_CAPABILITIES = {
  sampling: {},
  elicitation: { form: {}, url: {} },
  roots: { listChanged: true },
  tasks: { requests: { sampling: { createMessage: {} }, elicitation: { create: {} } } },
};

/**
 * Connects to a server as a full-featured client (sampling, elicitation, roots), reads every page
 * of tools, resources and prompts, and disconnects.
 */
const QUIET = pino({ level: 'silent' });

export async function fetchListing(source: Source, timeoutMs = 30_000): Promise<Listing> {
  const env = source.kind === 'command' ? source.env ?? clientEnv(new OwnSecrets().addOwnVars(process.env)) : {};
  // What the process really receives: the warning names those, never the values.
  const auth: AuthPosture = source.kind === 'url'
    ? await probeAuth(source.url)
    : { kind: 'local-process', secretEnv: Object.keys(env).filter((k) => SECRET_ENV.test(k)).sort() };
  const seen = { protocolVersion: null as string | null };
  const client = new Client({ name: 'toolgate-record', version: '0.1.0' }, { capabilities: LISTER_CAPABILITIES });
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [] }));
  client.setRequestHandler(CreateMessageRequestSchema, async () => { throw new Error('toolgate record does not sample'); });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
  const connect = async (t: Transport) => client.connect(observe(t, seen));
  const timer = new Promise<never>((_, reject) => setTimeout(() => reject(new SourceError(`the server did not answer within ${timeoutMs / 1000} s`)), timeoutMs).unref());
  // Why a command did not start: its exit code and the end of its stderr go into the error line.
  let child: ChildProcess | undefined;
  let tail: StderrTail | undefined;
  try {
    // Listed the way toolgate will speak to the server: 2026-07-28 when it offers it, else 2025.
    let upstream: EraUpstream;
    if (source.kind === 'command') {
      const spawnOne = () => {
        const transport = new StdioClientTransport({ command: source.command, args: source.args, env: exactly(env), cwd: source.cwd, stderr: 'pipe' });
        tail = new StderrTail(transport.stderr as Readable | null, Object.entries(env).filter(([k, v]) => SECRET_ENV.test(k) && v).map(([, v]) => v));
        const start = transport.start.bind(transport);
        transport.start = async () => {
          await start();
          child = (transport as unknown as { _process?: ChildProcess })._process;
        };
        return upstreamOf(transport);
      };
      upstream = withEra('auto', spawnOne(), QUIET, { respawn: spawnOne });
      try {
        await Promise.race([connect(sdkTransport(upstream)), timer]);
      } catch (err) {
        if (err instanceof SourceError) throw err;
        throw new SourceError(`cannot list the server's tools: ${maskUrlsIn((err as Error).message.split('\n')[0])}${startFailureDetail(await exitOf(child), tail!)}`);
      }
    } else {
      // The 2025 leg falls back from Streamable HTTP to SSE by itself.
      upstream = httpUpstream('auto', new URL(source.url), source.headers ?? {}, QUIET);
      await Promise.race([connect(sdkTransport(upstream)), timer]);
    }
    if (upstream.era === 'modern') seen.protocolVersion = MODERN_VERSION;
    const capabilities = (client.getServerCapabilities() ?? {}) as Record<string, unknown>;
    const list = <T>(cap: string, fn: () => Promise<T[]>): Promise<T[]> => (capabilities[cap] ? Promise.race([fn(), timer]).catch(() => [] as T[]) : Promise.resolve([]));
    const tools = await list('tools', () => allPages<ToolDefinition>((cursor) => client.listTools(cursor ? { cursor } : {}), 'tools'));
    const resources = await list('resources', () => allPages<{ uri: string; name?: string }>((cursor) => client.listResources(cursor ? { cursor } : {}), 'resources'));
    const resourceTemplates = await list('resources', () => allPages<{ uriTemplate: string; name?: string }>((cursor) => client.listResourceTemplates(cursor ? { cursor } : {}), 'resourceTemplates'));
    const prompts = await list('prompts', () => allPages<{ name: string; description?: string }>((cursor) => client.listPrompts(cursor ? { cursor } : {}), 'prompts'));
    const info = client.getServerVersion();
    return {
      serverInfo: { name: info?.name ?? 'unknown', title: (info as { title?: string } | undefined)?.title, version: info?.version },
      protocolVersion: seen.protocolVersion,
      instructions: client.getInstructions() ?? null,
      capabilities,
      tools, resources, resourceTemplates, prompts,
      origin: originOf(source),
      auth,
    };
  } catch (err) {
    if (err instanceof SourceError) throw err;
    throw new SourceError(`cannot list the server's tools: ${maskUrlsIn((err as Error).message.split('\n')[0])}`);
  } finally {
    await client.close().catch(() => {});
  }
}
