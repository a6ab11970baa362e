import type { Command } from 'commander';
import { Catalog } from '../risk/catalog.js';
import type { Source } from '../risk/source.js';
import { join } from 'node:path';
import { toolgateHome } from '../state/index.js';
import { clientEnv, configSecrets, OwnSecrets, secretLeak, serveEnv } from '../upstream-env/index.js';
import { CliError, stateConfig, stateDsn, type StateFlags } from './common.js';

export interface SourceFlags extends StateFlags {
  upstream?: string;
  header: string[];
  server?: string;
}

export function catalog(): Catalog {
  return new Catalog(join(toolgateHome(), 'catalog'));
}

/** Adds the three ways to name a server: `-- CMD ARGS…`, `--upstream URL [--header]`, `--server NAME`. */
export function sourceOptions(cmd: Command): Command {
  return cmd
    .option('--upstream <url>', 'a Streamable HTTP (or SSE) MCP server')
    .option('--header <header>', "header for the upstream, 'Name: value' (repeatable)", (v: string, all: string[]) => [...all, v], [])
    .option('--server <name>', 'a server of the gateway configuration (-c), else one already in the catalog (toolgate records), fetched again from where it came from')
    .argument('[command...]', 'the server command and its arguments, after --')
    .passThroughOptions();
}

export function parseHeaders(list: string[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const h of list) {
    const i = h.indexOf(':');
    if (i <= 0) throw new CliError("--header must look like 'Name: value'");
    headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
  }
  return headers;
}

export function parseUrl(text: string): string {
  let url: URL;
  try { url = new URL(text); } catch { throw new CliError(`not a URL: ${text}`); }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError('the upstream must be an http:// or https:// URL');
  return url.toString();
}

/** A server of the gateway configuration -c names, started or reached as the gateway would. */
function configuredSource(name: string, flags: SourceFlags): Source {
  const config = stateConfig(flags)!;
  if (!Object.hasOwn(config.value.servers, name)) {
    throw new CliError(`no server named "${name}" in ${flags.config} (servers: ${Object.keys(config.value.servers).join(', ') || 'none'})`);
  }
  const missing = (config.unresolved ?? []).find((u) => u.pointer.startsWith(`/servers/${name.replace(/~/g, '~0').replace(/\//g, '~1')}/`));
  if (missing) throw new CliError(`server "${name}" in ${flags.config} needs ${missing.pointer}: ${missing.message}`);
  const s = config.value.servers[name];
  // As serve would start it: refused where serve would refuse it, with the environment serve gives it.
  const secrets = configSecrets({ ...config.value, admin: { token: config.skippedAdminToken } }, stateDsn(flags));
  const leak = secretLeak(name, s, secrets);
  if (leak) throw new CliError(`${leak} (${flags.config})`);
  if ('url' in s) return { kind: 'url', url: s.url, headers: { ...s.headers, ...parseHeaders(flags.header) } };
  return { kind: 'command', command: s.command, args: s.args, env: serveEnv(s), cwd: s.cwd };
}

/** A server a person names on the command line runs with their environment, as under toolgate run: without toolgate's own secrets. */
function personsEnv(flags: SourceFlags): Record<string, string> {
  return clientEnv(new OwnSecrets().addOwnVars(process.env).addDsn('--state', flags.state));
}

export function resolveSource(command: string[], flags: SourceFlags, what = 'a server'): Source {
  const given = [command.length > 0, !!flags.upstream, !!flags.server].filter(Boolean).length;
  if (given === 0) throw new CliError(`name ${what}: -- COMMAND ARGS…, --upstream URL or --server NAME`);
  if (given > 1) throw new CliError('give only one of -- COMMAND, --upstream URL and --server NAME');
  if (flags.upstream) return { kind: 'url', url: parseUrl(flags.upstream), headers: parseHeaders(flags.header) };
  if (flags.server && flags.config) return configuredSource(flags.server, flags);
  if (flags.server) {
    const record = catalog().find(flags.server);
    if (!record) throw new CliError(`no server named "${flags.server}" in the catalog: record it first with toolgate record -- COMMAND or --upstream URL`);
    const o = record.identity.origin;
    if (o.masked) {
      throw new CliError(`the catalog's record of "${flags.server}" has its credentials masked, so it cannot be started from there: name it with -- COMMAND, --upstream URL, or --server NAME -c toolgate.yaml`);
    }
    if (o.kind === 'url') return { kind: 'url', url: o.url!, headers: parseHeaders(flags.header) };
    const [cmd, ...args] = o.commandLine!.split(' ');
    return { kind: 'command', command: cmd, args, env: personsEnv(flags) };
  }
  return { kind: 'command', command: command[0], args: command.slice(1), env: personsEnv(flags) };
}
