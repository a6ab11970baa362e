import type { Command } from 'commander';
import type { AuditQuery, AuditRow } from '../audit/index.js';
import { CliError, openAudit, parseSince, printJson, stateOptions, type StateFlags } from './common.js';

/** The filters of AuditQuery as flags, plus how much and in what form. */
interface AuditFlags extends StateFlags, Pick<AuditQuery, 'decision' | 'tool' | 'server' | 'grant' | 'session' | 'client' | 'instance'> {
  json?: boolean;
  since?: string;
  limit: string;
}

function line(r: AuditRow): string {
  const who = [r.server, r.grant_label, r.client].filter(Boolean).join(' ');
  if (r.kind !== 'call' && r.kind !== 'approval') return `${r.ts} ${r.kind.padEnd(11)} ${who} ${r.message ?? ''}`.trimEnd();
  const outcome = r.outcome ? ` → ${r.outcome}${r.latency_ms !== null ? ` ${r.latency_ms}ms` : ''}` : '';
  return `${r.ts} ${(r.decision ?? '').padEnd(11)} ${r.tool} ${r.rule ?? ''} (${who})${outcome}${r.decision !== 'allow' && r.message ? `: ${r.message}` : ''}`;
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
    .action((flags: AuditFlags) => {
      const log = openAudit(flags);
      const limit = Number(flags.limit);
      if (!Number.isInteger(limit) || limit <= 0) throw new CliError('--limit must be a positive whole number');
      const rows = log.query({
        sinceMs: flags.since ? parseSince(flags.since) : undefined,
        decision: flags.decision, tool: flags.tool, server: flags.server, grant: flags.grant,
        session: flags.session, client: flags.client, instance: flags.instance, limit,
      });
      log.close();
      if (flags.json) printJson(rows.map((r) => ({ ...r, arg_keys: r.arg_keys ? JSON.parse(r.arg_keys) : null })));
      else for (const r of rows) process.stdout.write(line(r) + '\n');
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
      else process.stdout.write(result.ok ? `audit log intact: ${result.rows} rows\n` : `audit log TAMPERED: ${result.problem}\n`);
      if (!result.ok) process.exitCode = 1;
    });
}
