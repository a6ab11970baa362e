import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { ApprovalError, Approvals, approvalView, argsText, formatDuration } from '../approvals/index.js';
import { oneLine } from '../display/index.js';
import { createLogger } from '../log.js';
import type { Approval } from '../state/index.js';
import { CliError, printJson, printJsonLine, stateOptions, stores, type ConfigStateFlags, say } from './common.js';

const common = (cmd: Command) => stateOptions(cmd).option('--json', 'print JSON only');

interface ApprovalFlags extends ConfigStateFlags { json?: boolean; all?: boolean; watch?: boolean; reason?: string }

/**
 * One approval for a person: every argument in full (indented JSON, nothing cut; the terminal
 * wraps), what masking changed, and every untrusted string escaped (say() escapes every line).
 */
function line(a: Approval, now: number): string {
  const when = a.status === 'pending' ? `expires in ${formatDuration(a.expiresAt - now)}` : oneLine`${a.status}${a.decidedBy ? ` by ${a.decidedBy}` : ''}`;
  // argsText escapes every character inside values, newlines included: its line breaks are the JSON's own.
  const args = argsText(a.args).split('\n').map((l, i) => (i === 0 ? l : `         ${l}`)).join('\n');
  const grant = oneLine`grant=${a.grant}${a.grantId && a.grantId !== a.grant ? ` (${a.grantId})` : ''}`;
  return [
    oneLine`${a.id}  ${a.tool}  server=${a.server} ` + grant + (a.client ? oneLine` client=${a.client}` : '') + `  ${when}`,
    `    args ${args}`,
    ...(a.masked?.length ? [oneLine`    masked ${a.masked.join('; ')}`] : []),
    oneLine`    why  ${a.reason} (${a.rule})`,
  ].join('\n');
}

/** Runs `fn` with the approvals of the chosen state; ApprovalErrors become one-line CLI errors (exit 1). */
async function withApprovals(flags: ApprovalFlags, fn: (approvals: Approvals) => Promise<void>): Promise<void> {
  const { state, audit } = await stores(flags);
  const approvals = new Approvals({ store: state.approvals, audit, log: createLogger('silent') });
  try {
    await fn(approvals);
  } catch (err) {
    if (err instanceof ApprovalError) throw new CliError(err.message, 1);
    throw err;
  } finally {
    approvals.close();
    audit.close();
    await state.close();
  }
}

function decideCommand(parent: Command, verb: 'approve' | 'deny'): void {
  const cmd = parent.command(verb).description(verb === 'approve' ? 'let the held call through, once' : 'refuse the held call; the agent reads the reason')
    .argument('<id>', 'the approval id (toolgate approvals list)');
  if (verb === 'deny') cmd.option('--reason <text>', 'why, shown to the agent and kept in the audit log');
  common(cmd).action((id: string, flags: ApprovalFlags) => withApprovals(flags, async (approvals) => {
    const by = `cli:${userInfo().username}`;
    const decided = await approvals.decide(id, verb === 'approve', by, 'cli', flags.reason);
    if (flags.json) printJson(approvalView(decided));
    else say(oneLine`${decided.id} ${decided.status} by ${by}: ${decided.tool} on ${decided.server}` + `${verb === 'approve' ? ' (a waiting call goes through now; otherwise the same call made again passes once)' : ''}\n`);
  }));
}

export function registerApprovals(program: Command): void {
  const approvals = program.command('approvals').description('calls held for a human: list, approve, deny');

  common(approvals.command('list').description('pending approvals (with --all, recent decisions too)')
    .option('--all', 'also approved, denied, timed out and used ones')
    .option('--watch', 'keep running and print each new pending approval as it arrives'))
    .action((flags: ApprovalFlags) => withApprovals(flags, async (a) => {
      await a.sweep();
      const now = Date.now();
      const list = await a.store.list(flags.all ? { limit: 100 } : { status: 'pending' });
      const print = (x: Approval) => (flags.json ? printJsonLine(approvalView(x)) : say(line(x, Date.now()) + '\n'));
      if (!flags.watch) {
        if (flags.json) printJson(list.map(approvalView));
        else if (list.length === 0) say('no pending approvals\n');
        else for (const x of list) say(line(x, now) + '\n');
        return;
      }
      // Watch mode: one line (JSON Lines with --json) per pending approval, old then new, until interrupted.
      const shown = new Set<string>();
      for (const x of list.reverse()) { shown.add(x.id); print(x); }
      await new Promise<void>((resolve) => {
        const stop = a.store.watch((x) => {
          if (x.status !== 'pending' || shown.has(x.id)) return;
          shown.add(x.id);
          print(x);
        });
        // The store's poll timer does not keep the process alive on its own; this one does, and sweeps.
        const alive = setInterval(() => { void a.sweep(); }, 5000);
        const end = () => { stop(); clearInterval(alive); resolve(); };
        process.once('SIGINT', end);
        process.once('SIGTERM', end);
      });
    }));

  decideCommand(approvals, 'approve');
  decideCommand(approvals, 'deny');
}
