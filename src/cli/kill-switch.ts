import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { AuditLog } from '../audit/index.js';
import { oneLine } from '../display/index.js';
import { auditFile, CliError, openStateOrFail, printJson, stateConfig, stateDsn, stateOptions, type StateFlags, say } from './common.js';

/**
 * A switch for a server nobody runs stops nothing. Where the servers are known (-c) an unknown
 * name is refused; otherwise one the audit log has never seen is warned about.
 */
function checkServerName(server: string, flags: StateFlags): void {
  const config = stateConfig(flags);
  if (config) {
    if (!Object.hasOwn(config.value.servers, server)) {
      throw new CliError(`no server named "${server}" in ${flags.config} (servers: ${Object.keys(config.value.servers).join(', ') || 'none'})`);
    }
    return;
  }
  const file = auditFile(flags);
  const seen = existsSync(file) ? (() => { const log = new AuditLog(file); try { return log.servers(); } finally { log.close(); } })() : [];
  if (!seen.includes(server)) {
    process.stderr.write(`toolgate: warning: no server named "${server}" has been seen in ${file}${seen.length ? ` (seen: ${seen.join(', ')})` : ''}; the switch is set for that name anyway (pass -c toolgate.yaml to check against a gateway's servers)\n`);
  }
}

export function registerKillSwitch(program: Command): void {
  stateOptions(program
    .command('kill-switch')
    .description('stop (on) or resume (off) every tool call, gateway-wide or for one server; takes effect on the next call')
    .argument('<state>', 'on, off or status')
    .option('--server <name>', 'only this server (default: every server)')
    .option('--reason <text>', 'why, for the audit log'))
    .option('--json', 'print JSON only')
    .action(async (what: string, flags: StateFlags & { server?: string; reason?: string; json?: boolean }) => {
      if (!['on', 'off', 'status'].includes(what)) throw new CliError('kill-switch takes on, off or status');
      if (flags.server !== undefined && what === 'on') checkServerName(flags.server, flags);
      const state = await openStateOrFail(stateDsn(flags));
      const scope = flags.server ?? '*';
      let all;
      try {
        if (what !== 'status') {
          await state.flags.setKillSwitch(scope, what === 'on', flags.reason);
          const audit = new AuditLog(auditFile(flags));
          audit.append({ kind: 'kill_switch', server: flags.server, decision: undefined, message: `${what}${flags.reason ? `: ${flags.reason}` : ''}` });
          audit.close();
        }
        all = await state.flags.listKillSwitches();
      } finally {
        await state.close();
      }
      if (flags.json) printJson(all);
      else if (all.length === 0) say('kill switch off everywhere\n');
      else for (const s of all) say(oneLine`${s.scope === '*' ? 'all servers' : s.scope}: ${s.on ? 'ON' : 'off'} since ${s.at}${s.reason ? ` (${s.reason})` : ''}` + '\n');
    });
}
