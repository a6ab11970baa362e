// Fetches real tool definitions for the seventh blind set (issue 24): MCP servers from npm that are in none
// of test/corpus (see test/corpus/harvest.ts), test/blind, blind2 … blind6 (their harvest.ts, servers/ and
// READMEs, including the packages they tried or dropped), plus (part two) five packages that an earlier set
// names only as tried and left out, whose tools no set ever listed (and three more in part three). Modelled on test/blind6/harvest.ts. The
// definitions are kept exactly as listed, every page of tools/list.
// Usage: node --import tsx test/blind7/harvest.ts PKGS_DIR [slug...]
// PKGS_DIR holds one install prefix per target, PKGS_DIR/<slug>, made with
//   npm install --prefix PKGS_DIR/<slug> --ignore-scripts --legacy-peer-deps PKG
// (see README.md); each server is started over stdio with placeholder credentials and dead endpoints and
// asked for every page of tools/list; the answer goes to servers/<slug>.json.
// The harvest was run with no network at all, in a fresh network namespace with only loopback up:
//   unshare -n sh -c 'ip link set lo up && exec node --import tsx test/blind7/harvest.ts PKGS_DIR'
// so a server that phones home (telemetry, licence checks) reaches nothing.
import { mkdirSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { harvestToFile, type HarvestTarget } from '../helpers/list-tools.js';

const FAKE = 'placeholder-not-a-real-credential';
const SCRATCH = join(tmpdir(), 'blind7-harvest-scratch');
const DEAD = 'http://127.0.0.1:1'; // nothing listens there: a server that calls out at start fails fast
const MYSQL_STUB_PORT = 47100;
const N8N_STUB_PORT = 47102;

// A stand-in MySQL server on loopback, for servers that open a connection before they list tools: it sends
// a protocol-10 handshake (mysql_native_password), accepts any login with an OK packet and answers every
// later command with OK (COM_QUIT closes). It holds no data and runs no SQL.
function mysqlStub(port: number): Promise<() => void> {
  const packet = (seq: number, payload: Buffer): Buffer => {
    const h = Buffer.alloc(4);
    h.writeUIntLE(payload.length, 0, 3);
    h[3] = seq;
    return Buffer.concat([h, payload]);
  };
  const ok = Buffer.from([0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00]); // 0 rows, id 0, autocommit, 0 warnings
  const caps = 0x000ba20f; // LONG_PASSWORD … CONNECT_WITH_DB, PROTOCOL_41, TRANSACTIONS, SECURE_CONNECTION, MULTI_*, PLUGIN_AUTH
  const handshake = (): Buffer => {
    const b = Buffer.alloc(2 + 4 + 2 + 1 + 2 + 1 + 10);
    b.writeUInt16LE(caps & 0xffff, 0);
    b[2] = 0xff; // utf8mb4
    b.writeUInt16LE(0x0002, 3);
    b.writeUInt16LE(caps >>> 16, 5);
    b[7] = 21;
    return Buffer.concat([
      Buffer.from([0x0a]), Buffer.from('8.0.0-blind7-stub\0'), Buffer.from([1, 0, 0, 0]),
      Buffer.from('abcdefgh'), Buffer.from([0]), b.subarray(0, 8), Buffer.alloc(10),
      Buffer.from('ijklmnopqrst\0'), Buffer.from('mysql_native_password\0'),
    ]);
  };
  const server = createServer((sock: Socket) => {
    let buf = Buffer.alloc(0);
    let authed = false;
    sock.write(packet(0, handshake()));
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 4) {
        const len = buf.readUIntLE(0, 3);
        if (buf.length < 4 + len) break;
        const seq = buf[3];
        const cmd = buf[4];
        buf = buf.subarray(4 + len);
        if (authed && cmd === 0x01) { sock.end(); return; }
        authed = true;
        sock.write(packet(seq + 1, ok));
      }
    });
    sock.on('error', () => {});
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(() => server.close())));
}
// A stand-in for the n8n REST API on loopback, for a server that checks its API before it lists tools: it answers
// GET /api/v1/workflows with an empty list (200) and everything else with 404. No workflows, nothing runs.
function n8nStub(port: number): Promise<() => void> {
  const server = createHttpServer((req, res) => {
    const empty = req.method === 'GET' && (req.url ?? '').split('?')[0] === '/api/v1/workflows';
    res.writeHead(empty ? 200 : 404, { 'content-type': 'application/json' });
    res.end(empty ? '{"data":[]}' : '{"message":"not found"}');
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(() => server.close())));
}
export const TARGETS: HarvestTarget[] = [
  { slug: 'mssql-mcp', pkg: 'mssql-mcp', env: { DB_SERVER: '127.0.0.1', DB_PORT: '1', DB_USER: 'placeholder', DB_PASSWORD: FAKE, DB_DATABASE: 'placeholder' } },
  { slug: 'codacy', pkg: '@codacy/codacy-mcp', env: { CODACY_ACCOUNT_TOKEN: FAKE } },
  // the allowed paths are the server's arguments; the scratch dir is the only one.
  { slug: 'mcp-cli', pkg: 'mcp-cli', args: [SCRATCH] },
  { slug: 'jira-cloud-mcp', pkg: 'mcp-jira-cloud', env: { JIRA_BASE_URL: DEAD, JIRA_EMAIL: 'placeholder@example.invalid', JIRA_API_TOKEN: FAKE } },
  { slug: 'coderabbit', pkg: 'coderabbitai-mcp', env: { GITHUB_PAT: FAKE } },
  { slug: 'omnifocus', pkg: 'omnifocus-mcp' },
  { slug: 'youtube-data', pkg: 'youtube-data-mcp-server', env: { YOUTUBE_API_KEY: FAKE } },
  { slug: 'pabal-store', pkg: 'pabal-store-api-mcp' },
  { slug: 'motion', pkg: 'motionmcp', env: { MOTION_API_KEY: FAKE } },
  // every base tool group (the default); health checks of the dead orchestrator skipped at start.
  { slug: 'agent-orchestrator-server', pkg: 'agent-orchestrator-mcp-server', env: { AGENT_ORCHESTRATOR_BASE_URL: DEAD, AGENT_ORCHESTRATOR_API_KEY: FAKE, SKIP_HEALTH_CHECKS: 'true' } },
  { slug: 'gdrive-isaacphi', pkg: '@isaacphi/mcp-gdrive', env: { CLIENT_ID: 'placeholder.apps.googleusercontent.com', CLIENT_SECRET: FAKE, GDRIVE_CREDS_DIR: SCRATCH } },
  // the package's CLI; its `mcp` command is the MCP server (Apps Script run on Node).
  { slug: 'gas-fakes', pkg: '@mcpher/gas-fakes', args: ['mcp'] },
  { slug: 'optimizely', pkg: '@simonecoelhosfo/optimizely-mcp-server', env: { MCP_MODE: 'true', OPTIMIZELY_API_TOKEN: FAKE, OPTIMIZELY_PROJECT_IDS: '0' } },
  { slug: 'minimax', pkg: 'minimax-mcp-js', env: { MINIMAX_API_KEY: FAKE, MINIMAX_API_HOST: DEAD, MINIMAX_MCP_BASE_PATH: SCRATCH } },
  { slug: 'transloadit', pkg: '@transloadit/mcp-server', args: ['stdio'], env: { TRANSLOADIT_KEY: FAKE, TRANSLOADIT_SECRET: FAKE } },
  { slug: 'linear-server', pkg: 'mcp-server-linear', env: { LINEAR_ACCESS_TOKEN: FAKE } },
  { slug: 'mem0', pkg: '@mem0/mcp-server', env: { MEM0_API_KEY: FAKE } },
  { slug: 'mapbox-devkit', pkg: '@mapbox/mcp-devkit-server', env: { MAPBOX_ACCESS_TOKEN: `pk.${FAKE}` } },
  { slug: 'search-console', pkg: 'search-console-mcp', env: { GOOGLE_APPLICATION_CREDENTIALS: `${SCRATCH}/missing-credentials.json`, BING_API_KEY: FAKE } },
  { slug: 'didit', pkg: '@didit-protocol/mcp-server', env: { DIDIT_API_KEY: FAKE, DIDIT_API_BASE_URL: DEAD, DIDIT_AUTH_BASE_URL: DEAD } },
  { slug: 'ableton-cookbook', pkg: 'ableton-cookbook-mcp' },
  { slug: 'adobe-commerce', pkg: '@adobe-commerce/commerce-extensibility-tools' },
  { slug: 'linear-mseep', pkg: '@mseep/linear-mcp', bin: 'linear-mcp', env: { LINEAR_API_KEY: FAKE } },
  // the CLI's `mcp` command is its MCP server.
  { slug: 'dex', pkg: '@zeeg/dex', args: ['mcp'] },
  { slug: 'aicoin', pkg: '@aicoin/opendata-mcp', env: { AICOIN_ACCESS_KEY_ID: FAKE, AICOIN_ACCESS_SECRET: FAKE } },
  { slug: 'datadog-i524', pkg: '@i524/datadog-mcp-server', env: { DD_API_KEY: FAKE, DD_APP_KEY: FAKE } },
  { slug: 'sonarqube', pkg: 'sonarqube-mcp-server', env: { SONARQUBE_URL: DEAD, SONARQUBE_TOKEN: FAKE, SONARQUBE_ORGANIZATION: 'placeholder' } },
  { slug: 'notebooklm', pkg: 'notebooklm-mcp' },
  { slug: 'workiq', pkg: '@microsoft/workiq', args: ['mcp'] },
  { slug: 'glean-local', pkg: '@gleanwork/local-mcp-server', env: { GLEAN_INSTANCE: 'placeholder', GLEAN_API_TOKEN: FAKE } },
  // Part two: four packages that test/corpus/harvest.ts names as tried and left out, but whose tools no set
  // ever listed (see README.md). mysql-mcp connects before it lists anything: it is pointed at the loopback
  // MySQL stand-in below (MYSQL_STUB_PORT), which only completes the handshake. Its default filter enables 38 of its 191 tools
  // (the 'starter' group); MYSQL_MCP_TOOL_FILTER=+all enables every tool it has.
  { slug: 'mysql-neverinfamous', pkg: '@neverinfamous/mysql-mcp', env: { MYSQL_HOST: '127.0.0.1', MYSQL_PORT: String(MYSQL_STUB_PORT), MYSQL_USER: 'placeholder', MYSQL_PASSWORD: FAKE, MYSQL_DATABASE: 'placeholder', MYSQL_MCP_TOOL_FILTER: '+all' } },
  // its `serve` command is the MCP server; the project root is taken from the socket path (the scratch dir,
  // where no relay daemon listens).
  { slug: 'agent-relay', pkg: '@agent-relay/mcp', args: ['serve'], env: { RELAY_AGENT_NAME: 'placeholder', RELAY_SOCKET: `${SCRATCH}/.agent-relay/relay.sock`, CLOUD_API_URL: DEAD } },
  // its env schema wants an AC… SID, a 32-character token and an E.164 number; the webhook server binds a
  // port of this harvest's range on loopback; its SQLite store lives in the scratch dir. (better-sqlite3 is
  // installed with --ignore-scripts, so its native binding was copied in from a build for this Node.)
  { slug: 'twilio-mcp', pkg: 'twilio-mcp', env: { TWILIO_ACCOUNT_SID: 'AC00000000000000000000000000000000', TWILIO_AUTH_TOKEN: '0'.repeat(32), TWILIO_PHONE_NUMBER: '+15550000000', WEBHOOK_PORT: '47101', WEBHOOK_BASE_URL: DEAD, DATABASE_PATH: `${SCRATCH}/twilio.db` } },
  // x402 payments: pays for HTTP calls from a USDC wallet it creates under HOME (the scratch dir) on first
  // use; its `server` command is the MCP server. blind/README.md names it as tried and left out (it did not
  // start there); its tools were never listed. --legacy-peer-deps leaves out siwe's peer `ethers`, without
  // which it does not start, so its prefix was made with `npm install … agentcash ethers@5`.
  { slug: 'agentcash', pkg: 'agentcash', args: ['server'] },
  // Part three: servers whose tools mostly run queries or code, deploy, or delete. Each is named by an earlier
  // set only as tried and left out (test/corpus/harvest.ts: exits or connects before listing), and no set ever
  // listed its tools. universal-db-mcp connects first, so it is pointed at the MySQL stand-in (writes enabled,
  // which is what its write tools are for); the n8n server checks its API first, so it gets the n8n stand-in
  // (n8nStub, port 47102); the rest get dead endpoints.
  { slug: 'universal-db', pkg: 'universal-db-mcp', args: ['--type', 'mysql', '--host', '127.0.0.1', '--port', String(MYSQL_STUB_PORT), '--user', 'placeholder', '--password', FAKE, '--database', 'placeholder', '--danger-allow-write'] },
  { slug: 'n8n-leonardsellem', pkg: '@leonardsellem/n8n-mcp-server', env: { N8N_API_URL: `http://127.0.0.1:${N8N_STUB_PORT}/api/v1`, N8N_API_KEY: FAKE, N8N_WEBHOOK_USERNAME: 'placeholder', N8N_WEBHOOK_PASSWORD: FAKE } },
  // @railway/mcp-server@0.1.12 only prints that it is deprecated (moved into the Railway CLI) and exits, so its
  // prefix holds 0.1.11, the last version with a server, plus `graphql`, a peer of graphql-request that it needs.
  { slug: 'railway', pkg: '@railway/mcp-server', env: { RAILWAY_API_TOKEN: FAKE, RAILWAY_TOKEN: FAKE } },
];

// Servers shipped as a native executable inside an npm package (a Go build in a platform package): the
// shared helper starts a bin with node, so these are started directly, with the same client, scratch dir,
// timeout and output format as harvestToFile.
export interface NativeTarget { slug: string; pkg: string; exe: string; node?: boolean; args?: string[]; env?: Record<string, string> }
export const NATIVE: NativeTarget[] = [
  { slug: 'vaulttools-go', pkg: '@vaulttools/mcp-linux-x64', exe: 'bin/vaulttools-mcp', args: ['--allowed-dir', SCRATCH] },
  { slug: 'onshape-go', pkg: '@onshape-mcp/linux-x64', exe: 'bin/onshape-mcp', env: { ONSHAPE_ACCESS_KEY: FAKE, ONSHAPE_SECRET_KEY: FAKE, ONSHAPE_API_URL: DEAD } },
  { slug: 'cortex-go', pkg: '@temporal-cortex/cortex-mcp-linux-x64', exe: 'bin/cortex-mcp' },
  { slug: 'git-library-go', pkg: '@git-library/mcp-linux-x64', exe: 'bin/git-library-mcp' },
  { slug: 'kanoniv-go', pkg: '@kanoniv/mcp-linux-x64', exe: 'kanoniv-mcp', env: { KANONIV_API_KEY: FAKE, KANONIV_API_URL: DEAD } },
  { slug: 'falconer-go', pkg: '@falconer/mcp-linux-x64', exe: 'falconer-mcp', env: { FALCONER_API_KEY: FAKE, FALCONER_API_URL: DEAD } },
  { slug: 'mcp-cron-go', pkg: 'mcp-cron-linux-amd64', exe: 'bin/mcp-cron', args: ['--transport', 'stdio'] },
  // Part two. Not native: the MCP server is the package's main (dist/index.js), which no bin names (its
  // bins are a docker CLI wrapper), so it is started as `node dist/index.js` the same way.
  { slug: 'docker-0xshariq', pkg: '@0xshariq/docker-mcp-server', exe: 'dist/index.js', node: true },
];

/** A native target, listed by the shared helper (which starts `exe` directly) with the same client, scratch dir, timeout and output. */
function harvestNative(root: string, t: NativeTarget): Promise<void> {
  return harvestToFile(join(root, t.slug), t, join(import.meta.dirname, 'servers'), { client: 'toolgate-blind7', timeoutMs: 30000, scratch: SCRATCH, stderr: process.env.HARVEST_STDERR ? 'inherit' : 'ignore' });
}

const harvest = (root: string, t: HarvestTarget): Promise<void> =>
  harvestToFile(join(root, t.slug), t, join(import.meta.dirname, 'servers'), { client: 'toolgate-blind7', timeoutMs: 30000, scratch: SCRATCH, stderr: process.env.HARVEST_STDERR ? 'inherit' : 'ignore' });

mkdirSync(join(SCRATCH, '.agent-relay'), { recursive: true });
mkdirSync(join(import.meta.dirname, 'servers'), { recursive: true });
const root = process.argv[2];
const only = process.argv.slice(3);
const stopStub = await mysqlStub(MYSQL_STUB_PORT);
const stopN8n = await n8nStub(N8N_STUB_PORT);
for (const t of TARGETS) if (only.length === 0 || only.includes(t.slug)) await harvest(root, t);
for (const t of NATIVE) if (only.length === 0 || only.includes(t.slug)) await harvestNative(root, t);
stopStub();
stopN8n();
process.exit(0);
