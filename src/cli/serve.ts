import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Command } from 'commander';
import { AuditLog } from '../audit/index.js';
import { scheduleRetention } from '../audit/retention-schedule.js';
import { durationToMs, loadGatewayConfig, GatewayConfigSchema, type GatewayConfig } from '../config/gateway.js';
import { Grants } from '../grants/grants.js';
import { Gateway } from '../gateway/server.js';
import { createLogger } from '../log.js';
import { formatIssue, watchPolicyFile } from '../policy/index.js';
import { toolgateHome } from '../state/index.js';
import { startTelemetry } from '../telemetry/index.js';
import { auditFile, CliError, openStateOrFail, printJson, stateDsn, say } from './common.js';

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
  /** State is memory: — no command in another terminal reaches it, so grants come from the admin API. */
  memoryState?: boolean;
}

function mcpJson(name: string, url: string, token?: string): string {
  return JSON.stringify({ mcpServers: { [name]: { type: 'http', url, ...(token ? { headers: { Authorization: `Bearer ${token}` } } : {}) } } }, null, 2);
}

/** What a person needs after start: where each server is, how to get a grant, how to connect. */
function startText({ base, config, configFile, demoToken, memoryState }: Started): string {
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
  const create = (server: string) => (memoryState
    ? `POST ${base}/api/grants {"server":"${server}","label":"me"} with the admin token, or the dashboard (state is memory:, so toolgate grants cannot reach it)`
    : `toolgate grants create${c} --server ${server} --label me`);
  if (demoToken) out.push(`A grant for "everything" (shown once):`, `  ${demoToken}`);
  else if (first && config.servers[first].auth !== 'none') out.push('Create a grant (its token is shown once):', `  ${create(first)}`);
  if (first) {
    out.push('Connect a client with this .mcp.json:', mcpJson(first, serverUrls(base, first).mcp[0], demoToken ?? (config.servers[first].auth === 'none' ? undefined : '<token>')));
  }
  if (demoToken) out.push(`more grants: ${create('filesystem')}`);
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
      const dsn = config.state ?? stateDsn({});
      const state = await openStateOrFail(dsn, { memoryOk: true });
      try {
        await state.begin?.((level, message) => log[level](message));
      } catch (err) {
        await state.close();
        throw new CliError((err as Error).message);
      }
      const fleet = state.fleet;
      // Off unless the telemetry section or OTEL_*_EXPORTER=otlp turns it on; then /metrics' registry is exported too.
      const made: { gateway?: Gateway } = {};
      const telemetry = await startTelemetry(config.telemetry, { prometheus: () => made.gateway?.metrics.registry, warn: (m) => log.warn(m) });
      const onEvent = telemetry?.logs
        ? (e: Record<string, unknown>) => { fleet?.publish(e); telemetry.auditEvent(e); }
        : fleet && ((e: Record<string, unknown>) => fleet.publish(e));
      const audit = new AuditLog(config.audit?.path ?? auditFile({}), { background: true, onError: (message) => log.error(message), onEvent });
      const gateway = new Gateway({ config, state, audit, log, stateFlag: flags.config ? `-c ${flags.config}` : undefined, stateDsn: dsn, telemetry });
      made.gateway = gateway;
      let address;
      try { address = await gateway.start(); } catch (err) {
        // Refused at start: what was opened is closed, so the process ends with the message.
        await gateway.stop().catch(() => {});
        audit.close();
        await telemetry?.shutdown();
        await state.close().catch(() => {});
        if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
          throw new CliError(`${config.listen} is already in use: stop what listens there, or choose another address with --listen HOST:PORT${flags.config ? ' (or listen: in the configuration)' : ''}`);
        }
        throw new CliError((err as Error).message);
      }
      const base = `http://${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`;
      audit.append({ kind: 'start', message: `serve ${base}${flags.config ? ` (${flags.config})` : ' (demo)'}` });
      const retention = config.audit?.retain ? scheduleRetention(audit.file, { ms: durationToMs(config.audit.retain), text: config.audit.retain }, durationToMs(config.audit.prune_every), audit.instance, (m) => {
        if (m.error) log.error(`audit prune failed: ${m.error}`);
        else if (m.result && (m.result.removed > 0 || m.result.heldBy)) log.info({ removed: m.result.removed, checkpoint: m.result.checkpoint?.id, heldBy: m.result.heldBy?.name }, 'audit pruned');
      }) : undefined;
      log.info({ listen: base, servers: Object.keys(config.servers) }, 'toolgate serve: listening');
      const startedAt = new Date().toISOString();
      const announce = () => fleet?.announce({ instance: audit.instance, listen: base, servers: Object.keys(gateway.servers), sessions: gateway.sessionCount, startedAt })
        .catch((err: Error) => log.debug({ err: err.message }, 'fleet announcement failed'));
      void announce();
      const heartbeat = setInterval(announce, 5000);
      heartbeat.unref();
      const started: Started = { base, config, configFile: flags.config, memoryState: state.kind === 'memory' };
      if (!flags.config) started.demoToken = (await new Grants(state.grants).create({ server: 'everything', label: 'demo' })).token;
      if (flags.json) printJson(startJson(started));
      else say(startText(started));
      const stopWatching = flags.config ? watchPolicyFile(flags.config, () => {
        const next = loadGatewayConfig(flags.config!);
        if (!next.ok) { log.error(`configuration reload rejected, keeping the previous one: ${formatIssue(flags.config!, next.issues[0])}`); return; }
        if (flags.failOpen) next.value.fail_open = true;
        let kept: { server: string; sessions: number }[];
        try {
          kept = gateway.setConfig(next.value);
        } catch (err) {
          log.error(`configuration reload rejected, keeping the previous one: ${(err as Error).message}`);
          return;
        }
        log.info({ servers: Object.keys(next.value.servers) }, 'configuration reloaded');
        for (const k of kept) {
          log.warn({ server: k.server, sessions: k.sessions },
            `configuration reloaded: server "${k.server}" changed, but its ${k.sessions} open session(s) (a 2026-07-28 grant's internal session included) keep the upstream and pool they started with until they close (after sessions.idle_timeout, ${next.value.sessions.idle_timeout}, without requests); new sessions get the new settings — restart the gateway to apply them to every session now`);
        }
      }) : () => {};
      let stopping = false;
      void gateway.ready.then(() => { if (!stopping) log.info({ listen: base }, 'toolgate serve: ready'); });
      const signal = await new Promise<NodeJS.Signals>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      stopping = true;
      // A second signal does not wait: the process ends at once (rows of forwarded calls are in the audit journal already).
      const now = (again: NodeJS.Signals) => {
        log.warn(`${again} during the stop: exiting at once, calls still in flight are cut off`);
        process.exit(again === 'SIGINT' ? 130 : 143);
      };
      process.once('SIGINT', now);
      process.once('SIGTERM', now);
      log.info({ signal, grace: gateway.shutdownGrace }, 'toolgate serve: stopping (not ready; a second signal exits at once)');
      stopWatching();
      clearInterval(heartbeat);
      await gateway.drain();
      await retention?.stop();
      audit.append({ kind: 'stop', message: 'serve' });
      audit.close();
      // What is buffered is exported before the process ends.
      await telemetry?.shutdown();
      await state.close();
      log.info('toolgate serve: stopped');
      process.exit(0);
    });
}
