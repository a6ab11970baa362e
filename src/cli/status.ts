import type { Command } from 'commander';
import { replay } from '../audit/index.js';
import { formatIssue, loadPolicyFile } from '../policy/index.js';
import { openState, StateError, type FleetInstance } from '../state/index.js';
import { CliError, openAudit, parseSince, printJson, stateDsn, type StateFlags } from './common.js';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('running toolgate instances, calls per minute, top denials, the kill switch')
    .option('--state <dsn>', 'state store (default: sqlite under TOOLGATE_HOME)')
    .option('--audit <file>', 'audit log file (default: TOOLGATE_HOME/audit.db)')
    .option('--json', 'print JSON only')
    .action(async (flags: StateFlags & { json?: boolean }) => {
      const log = openAudit(flags);
      const summary = log.summary();
      log.close();
      let killSwitch: unknown[] = [];
      let fleet: FleetInstance[] | undefined;
      let stateProblem: string | undefined;
      try {
        const state = openState(stateDsn(flags));
        try {
          killSwitch = (await state.flags.listKillSwitches()).filter((k) => k.on);
          fleet = await state.fleet?.instances();
        } catch (err) {
          stateProblem = (err as Error).message;
        }
        await state.close();
      } catch (err) {
        if (!(err instanceof StateError)) throw err;
      }
      if (flags.json) return printJson({ ...summary, killSwitch, ...(fleet ? { fleet } : {}), ...(stateProblem ? { stateProblem } : {}) });
      const out: string[] = [];
      if (fleet) {
        out.push(fleet.length ? `fleet: ${fleet.length} live instance${fleet.length === 1 ? '' : 's'} on the shared state` : 'fleet: no live instance on the shared state');
        for (const i of fleet) out.push(`  ${i.instance}  ${i.listen}  ${i.servers.join(', ') || '-'}  ${i.sessions} sessions, up since ${i.startedAt}, last seen ${i.lastSeen}`);
      }
      if (stateProblem) out.push(`state store: ${stateProblem}`);
      out.push(summary.instances.length ? 'instances (last 15 min):' : 'no toolgate instance wrote to the audit log in the last 15 minutes');
      for (const i of summary.instances) out.push(`  ${i.instance}  ${i.servers.join(', ') || '-'}  ${i.calls} calls, last seen ${i.lastSeen}`);
      out.push('calls in the last minute:');
      if (summary.callsLastMinute.length === 0) out.push('  none');
      for (const c of summary.callsLastMinute) out.push(`  ${c.server ?? '-'}: ${c.calls} (${c.denied} denied)`);
      out.push('top denials in the last hour:');
      if (summary.topDenialsLastHour.length === 0) out.push('  none');
      for (const d of summary.topDenialsLastHour) out.push(`  ${String(d.count).padStart(5)}  ${d.server ?? '-'} ${d.tool} ${d.rule}`);
      out.push(killSwitch.length ? `kill switch ON: ${(killSwitch as { scope: string }[]).map((k) => (k.scope === '*' ? 'all servers' : k.scope)).join(', ')}` : 'kill switch off');
      process.stdout.write(out.join('\n') + '\n');
    });

  program
    .command('replay')
    .description('past calls a new policy would decide differently')
    .requiredOption('--policy <file>', 'the new policy')
    .option('--since <duration>', 'how far back, e.g. 24h or 7d', '7d')
    .option('--server <name>', 'only calls to this server')
    .option('--audit <file>', 'audit log file (default: TOOLGATE_HOME/audit.db)')
    .option('--json', 'print JSON only')
    .action(async (flags: StateFlags & { policy: string; since: string; server?: string; json?: boolean }) => {
      const loaded = loadPolicyFile(flags.policy);
      if (!loaded.ok) throw new CliError(`invalid policy ${formatIssue(flags.policy, loaded.issues[0])}`, 1);
      const log = openAudit(flags);
      const rows = log.query({ kind: 'call', sinceMs: parseSince(flags.since), server: flags.server, limit: 1_000_000 });
      log.close();
      const changes = await replay(rows, loaded.policy, loaded.hash);
      if (flags.json) return printJson({ examined: rows.length, changed: changes });
      process.stdout.write(`${rows.length} past calls examined, ${changes.length} decided differently under ${flags.policy}\n`);
      for (const c of changes) {
        process.stdout.write(`${c.ts} ${c.server ?? '-'} ${c.grant ?? '-'} ${c.tool}: ${c.before.decision} (${c.before.rule}) → ${c.after.decision} (${c.after.rule})${c.argsKnown ? '' : ' [argument values were not recorded]'}\n`);
      }
      if (changes.some((c) => !c.argsKnown)) process.stdout.write('Rows without argument values were decided as if the arguments were empty; run toolgate with --audit-args to record them (secrets masked).\n');
    });
}
