import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { pointerOf, type PolicyIssue } from '../policy/check.js';
import { parseWithSchema, type SchemaResult } from '../policy/load.js';

/**
 * toolgate.yaml (or the same in JSON). `${VAR}` reads the environment and `${file:PATH}` a file,
 * so credentials never need to be written inline; relative paths are relative to the file.
 */

const DURATION = z.string().regex(/^\d+(s|m|h)$/, 'a duration such as 90s, 15m or 1h').refine((d) => !/^0+\D/.test(d), 'a duration must be more than 0');

const ServerBase = {
  policy: z.string().optional().describe('policy file; without it, the recommended policy for the server\'s tools'),
  auth: z.enum(['grants', 'none']).default('grants').describe('none: no credentials (local use, loopback only)'),
};

export const ServerSchema = z.union([
  z.strictObject({
    ...ServerBase,
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().optional(),
  }),
  z.strictObject({
    ...ServerBase,
    url: z.url(),
    headers: z.record(z.string(), z.string()).default({}),
  }),
], { error: 'a server needs either command (with args, env, cwd) or url (with headers), and only known fields' });

export const GatewayConfigSchema = z.strictObject({
  listen: z.string().regex(/^(\[[0-9a-fA-F:]+\]|[\w.-]+):\d{1,5}$/, 'HOST:PORT').default('127.0.0.1:8080'),
  state: z.string().optional().describe('memory:, sqlite:PATH or redis://…; default sqlite under TOOLGATE_HOME'),
  audit: z.string().optional().describe('audit log SQLite file; default TOOLGATE_HOME/audit.db'),
  admin: z.strictObject({ token: z.string().min(16, 'use at least 16 characters') }).optional(),
  sessions: z.strictObject({
    idle_timeout: DURATION.default('15m'),
    idle_timeout_unused: DURATION.default('2m').describe('sessions with no GET stream open that sent nothing this long are closed'),
    max: z.number().int().positive().default(100).describe('open sessions per server'),
    max_per_grant: z.number().int().positive().default(20).describe('open sessions per grant'),
    max_body: z.string().regex(/^\d+(kb|mb)$/i).default('4mb'),
  }).prefault({}),
  allowed_hosts: z.array(z.string().regex(/^(\[[0-9a-fA-F:]+\]|[\w.-]+)(:\d{1,5})?$/, 'a host name or address, optionally with :PORT')).default([])
    .describe('names and addresses clients reach this gateway by, besides loopback (Host and Origin checks)'),
  allowed_origins: z.array(z.string()).default([]),
  servers: z.record(z.string().regex(/^[A-Za-z0-9._-]+$/, 'server names are letters, digits, dot, dash and underscore'), ServerSchema).default({}),
});

export type GatewayConfig = z.output<typeof GatewayConfigSchema>;
export type ServerConfig = z.output<typeof ServerSchema>;

/** The server of this name, as an own property only (`__proto__` or `constructor` name none). */
export function serverNamed(config: GatewayConfig, name: string): ServerConfig | undefined {
  return Object.hasOwn(config.servers, name) ? config.servers[name] : undefined;
}

const REF = /\$\{(file:)?([^}]+)\}/g;

/** Replaces ${VAR} and ${file:PATH} in every string, reporting each one that cannot be read. */
function substitute(value: unknown, at: (string | number)[], base: string, issues: PolicyIssue[]): unknown {
  if (typeof value === 'string') {
    return value.replace(REF, (_, file: string | undefined, name: string) => {
      if (file) {
        const path = isAbsolute(name) ? name : resolve(base, name);
        try { return readFileSync(path, 'utf8').trim(); } catch { issues.push({ pointer: pointerOf(at), message: `cannot read the file ${name}` }); return ''; }
      }
      const v = Object.hasOwn(process.env, name) ? process.env[name] : undefined;
      if (v === undefined) issues.push({ pointer: pointerOf(at), message: `the environment variable ${name} is not set` });
      return v ?? '';
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substitute(v, [...at, i], base, issues));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, [...at, k], base, issues)]));
  }
  return value;
}

export function parseGatewayConfig(text: string, base: string): SchemaResult<GatewayConfig> {
  const result = parseWithSchema(text, GatewayConfigSchema, { prepare: (raw, issues) => substitute(raw, [], base, issues) });
  if (!result.ok) return result;
  const c = result.value;
  const at = (p: string | undefined) => (p === undefined || isAbsolute(p) ? p : resolve(base, p));
  for (const s of Object.values(c.servers)) {
    s.policy = at(s.policy);
    if ('cwd' in s) s.cwd = at(s.cwd);
  }
  if (c.state?.startsWith('sqlite:')) c.state = `sqlite:${at(c.state.slice('sqlite:'.length))}`;
  c.audit = at(c.audit);
  return result;
}

export function loadGatewayConfig(file: string): SchemaResult<GatewayConfig> {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (err) {
    return { ok: false, issues: [{ pointer: '', message: `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` }] };
  }
  return parseGatewayConfig(text, dirname(resolve(file)));
}

export function durationToMs(text: string): number {
  const m = /^(\d+)(s|m|h)$/.exec(text)!;
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 's'];
}

export function sizeToBytes(text: string): number {
  const m = /^(\d+)(kb|mb)$/i.exec(text)!;
  return Number(m[1]) * (m[2].toLowerCase() === 'kb' ? 1024 : 1024 * 1024);
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
