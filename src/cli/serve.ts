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
import { auditFile, CliError, openStateOrFail, stateDsn } from './common.js';

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

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('the gateway: many servers at http://HOST:PORT/mcp/<server>, grants, metrics; with no config, a demo on embedded defaults')
    .option('-c, --config <file>', 'toolgate.yaml (or JSON)')
    .option('--listen <host:port>', 'listen address (default 127.0.0.1:8080, or the config\'s)')
    .option('--json', 'accepted for uniformity; logs are JSON lines on stderr')
    .action(async (flags: { config?: string; listen?: string }) => {
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
      const state = openStateOrFail(config.state ?? stateDsn({}));
      const audit = new AuditLog(config.audit ?? auditFile({}), { background: true, onError: (message) => log.error(message) });
      const gateway = new Gateway({ config, state, audit, log, stateFlag: flags.config ? `-c ${flags.config}` : undefined });
      let address;
      try { address = await gateway.start(); } catch (err) { throw new CliError((err as Error).message); }
      const base = `http://${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`;
      log.info({ listen: base, servers: Object.keys(config.servers) }, 'toolgate serve: listening');
      if (!flags.config) {
        const grants = new Grants(state.grants);
        const { token } = await grants.create({ server: 'everything', label: 'demo' });
        process.stdout.write([
          `toolgate demo gateway on ${base}: ${Object.keys(config.servers).map((s) => `${base}/mcp/${s}`).join(', ')}`,
          `each server runs under its recommended policy. A grant for "everything" (shown once):`,
          `  ${token}`,
          'connect with this .mcp.json:',
          JSON.stringify({ mcpServers: { everything: { type: 'http', url: `${base}/mcp/everything`, headers: { Authorization: `Bearer ${token}` } } } }, null, 2),
          'more grants: toolgate grants create --server filesystem --label me',
          `dashboard: ${base}/ui — sign in with this run's admin token (shown once): ${config.admin!.token}`,
          '',
        ].join('\n'));
      }
      const stopWatching = flags.config ? watchPolicyFile(flags.config, () => {
        const next = loadGatewayConfig(flags.config!);
        if (!next.ok) { log.error(`configuration reload rejected, keeping the previous one: ${formatIssue(flags.config!, next.issues[0])}`); return; }
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
      await gateway.stop();
      audit.close();
      await state.close();
      process.exit(0);
    });
}
