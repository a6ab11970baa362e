import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { collectJournals, sharedJournalDir } from '../audit/journal.js';
import { registerApprovals } from './approvals.js';
import { registerAudit } from './audit.js';
import { jsonText, terminalText } from '../display/index.js';
import { maskArgs } from '../secrets/credentials.js';
import { DatabaseFileError } from '../state/index.js';
import { CliError, stateFailureLine } from './common.js';
import { registerKillSwitch } from './kill-switch.js';
import { registerPolicy } from './policy.js';
import { registerGrants } from './grants.js';
import { registerRisk } from './risk.js';
import { registerRun } from './run.js';
import { registerServe } from './serve.js';
import { registerState } from './state.js';
import { registerStatus } from './status.js';

/** The version in package.json, which `npm install -g` and `npm pack` publish. */
function packageVersion(): string {
  const meta = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return meta.version;
}

export function buildProgram(): Command {
  const program = new Command('toolgate')
    .description('A policy gateway for MCP: every tools/call is checked against a policy before it reaches the server.')
    .version(packageVersion())
    .enablePositionalOptions()
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  registerRun(program);
  registerPolicy(program);
  registerAudit(program);
  registerKillSwitch(program);
  registerRisk(program);
  registerServe(program);
  registerGrants(program);
  registerApprovals(program);
  registerStatus(program);
  registerState(program);
  const override = (cmd: Command): void => { cmd.exitOverride(); cmd.commands.forEach(override); };
  program.commands.forEach(override);
  return program;
}

/** Every toolgate that starts collects the audit journals that processes which died left in /dev/shm. */
function collectDeadJournals(): void {
  const shm = sharedJournalDir();
  try {
    if (shm) collectJournals([shm]);
  } catch (err) {
    process.stderr.write(`toolgate: could not collect old audit journals in ${shm}: ${(err as Error).message}\n`);
  }
}

/**
 * Toolgate's own command line, as `ps` shows it to every local user and /proc/PID/cmdline to its
 * upstreams, with its credentials masked (`--state redis://:PASSWORD@…`, a server's `--api-key=…`
 * after `run --`): on Linux and macOS the process title overwrites the arguments in place.
 */
function maskOwnCommandLine(argv: string[]): void {
  const shown = maskArgs(argv.slice(2));
  if (shown.found.length === 0) return;
  try { process.title = ['toolgate', ...shown.value].join(' '); } catch { /* a platform without process titles */ }
}

/**
 * `toolgate policy explain … | head -2`: the reader closing the pipe is not an error, and must not
 * print a Node stack trace. A command that listens for it itself (audit export saves its cursor)
 * handles it; `run` and `serve` speak over stdout or keep state to flush, so they are left alone.
 */
function quietOnClosedStdout(argv: string[]): void {
  const command = argv.slice(2).find((a) => !a.startsWith('-'));
  if (command === 'run' || command === 'serve') return;
  const onError = (err: NodeJS.ErrnoException): void => {
    if (process.stdout.listenerCount('error') > 1) return;
    if (err.code === 'EPIPE') process.exit(Number(process.exitCode ?? 0));
    process.stderr.write(`toolgate: cannot write to stdout: ${err.message}\n`);
    process.exit(2);
  };
  process.stdout.on('error', onError);
}

/** Parses and runs one command. Returns the exit code: 0 ok, 1 the checked thing failed, 2 usage or environment error. */
export async function main(argv: string[]): Promise<number> {
  maskOwnCommandLine(argv);
  quietOnClosedStdout(argv);
  collectDeadJournals();
  const program = buildProgram();
  // With --json (before any `--`), an error is one JSON line too: {"error": "...", "code": N}.
  const end = argv.indexOf('--');
  const json = argv.slice(2, end < 0 ? undefined : end).includes('--json');
  const fail = (message: string, code: number): number => {
    process.stderr.write(json ? jsonText(JSON.stringify({ error: message, code })) + '\n' : `toolgate: ${terminalText(message)}\n`);
    return code;
  };
  if (json) {
    const quiet = (cmd: Command): void => {
      cmd.configureOutput({ outputError: () => {}, writeErr: () => {} });
      cmd.commands.forEach(quiet);
    };
    quiet(program);
  }
  try {
    await program.parseAsync(argv);
    return Number(process.exitCode ?? 0);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return json ? fail(err.message.replace(/^error: /, ''), 2) : 2;
    }
    if (err instanceof CliError) return fail(err.message, err.code);
    if (err instanceof DatabaseFileError) return fail(err.message, 2);
    const lost = stateFailureLine(err);
    if (lost) return fail(lost, 2);
    const fsError = err as NodeJS.ErrnoException;
    if (typeof fsError.path === 'string' && fsError.code) {
      return fail(`cannot use ${fsError.path} (${fsError.code}): check that it is a writable folder, or set TOOLGATE_HOME to one`, 2);
    }
    return fail(`unexpected error: ${(err as Error).message}`, 2);
  }
}
