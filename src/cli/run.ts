import type { Command } from 'commander';
import { durationMs } from '../engine/index.js';
import { createLogger } from '../log.js';
import { passthroughProblem } from '../proxy/methods.js';
import { runProxy, RunError, type UpstreamSpec } from '../proxy/run.js';
import { MODERN_VERSION, type UpstreamProtocol } from '../proxy/upstream-modern-wire.js';
import { StateError } from '../state/index.js';
import { auditFile, CliError, stateDsn } from './common.js';
import { parseHeaders, parseUrl } from './source.js';

interface RunFlags {
  policy?: string;
  grant: string;
  state?: string;
  audit?: string;
  auditArgs?: boolean;
  shadow?: boolean;
  failOpen?: boolean;
  upstream?: string;
  header: string[];
  name?: string;
  json?: boolean;
  callTimeout: string;
  passthroughMethod: string[];
  protocol: string;
}

const PROTOCOLS = ['auto', 'legacy', MODERN_VERSION] as const;

function positiveDuration(text: string, flag: string): number {
  let ms = NaN;
  try { ms = durationMs(text); } catch { /* reported below */ }
  if (!(ms > 0)) throw new CliError(`${flag} takes a positive duration such as 500ms, 30s, 5m or 1h (got "${text}")`);
  return ms;
}

function collect(text: string, all: string[]): string[] {
  return [...all, text];
}

export function registerRun(program: Command): void {
  program
    .command('run')
    .description('wrap one MCP server: stdio client ↔ toolgate ↔ stdio child (after --) or HTTP server (--upstream)')
    .option('-p, --policy <file>', "policy file (JSON or YAML); without it, toolgate's recommended policy for the server's tools")
    .option('--grant <label>', 'grant label the calls count against', 'local')
    .option('--state <dsn>', 'counter state: sqlite:PATH or memory: (default: sqlite under TOOLGATE_HOME)')
    .option('--audit <file>', 'audit log SQLite file (default: TOOLGATE_HOME/audit.db)')
    .option('--audit-args', 'store argument values (secrets masked) in the audit log')
    .option('--shadow', 'decide and log, but forward every call')
    .option('--fail-open', 'allow limited calls when the state store fails (default: deny them)')
    .option('--upstream <url>', 'a Streamable HTTP (or SSE) MCP server instead of a command')
    .option('--header <header>', "header for the upstream, 'Name: value' (repeatable)", collect, [])
    .option('--name <server>', 'server name used in counters, conditions and the audit log')
    .option('--json', "JSON only: the server's own stderr lines become log entries too (logs are JSON lines on stderr)")
    .option('--passthrough-method <method>', 'forward this method too, besides those the MCP specification defines (repeatable; never a look-alike of tools/call or tools/list)', collect, [])
    .option('--call-timeout <duration>', 'how long a tools/call may wait for its answer before it is cancelled (progress restarts the wait), e.g. 30s, 5m', '5m')
    .option('--protocol <era>', `the MCP era to speak to the server: auto (try ${MODERN_VERSION}, fall back to the 2025 revisions), legacy, or ${MODERN_VERSION}`, 'auto')
    .argument('[command...]', 'the MCP server command and its arguments, after --')
    .passThroughOptions()
    .action(async (command: string[], flags: RunFlags) => {
      let upstream: UpstreamSpec;
      if (flags.upstream) {
        if (command.length > 0) throw new CliError('give either --upstream URL or -- COMMAND, not both');
        upstream = { url: parseUrl(flags.upstream), headers: parseHeaders(flags.header) };
      } else {
        if (command.length === 0) throw new CliError('nothing to run: give the server command after --, e.g. toolgate run -p policy.json -- npx -y @modelcontextprotocol/server-everything');
        upstream = { command: command[0], args: command.slice(1) };
      }
      if (!(PROTOCOLS as readonly string[]).includes(flags.protocol)) throw new CliError(`--protocol takes ${PROTOCOLS.join(', ')} (got "${flags.protocol}")`);
      const callTimeoutMs = positiveDuration(flags.callTimeout, '--call-timeout');
      for (const method of flags.passthroughMethod) {
        const problem = passthroughProblem(method);
        if (problem) throw new CliError(`--passthrough-method ${problem}`);
      }
      try {
        const code = await runProxy({
          policyFile: flags.policy,
          upstream,
          grant: flags.grant,
          stateDsn: stateDsn(flags),
          auditFile: auditFile(flags),
          auditArgs: flags.auditArgs,
          shadow: flags.shadow,
          failOpen: flags.failOpen,
          serverName: flags.name,
          logStderr: flags.json,
          callTimeoutMs,
          passthroughMethods: flags.passthroughMethod,
          protocol: flags.protocol as UpstreamProtocol,
          log: createLogger(),
        });
        await new Promise<void>((r) => process.stdout.write('', () => r()));
        process.exit(code);
      } catch (err) {
        if (err instanceof RunError || err instanceof StateError) throw new CliError(err.message);
        throw err;
      }
    });
}
