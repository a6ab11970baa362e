import { resolve } from 'node:path';
import type { Command } from 'commander';
import { replay, type AuditLog, type AuditRow } from '../audit/index.js';
import { oneLine } from '../display/index.js';
import { formatIssue, loadPolicyFile } from '../policy/index.js';
import type { Policy } from '../policy/schema.js';
import { openState, StateError, type FleetInstance } from '../state/index.js';
import { MEMORY_STATE_REFUSAL } from '../approvals/index.js';
import { auditFile, CliError, isMemoryDsn, openAudit, parseSince, printJson, stateConfig, stateDsn, stateFailureLine, stateOptions, type StateFlags, say } from './common.js';

interface ReplayFlags extends StateFlags { policy: string; since: string; server?: string; json?: boolean }

/**
 * The servers whose history a policy is replayed against, and why: --server; else the servers
 * the policy file is configured for (-c) or was loaded for (the audit log's start and reload
 * rows); else those whose policy had this very hash; else those whose called tools the policy
 * names; else the only server there is. Several servers' history under one server's policy is
 * never a silent default.
 */
function replayServers(flags: ReplayFlags, policy: Policy, hash: string, log: AuditLog, calls: readonly AuditRow[]): { servers: string[]; basis: string } {
  if (flags.server) return { servers: [flags.server], basis: 'given with --server' };
  const file = resolve(flags.policy);
  const configured = Object.entries(stateConfig(flags)?.value.servers ?? {}).filter(([, s]) => s.policy === file).map(([n]) => n);
  if (configured.length) return { servers: configured, basis: `their policy in ${flags.config}` };
  const loads = [...log.query({ kind: 'start', limit: 100_000 }), ...log.query({ kind: 'policy_reload', limit: 100_000 })];
  const loadedFor = new Set(loads.filter((r) => r.server && r.message !== null && (r.message === file || r.message.endsWith(`policy ${file})`))).map((r) => r.server!));
  if (loadedFor.size) return { servers: [...loadedFor].sort(), basis: `toolgate ran them with ${flags.policy}` };
  const same = new Set(calls.filter((r) => r.server && r.policy_hash === hash).map((r) => r.server!));
  if (same.size) return { servers: [...same].sort(), basis: 'their calls were decided under this same policy' };
  const named = new Set(Object.keys(policy.tools));
  const byTools = new Set(calls.filter((r) => r.server && r.tool && named.has(r.tool)).map((r) => r.server!));
  if (byTools.size) return { servers: [...byTools].sort(), basis: 'the policy has entries for tools they were called with' };
  const all = [...new Set(calls.map((r) => r.server).filter((s): s is string => !!s))].sort();
  if (all.length <= 1) return { servers: all, basis: all.length ? 'the only server in the audit log' : 'no calls in the audit log' };
  throw new CliError(`cannot tell which server ${flags.policy} is for: pass --server NAME (servers in the audit log: ${all.join(', ')})`);
}

export function registerStatus(program: Command): void {
  stateOptions(program
    .command('status')
    .description('running toolgate instances, calls per minute, top denials, the kill switch'))
    .option('--json', 'print JSON only')
    .action(async (flags: StateFlags & { json?: boolean }) => {
      const dsn = stateDsn(flags);
      if (isMemoryDsn(dsn)) throw new CliError(MEMORY_STATE_REFUSAL);
      const log = openAudit(flags);
      const summary = log.summary();
      log.close();
      // null: not known (the store could not be opened or read), never shown as "off".
      let killSwitch: unknown[] | null = null;
      let fleet: FleetInstance[] | undefined;
      let stateProblem: string | undefined;
      try {
        const state = openState(dsn);
        try {
          await state.connect?.();
          killSwitch = (await state.flags.listKillSwitches()).filter((k) => k.on);
          fleet = await state.fleet?.instances();
        } catch (err) {
          stateProblem = stateFailureLine(err) ?? (err as Error).message;
        }
        await state.close().catch(() => {});
      } catch (err) {
        if (!(err instanceof StateError)) throw err;
        stateProblem = err.message;
      }
      if (flags.json) return printJson({ ...summary, killSwitch, ...(fleet ? { fleet } : {}), ...(stateProblem ? { stateProblem } : {}) });
      const out: string[] = [];
      if (fleet) {
        out.push(fleet.length ? `fleet: ${fleet.length} live instance${fleet.length === 1 ? '' : 's'} on the shared state` : 'fleet: no live instance on the shared state');
        for (const i of fleet) out.push(oneLine`  ${i.instance}  ${i.listen}  ${i.servers.join(', ') || '-'}  ${i.sessions} ${i.sessions === 1 ? 'session' : 'sessions'}, up since ${i.startedAt}, last seen ${i.lastSeen}` + (i.generation === 'lost' ? '  STATE LOST: refusing limited calls until toolgate state reset-ack' : ''));
      }
      if (stateProblem) out.push(oneLine`state store: ${stateProblem}`);
      // With a fleet listed above, what follows comes from one audit log only (each instance keeps its own): say so.
      const audited = fleet ? oneLine` writing to ${auditFile(flags)}` : '';
      out.push(summary.instances.length ? `instances (running toolgate run and serve processes${audited}):` : `no toolgate run or serve is running${audited}`);
      for (const i of summary.instances) out.push(oneLine`  ${i.instance}  started ${i.started}  ${i.servers.join(', ') || '-'}  ${i.calls} calls in 15 min${i.lastSeen ? `, last seen ${i.lastSeen}` : ''}`);
      if (summary.stopped.length) out.push('stopped in the last 15 min:');
      for (const i of summary.stopped) out.push(oneLine`  ${i.instance}  ${i.stopped ? `stopped ${i.stopped}` : 'died without stopping'}`);
      out.push(fleet ? oneLine`calls in the last minute (in ${auditFile(flags)}; each instance keeps its own audit log):` : 'calls in the last minute:');
      if (summary.callsLastMinute.length === 0) out.push('  none');
      for (const c of summary.callsLastMinute) out.push(oneLine`  ${c.server ?? '-'}: ${c.calls} (${c.denied} denied)`);
      out.push('top denials in the last hour:');
      if (summary.topDenialsLastHour.length === 0) out.push('  none');
      for (const d of summary.topDenialsLastHour) out.push(oneLine`  ${String(d.count).padStart(5)}  ${d.server ?? '-'} ${d.tool} ${d.rule}`);
      if (!killSwitch) out.push('kill switch: unknown (state store unreachable)');
      else out.push(killSwitch.length ? oneLine`kill switch ON: ${(killSwitch as { scope: string }[]).map((k) => (k.scope === '*' ? 'all servers' : k.scope)).join(', ')}` : 'kill switch off');
      say(out.join('\n') + '\n');
    });

  stateOptions(program
    .command('replay')
    .description('past calls a new policy would decide differently (by default, for the servers the policy is for)')
    .requiredOption('--policy <file>', 'the new policy')
    .option('--since <duration>', 'how far back, e.g. 24h or 7d', '7d')
    .option('--server <name>', 'only calls to this server'))
    .option('--json', 'print JSON only')
    .action(async (flags: ReplayFlags) => {
      const loaded = loadPolicyFile(flags.policy);
      if (!loaded.ok) throw new CliError(`invalid policy ${formatIssue(flags.policy, loaded.issues[0])}`, 1);
      const log = openAudit(flags);
      let rows: AuditRow[];
      let chosen: { servers: string[]; basis: string };
      try {
        const calls = log.query({ kind: 'call', sinceMs: parseSince(flags.since), server: flags.server, limit: 1_000_000 });
        chosen = replayServers(flags, loaded.policy, loaded.hash, log, calls);
        const servers = new Set(chosen.servers);
        rows = calls.filter((r) => r.server !== null && servers.has(r.server));
      } finally {
        log.close();
      }
      const changes = await replay(rows, loaded.policy, loaded.hash);
      if (flags.json) return printJson({ servers: chosen.servers, basis: chosen.basis, examined: rows.length, changed: changes });
      say(`replaying calls to ${chosen.servers.join(', ') || 'no server'} (${chosen.basis}; choose with --server)\n`);
      say(`${rows.length} past calls examined, ${changes.length} decided differently under ${flags.policy}\n`);
      for (const c of changes) {
        say(oneLine`${c.ts} ${c.server ?? '-'} ${c.grant ?? '-'} ${c.tool}: ${c.before.decision} (${c.before.rule}) → ${c.after.decision} (${c.after.rule})` + `${c.argsKnown ? '' : ' [argument values were not recorded]'}\n`);
      }
      if (changes.some((c) => !c.argsKnown)) say('Rows without argument values were decided as if the arguments were empty; record them with --audit-args (run) or audit_args: true (a server in toolgate.yaml), secrets masked.\n');
    });
}
