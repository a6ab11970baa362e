import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Command } from 'commander';
import { AuditLog } from '../audit/index.js';
import { loadGatewayConfig, GatewayConfigSchema, type GatewayConfig } from '../gateway/config.js';
import { Grants } from '../gateway/grants.js';
import { Gateway } from '../gateway/server.js';
import { createLogger } from '../log.js';
import { formatIssue, watchPolicyFile } from '../policy/index.js';
import { toolgateHome } from '../state/index.js';
import { auditFile, CliError, openStateOrFail, printJson, stateDsn } from './common.js';

const DEMO = ['@modelcontextprotocol/server-everything', '@modelcontextprotocol/server-filesystem', '@modelcontextprotocol/server-memory'];

/** A demo server as node + its installed bin when the package is installed, else through npx. */
function demoServer(pkg: string, args: string[]): { command: string; args: string[] } {
  try {
    const require = createRequire(import.meta.url);
    const meta = require(`${pkg}/package.json`) as { bin?: string | Record<string, string> };
    const bin = typeof meta.bin === 'string' ? meta.bin : Object.values(meta.bin ?? {})[0];
    return { command: process.execPath, args: [join(require.resolve(`${pkg}/package.json`), '..', bin!), ...args] };
  } catch {
    return { command: 'npx', args: ['-y', pkg, ...args] };
  }
}

/** The embedded defaults: three npm reference servers, each under its recommended policy. */
export function demoConfig(listen?: string): GatewayConfig {
  const home = toolgateHome();
  const sandbox = join(home, 'sandbox');
  mkdirSync(sandbox, { recursive: true });
  const [everything, filesystem, memory] = DEMO;
  return GatewayConfigSchema.parse({
    listen: listen ?? '127.0.0.1:8080',
    // A fresh admin token per demo run, printed once, so the dashboard at /ui can be signed in to.
    admin: { token: randomBytes(24).toString('base64url') },
    servers: {
      everything: { ...demoServer(everything, []) },
      filesystem: { ...demoServer(filesystem, [sandbox]) },
      memory: { ...demoServer(memory, []), env: { MEMORY_FILE_PATH: join(home, 'memory.jsonl') } },
    },
  });
}

/** Where each server is, in both URL forms of each transport. */
function serverUrls(base: string, name: string): { mcp: string[]; sse: string[] } {
  const n = encodeURIComponent(name);
  return { mcp: [`${base}/${n}/mcp`, `${base}/mcp/${n}`], sse: [`${base}/${n}/sse`, `${base}/sse/${n}`] };
}

interface Started {
  base: string;
  config: GatewayConfig;
  configFile?: string;
  /** The demo's grant for "everything", shown once. */
  demoToken?: string;
}

function mcpJson(name: string, url: string, token?: string): string {
  return JSON.stringify({ mcpServers: { [name]: { type: 'http', url, ...(token ? { headers: { Authorization: `Bearer ${token}` } } : {}) } } }, null, 2);
}

/** What a person needs after start: where each server is, how to get a grant, how to connect. */
function startText({ base, config, configFile, demoToken }: Started): string {
  const names = Object.keys(config.servers);
  const out = [configFile ? `toolgate gateway on ${base} (${configFile}):` : `toolgate demo gateway on ${base}, each server under its recommended policy:`];
  for (const name of names) {
    const u = serverUrls(base, name);
    const path = (url: string) => url.slice(base.length);
    out.push(`  ${name}: ${u.mcp[0]}${config.servers[name].auth === 'none' ? '  (no grant needed)' : ''}`);
    out.push(`    also ${path(u.mcp[1])}; legacy SSE at ${path(u.sse[0])} or ${path(u.sse[1])}`);
  }
  if (names.length === 0) out.push('  no servers configured: add them under servers: in the configuration');
  const first = names.find((n) => config.servers[n].auth !== 'none') ?? names[0];
  const c = configFile ? ` -c ${configFile}` : '';
  if (demoToken) out.push(`A grant for "everything" (shown once):`, `  ${demoToken}`);
  else if (first && config.servers[first].auth !== 'none') out.push('Create a grant (its token is shown once):', `  toolgate grants create${c} --server ${first} --label me`);
  if (first) {
    out.push('Connect a client with this .mcp.json:', mcpJson(first, serverUrls(base, first).mcp[0], demoToken ?? (config.servers[first].auth === 'none' ? undefined : '<token>')));
  }
  if (demoToken) out.push(`more grants: toolgate grants create${c} --server filesystem --label me`);
  if (config.admin) out.push(`Dashboard: ${base}/ui/${configFile ? ' (sign in with the admin token)' : ` — sign in with this run's admin token (shown once): ${config.admin.token}`}`);
  return out.join('\n') + '\n';
}

function startJson({ base, config, configFile, demoToken }: Started): unknown {
  return {
    listen: base,
    config: configFile ?? null,
    servers: Object.entries(config.servers).map(([name, s]) => ({ name, auth: s.auth, ...serverUrls(base, name) })),
    ...(demoToken ? { grant: { server: 'everything', label: 'demo', token: demoToken } } : {}),
    ...(config.admin ? { dashboard: `${base}/ui/`, ...(configFile ? {} : { adminToken: config.admin.token }) } : {}),
  };
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('the gateway: many servers at http://HOST:PORT/<server>/mcp, grants, metrics; with no config, a demo on embedded defaults')
    .option('-c, --config <file>', 'toolgate.yaml (or JSON)')
    .option('--listen <host:port>', 'listen address (default 127.0.0.1:8080, or the config\'s)')
    .option('--fail-open', 'every server without its own fail_open forwards limited calls uncounted when the state store fails (default: deny them)')
    .option('--json', 'print where the servers are as one JSON object (logs are JSON lines on stderr)')
    .action(async (flags: { config?: string; listen?: string; json?: boolean; failOpen?: boolean }) => {
      const log = createLogger();
      let config: GatewayConfig;
      if (flags.config) {
        const loaded = loadGatewayConfig(flags.config);
        if (!loaded.ok) {
          for (const issue of loaded.issues.slice(1)) process.stderr.write(`${formatIssue(flags.config, issue)}\n`);
          throw new CliError(`invalid configuration ${formatIssue(flags.config, loaded.issues[0])}`);
        }
        config = loaded.value;
        if (flags.listen) config.listen = flags.listen;
      } else config = demoConfig(flags.listen);
      if (flags.failOpen) config.fail_open = true;
      const state = openStateOrFail(config.state ?? stateDsn({}));
      const fleet = state.fleet;
      const audit = new AuditLog(config.audit ?? auditFile({}), { background: true, onError: (message) => log.error(message), onEvent: fleet && ((e) => fleet.publish(e)) });
      const gateway = new Gateway({ config, state, audit, log, stateFlag: flags.config ? `-c ${flags.config}` : undefined });
      let address;
      try { address = await gateway.start(); } catch (err) { throw new CliError((err as Error).message); }
      const base = `http://${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`;
      audit.append({ kind: 'start', message: `serve ${base}${flags.config ? ` (${flags.config})` : ' (demo)'}` });
      log.info({ listen: base, servers: Object.keys(config.servers) }, 'toolgate serve: listening');
      const startedAt = new Date().toISOString();
      const announce = () => fleet?.announce({ instance: audit.instance, listen: base, servers: Object.keys(gateway.servers), sessions: gateway.sessionCount, startedAt })
        .catch((err: Error) => log.debug({ err: err.message }, 'fleet announcement failed'));
      void announce();
      const heartbeat = setInterval(announce, 5000);
      heartbeat.unref();
      const started: Started = { base, config, configFile: flags.config };
      if (!flags.config) started.demoToken = (await new Grants(state.grants).create({ server: 'everything', label: 'demo' })).token;
      if (flags.json) printJson(startJson(started));
      else process.stdout.write(startText(started));
      const stopWatching = flags.config ? watchPolicyFile(flags.config, () => {
        const next = loadGatewayConfig(flags.config!);
        if (!next.ok) { log.error(`configuration reload rejected, keeping the previous one: ${formatIssue(flags.config!, next.issues[0])}`); return; }
        if (flags.failOpen) next.value.fail_open = true;
        try {
          gateway.setConfig(next.value);
        } catch (err) {
          log.error(`configuration reload rejected, keeping the previous one: ${(err as Error).message}`);
          return;
        }
        log.info({ servers: Object.keys(next.value.servers) }, 'configuration reloaded');
      }) : () => {};
      await new Promise<void>((resolve) => {
        const stop = () => resolve();
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
      stopWatching();
      clearInterval(heartbeat);
      await gateway.stop();
      audit.append({ kind: 'stop', message: 'serve' });
      audit.close();
      await state.close();
      process.exit(0);
    });
}
