import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { join, resolve } from 'node:path';
import { AuditLog } from '../audit/index.js';
import { loadGatewayConfig } from '../gateway/config.js';
import { formatIssue } from '../policy/index.js';
import { defaultStateDsn, openState, StateError, toolgateHome, type StateStore } from '../state/index.js';

/** An error the user can act on: one line, no stack, and the exit code to leave with. */
export class CliError extends Error {
  constructor(message: string, readonly code = 2) {
    super(message);
  }
}

export interface StateFlags {
  state?: string;
  audit?: string;
}

export function stateDsn(flags: StateFlags): string {
  return flags.state ?? process.env.TOOLGATE_STATE ?? defaultStateDsn();
}

export function auditFile(flags: StateFlags): string {
  return resolve(flags.audit ?? process.env.TOOLGATE_AUDIT ?? join(toolgateHome(), 'audit.db'));
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
  if (!existsSync(file)) throw new CliError(`no audit log at ${file}: run toolgate first, or point --audit at the file`);
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

export interface ConfigStateFlags extends StateFlags {
  config?: string;
}

/** The state store and audit log a command works on: the config's (-c), --state/--audit, or TOOLGATE_HOME's. */
export function stores(flags: ConfigStateFlags): { state: StateStore; audit: AuditLog } {
  let dsn = flags.state;
  let audit = flags.audit;
  if (flags.config) {
    const loaded = loadGatewayConfig(flags.config);
    if (!loaded.ok) throw new CliError(`invalid configuration ${formatIssue(flags.config, loaded.issues[0])}`);
    dsn ??= loaded.value.state;
    audit ??= loaded.value.audit;
  }
  return { state: openStateOrFail(stateDsn({ state: dsn })), audit: new AuditLog(auditFile({ audit })) };
}

/** The options of every command that works on the gateway's state: -c FILE, --state, --audit, --json. */
export const stateOptions = (cmd: Command): Command => cmd
  .option('-c, --config <file>', 'toolgate.yaml whose state to use')
  .option('--state <dsn>', 'state store (default: sqlite under TOOLGATE_HOME)')
  .option('--audit <file>', 'audit log file')
  .option('--json', 'print JSON only');
