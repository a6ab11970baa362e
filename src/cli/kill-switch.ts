import type { Command } from 'commander';
import { AuditLog } from '../audit/index.js';
import { auditFile, CliError, openStateOrFail, printJson, stateDsn, type StateFlags } from './common.js';

export function registerKillSwitch(program: Command): void {
  program
    .command('kill-switch')
    .description('stop (on) or resume (off) every tool call, gateway-wide or for one server; takes effect on the next call')
    .argument('<state>', 'on, off or status')
    .option('--server <name>', 'only this server (default: every server)')
    .option('--reason <text>', 'why, for the audit log')
    .option('--state <dsn>', 'state store (default: sqlite under TOOLGATE_HOME)')
    .option('--audit <file>', 'audit log file (default: TOOLGATE_HOME/audit.db)')
    .option('--json', 'print JSON only')
    .action(async (what: string, flags: StateFlags & { server?: string; reason?: string; json?: boolean }) => {
      if (!['on', 'off', 'status'].includes(what)) throw new CliError('kill-switch takes on, off or status');
      const state = openStateOrFail(stateDsn(flags));
      const scope = flags.server ?? '*';
      if (what !== 'status') {
        await state.flags.setKillSwitch(scope, what === 'on', flags.reason);
        const audit = new AuditLog(auditFile(flags));
        audit.append({ kind: 'kill_switch', server: flags.server, decision: undefined, message: `${what}${flags.reason ? `: ${flags.reason}` : ''}` });
        audit.close();
      }
      const all = await state.flags.listKillSwitches();
      await state.close();
      if (flags.json) printJson(all);
      else if (all.length === 0) process.stdout.write('kill switch off everywhere\n');
      else for (const s of all) process.stdout.write(`${s.scope === '*' ? 'all servers' : s.scope}: ${s.on ? 'ON' : 'off'} since ${s.at}${s.reason ? ` (${s.reason})` : ''}\n`);
    });
}
