import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { join, resolve } from 'node:path';
import { MEMORY_STATE_REFUSAL } from '../approvals/index.js';
import { AuditLog } from '../audit/index.js';
import { jsonText, terminalText } from '../display/index.js';
import { loadGatewayConfig, type ConfigResult } from '../config/gateway.js';
import { formatIssue } from '../policy/index.js';
import { defaultStateDsn, openState, StateError, toolgateHome, type StateStore } from '../state/index.js';

/** An error the user can act on: one line, no stack, and the exit code to leave with. */
export class CliError extends Error {
  constructor(message: string, readonly code = 2) {
    super(message);
  }
}

export interface StateFlags {
  /** A gateway configuration whose state and audit log to use. */
  config?: string;
  state?: string;
  audit?: string;
}

/**
 * `-c FILE`, `--state DSN`, `--audit FILE`: every command that works on state takes the same
 * three. An explicit --state or --audit wins over the configuration's.
 */
export function stateOptions(cmd: Command): Command {
  return cmd
    .option('-c, --config <file>', "a gateway configuration (toolgate.yaml) whose state and audit log to use")
    .option('--state <dsn>', 'state store: sqlite:PATH, redis://HOST:PORT or memory: (default: sqlite under TOOLGATE_HOME)')
    .option('--audit <file>', 'audit log SQLite file (default: TOOLGATE_HOME/audit.db)');
}

const configs = new Map<string, ConfigResult & { ok: true }>();

/** The configuration -c names, loaded as state commands need it (no admin token); one line if invalid. */
export function stateConfig(flags: StateFlags): (ConfigResult & { ok: true }) | undefined {
  if (!flags.config) return undefined;
  const file = resolve(flags.config);
  let loaded = configs.get(file);
  if (!loaded) {
    const result = loadGatewayConfig(flags.config, { forState: true });
    if (!result.ok) throw new CliError(`invalid configuration ${formatIssue(flags.config, result.issues[0])}`);
    configs.set(file, (loaded = result));
  }
  return loaded;
}

export function stateDsn(flags: StateFlags): string {
  return flags.state ?? stateConfig(flags)?.value.state ?? process.env.TOOLGATE_STATE ?? defaultStateDsn();
}

export function auditFile(flags: StateFlags): string {
  return resolve(flags.audit ?? stateConfig(flags)?.value.audit?.path ?? process.env.TOOLGATE_AUDIT ?? join(toolgateHome(), 'audit.db'));
}

/**
 * Opens a state store and waits until it answers: a DSN it cannot open, or a store it cannot
 * reach (Redis: at the first connection error, at the latest after the DSN's timeout), is one
 * line naming the DSN without its password, exit 2. A `memory:` store is refused (exit 2) unless
 * `memoryOk` (serve, run): a state command on it would act on a throwaway copy and report success.
 */
export async function openStateOrFail(dsn: string, opts: { memoryOk?: boolean } = {}): Promise<StateStore> {
  if (!opts.memoryOk && isMemoryDsn(dsn)) throw new CliError(MEMORY_STATE_REFUSAL);
  let state: StateStore;
  try {
    state = openState(dsn);
  } catch (err) {
    if (err instanceof StateError) throw new CliError(err.message);
    throw err;
  }
  try {
    await state.connect?.();
  } catch (err) {
    await state.close();
    const message = (err as Error).message;
    throw new CliError(/ is unreachable/.test(message) ? `${message}: check that it runs and the state DSN (--state, -c or TOOLGATE_STATE)` : message);
  }
  if (state.kind === 'redis') openedRedis = state.health?.().detail;
  return state;
}

export function isMemoryDsn(dsn: string): boolean {
  return dsn === 'memory:' || dsn === 'memory';
}

/** The Redis a command opened (host:port/db), for the one line a lost connection becomes. */
let openedRedis: string | undefined;

/**
 * A Redis client's error that reached the top of a command (the connection dropped after it was
 * opened), as one line without the client library's wording; undefined for any other error.
 */
export function stateFailureLine(err: unknown): string | undefined {
  if (!openedRedis || !(err instanceof Error)) return undefined;
  if (err.name === 'MaxRetriesPerRequestError' || /^Connection is closed|^Command timed out|^Stream isn't writeable|ECONNREFUSED|ECONNRESET/.test(err.message)) {
    return `Redis at ${openedRedis} stopped answering (${err.name === 'MaxRetriesPerRequestError' ? 'the connection was lost' : err.message.replace(/\.$/, '')}): check that it runs, then run the command again`;
  }
  return err.message.startsWith('Redis at ') ? err.message : undefined;
}

/** The audit log for reading; it must exist already. */
export function openAudit(flags: StateFlags): AuditLog {
  const file = auditFile(flags);
  if (!existsSync(file)) throw new CliError(`no audit log at ${file}: run toolgate first, or point -c or --audit at the gateway's`);
  return new AuditLog(file);
}

/**
 * Every line a command prints for people goes through here: untrusted names, labels, arguments
 * and reasons cannot move the cursor, erase a line or reorder text (control, invisible and bidi
 * characters are shown as escapes). Line breaks are kept, so a line that shows values from
 * outside is built with `oneLine` (display/), which escapes a newline inside a value too.
 */
export function say(text: string): void {
  process.stdout.write(terminalText(text));
}

/** JSON for machines and people: the same JSON, with invisible characters as \\u escapes. */
export function printJson(value: unknown): void {
  process.stdout.write(jsonText(JSON.stringify(value, null, 2)) + '\n');
}

/** One JSON line (JSON Lines), as `printJson` escapes it. */
export function printJsonLine(value: unknown): void {
  process.stdout.write(jsonText(JSON.stringify(value)) + '\n');
}

/** "90s", "15m", "1h", "7d" → milliseconds. */
export function parseSince(text: string): number {
  const m = /^(\d+)(s|m|h|d)$/.exec(text);
  if (!m) throw new CliError(`invalid duration "${text}": use a number and s, m, h or d, e.g. 1h or 7d`);
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's']!;
}

/** What approvals commands take: the same as every state command. */
export type ConfigStateFlags = StateFlags;

/** The state store and audit log a command works on: --state/--audit, the config's (-c), or TOOLGATE_HOME's. */
export async function stores(flags: StateFlags): Promise<{ state: StateStore; audit: AuditLog }> {
  const state = await openStateOrFail(stateDsn(flags));
  try {
    return { state, audit: new AuditLog(auditFile(flags)) };
  } catch (err) {
    await state.close();
    throw err;
  }
}
