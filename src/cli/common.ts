import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { join, resolve } from 'node:path';
import { AuditLog } from '../audit/index.js';
import { loadGatewayConfig, type ConfigResult } from '../gateway/config.js';
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
  return resolve(flags.audit ?? stateConfig(flags)?.value.audit ?? process.env.TOOLGATE_AUDIT ?? join(toolgateHome(), 'audit.db'));
}

/** Opens a state store; a DSN it cannot open is a one-line usage error. */
export function openStateOrFail(dsn: string): StateStore {
  try {
    return openState(dsn);
  } catch (err) {
    if (err instanceof StateError) throw new CliError(err.message);
    throw err;
  }
}

/** The audit log for reading; it must exist already. */
export function openAudit(flags: StateFlags): AuditLog {
  const file = auditFile(flags);
  if (!existsSync(file)) throw new CliError(`no audit log at ${file}: run toolgate first, or point -c or --audit at the gateway's`);
  return new AuditLog(file);
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
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
export function stores(flags: StateFlags): { state: StateStore; audit: AuditLog } {
  return { state: openStateOrFail(stateDsn(flags)), audit: new AuditLog(auditFile(flags)) };
}
