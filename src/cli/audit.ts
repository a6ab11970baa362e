import type { Command } from 'commander';
import type { AuditQuery, AuditRow } from '../audit/index.js';
import { escapeControls, oneLine } from '../display/index.js';
import { isRedisDsn } from '../state/index.js';
import { registerAuditRetention } from './audit-retention.js';
import { CliError, openAudit, openStateOrFail, parseSince, printJson, printJsonLine, stateDsn, stateOptions, type StateFlags, say } from './common.js';

/** The filters of AuditQuery as flags, plus how much and in what form. */
interface AuditFlags extends StateFlags, Pick<AuditQuery, 'decision' | 'tool' | 'server' | 'grant' | 'session' | 'client' | 'instance'> {
  json?: boolean;
  follow?: boolean;
  since?: string;
  limit: string;
}

/** One row, one line: every field from outside (names, labels, tools, messages) escaped, a newline included. */
function line(r: AuditRow): string {
  const who = [r.server, r.grant_label, r.client].filter(Boolean).map((x) => escapeControls(x!)).join(' ');
  if (r.kind !== 'call' && r.kind !== 'approval') return oneLine`${r.ts} ${r.kind.padEnd(11)} ` + `${who} ${escapeControls(r.message ?? '')}`.trimEnd();
  const outcome = r.outcome ? oneLine` → ${r.outcome}${r.latency_ms !== null ? ` ${r.latency_ms}ms` : ''}` : '';
  return oneLine`${r.ts} ${(r.decision ?? '').padEnd(11)} ${r.tool} ${r.rule ?? ''} (` + `${who})${outcome}` + (r.decision !== 'allow' && r.message ? oneLine`: ${r.message}` : '');
}

const FILTERS: [keyof AuditQuery, string][] = [['decision', 'decision'], ['tool', 'tool'], ['server', 'server'], ['grant', 'grant_label'], ['session', 'session'], ['client', 'client'], ['instance', 'instance']];

/** Until SIGINT/SIGTERM. */
function interrupted(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

/** `audit --follow`: new rows as JSON lines, from the fleet's Redis stream or by polling this machine's audit file. */
async function follow(flags: AuditFlags, query: AuditQuery): Promise<void> {
  const out = (row: object) => printJsonLine(row);
  const dsn = stateDsn(flags);
  if (isRedisDsn(dsn)) {
    const state = await openStateOrFail(dsn);
    // Outcomes carry no server or tool, so filters pass them (their event_id names the call).
    const stop = state.fleet!.follow((e) => {
      if (e.kind === 'outcome' || FILTERS.every(([key, column]) => query[key] === undefined || e[column] === query[key])) out(e);
    });
    await interrupted();
    stop();
    await state.close();
    return;
  }
  const log = openAudit(flags);
  let last = 0;
  const print = (rows: AuditRow[]) => {
    for (const r of rows) out({ ...r, arg_keys: r.arg_keys ? JSON.parse(r.arg_keys) : null });
    if (rows.length) last = rows[rows.length - 1].id;
  };
  if (query.sinceMs !== undefined) print(log.query(query));
  else last = log.query({ limit: 1 })[0]?.id ?? 0;
  const timer = setInterval(() => print(log.query({ ...query, sinceMs: undefined, afterId: last, limit: 10_000 })), 500);
  await interrupted();
  clearInterval(timer);
  log.close();
}

export function registerAudit(program: Command): void {
  const audit = stateOptions(program
    .command('audit'))
    .description('query the audit log')
    .option('--since <duration>', 'only rows newer than this, e.g. 15m, 1h, 7d')
    .option('--decision <d>', 'allow, deny, shadow_deny, approval_requested, approved, rejected, timeout, unused, error')
    .option('--tool <name>')
    .option('--server <name>')
    .option('--grant <label>')
    .option('--session <id>')
    .option('--client <name>')
    .option('--instance <host:pid>', 'rows written by one toolgate process')
    .option('--limit <n>', 'at most this many rows (newest)', '1000')
    .option('--json', 'print JSON only')
    .option('--follow', 'keep printing new rows as JSON lines until interrupted (with a redis:// --state: the whole fleet\'s events)')
    .action(async (flags: AuditFlags) => {
      const limit = Number(flags.limit);
      if (!Number.isInteger(limit) || limit <= 0) throw new CliError('--limit must be a positive whole number');
      const query: AuditQuery = {
        sinceMs: flags.since ? parseSince(flags.since) : undefined,
        decision: flags.decision, tool: flags.tool, server: flags.server, grant: flags.grant,
        session: flags.session, client: flags.client, instance: flags.instance, limit,
      };
      if (flags.follow) return follow(flags, query);
      const log = openAudit(flags);
      const rows = log.query(query);
      log.close();
      if (flags.json) printJson(rows.map((r) => ({ ...r, arg_keys: r.arg_keys ? JSON.parse(r.arg_keys) : null })));
      else for (const r of rows) say(line(r) + '\n');
    });

  stateOptions(audit
    .command('verify')
    .description('check the hash chain: exit 1 if a row was edited or deleted'))
    .option('--json', 'print JSON only')
    .action((flags: StateFlags & { json?: boolean }, cmd: Command) => {
      const log = openAudit({ ...cmd.parent?.opts(), ...flags });
      const result = log.verify();
      log.close();
      if (flags.json) printJson(result);
      else say(result.ok ? `audit log intact: ${result.rows} rows${result.pruned ? ` (after a checkpoint: ${result.pruned} older rows pruned)` : ''}\n` : `audit log TAMPERED: ${result.problem}\n`);
      if (!result.ok) process.exitCode = 1;
    });

  registerAuditRetention(audit);
}
