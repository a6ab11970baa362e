import { Command, CommanderError } from 'commander';
import { registerAudit } from './audit.js';
import { DatabaseFileError } from '../state/index.js';
import { CliError } from './common.js';
import { registerKillSwitch } from './kill-switch.js';
import { registerPolicy } from './policy.js';
import { registerGrants } from './grants.js';
import { registerRisk } from './risk.js';
import { registerRun } from './run.js';
import { registerServe } from './serve.js';
import { registerStatus } from './status.js';

export function buildProgram(): Command {
  const program = new Command('toolgate')
    .description('A policy gateway for MCP: every tools/call is checked against a policy before it reaches the server.')
    .version('0.1.0')
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
  registerStatus(program);
  const override = (cmd: Command): void => { cmd.exitOverride(); cmd.commands.forEach(override); };
  program.commands.forEach(override);
  return program;
}

/** Parses and runs one command. Returns the exit code: 0 ok, 1 the checked thing failed, 2 usage or environment error. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return Number(process.exitCode ?? 0);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return 2;
    }
    if (err instanceof CliError) {
      process.stderr.write(`toolgate: ${err.message}\n`);
      return err.code;
    }
    if (err instanceof DatabaseFileError) {
      process.stderr.write(`toolgate: ${err.message}\n`);
      return 2;
    }
    const fsError = err as NodeJS.ErrnoException;
    if (typeof fsError.path === 'string' && fsError.code) {
      process.stderr.write(`toolgate: cannot use ${fsError.path} (${fsError.code}): check that it is a writable folder, or set TOOLGATE_HOME to one\n`);
      return 2;
    }
    process.stderr.write(`toolgate: unexpected error: ${(err as Error).message}\n`);
    return 2;
  }
}
