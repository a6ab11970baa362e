import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { canonicalJson, sha256 } from '../policy/load.js';
import type { ToolDefinition } from './types.js';

/** Where a server comes from: a command toolgate starts, or a URL. */
export type Source =
  | { kind: 'command'; command: string; args: string[]; env?: NodeJS.ProcessEnv; cwd?: string }
  | { kind: 'url'; url: string; headers?: Record<string, string> };

export interface Origin {
  kind: 'command' | 'url';
  commandLine?: string;
  url?: string;
  package?: string;
  version?: string | null;
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

/** The npm (or PyPI) package a command line runs, and its version where it can tell. */
export function originOf(source: Source, cwd = process.cwd()): Origin {
  if (source.kind === 'url') return { kind: 'url', url: source.url };
  const commandLine = [source.command, ...source.args].join(' ');
  const origin: Origin = { kind: 'command', commandLine };
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
    return { kind: 'unknown', tls, detail: `probe failed: ${(err as Error).message}` };
  }
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
 * Connects to a server as a full-featured client (sampling, elicitation, roots), reads every page
 * of tools, resources and prompts, and disconnects.
 */
export async function fetchListing(source: Source, timeoutMs = 30_000): Promise<Listing> {
  const auth: AuthPosture = source.kind === 'url'
    ? await probeAuth(source.url)
    : { kind: 'local-process', secretEnv: Object.keys(source.env ?? process.env).filter((k) => SECRET_ENV.test(k)).sort() };
  const seen = { protocolVersion: null as string | null };
  const client = new Client({ name: 'toolgate-record', version: '0.1.0' }, { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } });
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [] }));
  client.setRequestHandler(CreateMessageRequestSchema, async () => { throw new Error('toolgate record does not sample'); });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
  const connect = async (t: Transport) => client.connect(observe(t, seen));
  const timer = new Promise<never>((_, reject) => setTimeout(() => reject(new SourceError(`the server did not answer within ${timeoutMs / 1000} s`)), timeoutMs).unref());
  try {
    if (source.kind === 'command') {
      await Promise.race([connect(new StdioClientTransport({ command: source.command, args: source.args, env: (source.env ?? process.env) as Record<string, string>, cwd: source.cwd, stderr: 'ignore' })), timer]);
    } else {
      const url = new URL(source.url);
      const requestInit = { headers: source.headers ?? {} };
      try {
        await Promise.race([connect(new StreamableHTTPClientTransport(url, { requestInit })), timer]);
      } catch (err) {
        if (err instanceof SourceError) throw err;
        await Promise.race([connect(new SSEClientTransport(url, { requestInit })), timer]);
      }
    }
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
    throw new SourceError(`cannot list the server's tools: ${(err as Error).message.split('\n')[0]}`);
  } finally {
    await client.close().catch(() => {});
  }
}
