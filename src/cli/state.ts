import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { AuditLog } from '../audit/index.js';
import { auditFile, CliError, openStateOrFail, printJson, stateDsn, stateOptions, type StateFlags } from './common.js';

export function registerState(program: Command): void {
  const state = program.command('state').description('the shared state store (Redis)');

  stateOptions(state.command('reset-ack')
    .description('after Redis lost toolgate\'s state (a flush, eviction, a restart without persistence): acknowledge it, so every instance counts limited calls again, from zero'))
    .option('--json', 'print JSON only')
    .action(async (flags: StateFlags & { json?: boolean }) => {
      const dsn = stateDsn(flags);
      // memory: is refused below with what reset-ack is for.
      const store = await openStateOrFail(dsn, { memoryOk: true });
      let marker: { id: string; at: string; where: string };
      try {
        if (!store.resetGeneration) throw new CliError(`state reset-ack is for a Redis state store, and this one is ${store.kind}: it has no shared state to lose`);
        marker = await store.resetGeneration(`cli:${userInfo().username}`);
      } finally {
        await store.close();
      }
      const audit = new AuditLog(auditFile(flags));
      audit.append({ kind: 'state', message: `reset-ack: state generation ${marker.id} in ${marker.where}` });
      audit.close();
      if (flags.json) printJson({ generation: marker.id, at: marker.at, store: marker.where });
      else process.stdout.write(`state reset acknowledged (generation ${marker.id}) in ${marker.where}: every instance counts limited calls again from its next one (counters that were lost start from zero)\n`);
    });
}
