// Fetches real tool definitions for the third blind set: MCP servers from npm that are in none of
// test/corpus (see test/corpus/harvest.ts), test/blind and test/blind2 (their harvest.ts and
// READMEs, including the packages they tried or dropped). Modelled on test/blind2/harvest.ts.
// The definitions are kept exactly as listed.
// Usage: node --import tsx test/blind3/harvest.ts DIR_WITH_NODE_MODULES [slug...]
// DIR_WITH_NODE_MODULES is a scratch dir under os.tmpdir() where the packages below were installed
// with `npm install --ignore-scripts PKG...`; each server is started over stdio with placeholder
// credentials and asked for every page of tools/list; the answer goes to servers/<slug>.json.
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { harvestToFile, type HarvestTarget } from '../helpers/list-tools.js';

const FAKE = 'placeholder-not-a-real-credential';
const SCRATCH = join(tmpdir(), 'blind3-harvest-scratch');
const DEAD = 'http://127.0.0.1:1'; // nothing listens there: a server that calls out at start fails fast
export const TARGETS: HarvestTarget[] = [
  { slug: 'square', pkg: 'square-mcp-server', args: ['start'], env: { ACCESS_TOKEN: FAKE, SANDBOX: 'true' } },
  { slug: 'freee', pkg: 'freee-mcp', env: { FREEE_CLIENT_ID: 'placeholder', FREEE_CLIENT_SECRET: FAKE, FREEE_API_BASE_URL: DEAD } },
  { slug: 'runpod', pkg: '@runpod/mcp-server', env: { RUNPOD_API_KEY: FAKE, RUNPOD_API_BASE_URL: DEAD, MCP_SKIP_CREDENTIAL_CHECK: 'true' } },
  { slug: 'loopuman', pkg: 'loopuman-mcp', env: { LOOPUMAN_API_KEY: FAKE, LOOPUMAN_API_URL: DEAD } },
  // the Go server needs a kubeconfig; the harvest writes one pointing at a dead address (below).
  { slug: 'kubernetes', pkg: 'kubernetes-mcp-server', args: ['--kubeconfig', `${SCRATCH}/kubeconfig`], env: { KUBECONFIG: `${SCRATCH}/kubeconfig` } },
  { slug: 'digitalocean', pkg: '@digitalocean/mcp', args: ['--services', 'droplets,accounts,apps'], env: { DIGITALOCEAN_API_TOKEN: FAKE } },
  { slug: 'dokploy', pkg: '@ahdev/dokploy-mcp', env: { DOKPLOY_URL: DEAD, DOKPLOY_API_KEY: FAKE, MCP_TRANSPORT: 'stdio' } },
  { slug: 'mysql-liangshanli', pkg: '@liangshanli/mcp-server-mysql', env: { MYSQL_HOST: '127.0.0.1', MYSQL_PORT: '1', MYSQL_USER: 'user', MYSQL_PASSWORD: FAKE, MYSQL_DATABASE: 'db', ALLOW_DDL: 'true', ALLOW_DELETE: 'true', ALLOW_DROP: 'true' } },
  { slug: 'bash-command', pkg: 'bash-command-mcp', env: { BASH_COMMAND_MCP_LOG_DIR: `${SCRATCH}/logs` } },
  { slug: 'ssh', pkg: 'ssh-mcp', args: ['--host=127.0.0.1', '--port=1', '--user=placeholder'], env: { SSH_MCP_PASSWORD: FAKE } },
  { slug: 'jenkins-host', pkg: '@mister-good-deal/host-mcp-jenkins', env: { JENKINS_URL: DEAD, JENKINS_USER: 'placeholder', JENKINS_API_TOKEN: FAKE, MCP_TRANSPORT: 'stdio' } },
  { slug: 'vitest', pkg: '@djankies/vitest-mcp', env: { VITEST_MCP_WORKING_DIR: SCRATCH } },
  { slug: 'selenium', pkg: '@angiejones/mcp-selenium' },
  { slug: 'pinion', pkg: 'pinion-os', env: { PINION_PRIVATE_KEY: '0x' + '3'.repeat(64), PINION_API_URL: DEAD, PINION_NETWORK: 'base-sepolia' } },
  // flow-nexus's Supabase client needs a WebSocket global, which Node 20 has only behind a flag.
  { slug: 'flow-nexus', pkg: 'flow-nexus', args: ['mcp'], env: { NODE_OPTIONS: '--experimental-websocket', SUPABASE_URL: DEAD, FLOW_NEXUS_URL: DEAD } },
  { slug: 'infisical', pkg: '@infisical/mcp', env: { INFISICAL_HOST_URL: DEAD, INFISICAL_UNIVERSAL_AUTH_CLIENT_ID: 'placeholder', INFISICAL_UNIVERSAL_AUTH_CLIENT_SECRET: FAKE } },
  { slug: 'gcs', pkg: '@google-cloud/storage-mcp', env: { GOOGLE_CLOUD_PROJECT: 'placeholder-project' } },
  { slug: 'computer-use', pkg: 'computer-use-mcp' },
  { slug: 'ollama', pkg: 'ollama-mcp', env: { OLLAMA_HOST: DEAD } },
];

const harvest = (root: string, t: HarvestTarget): Promise<void> =>
  harvestToFile(root, t, join(import.meta.dirname, 'servers'), { client: 'toolgate-blind3', timeoutMs: 30000, scratch: SCRATCH, stderr: process.env.HARVEST_STDERR ? 'inherit' : 'ignore' });

mkdirSync(`${SCRATCH}/bin`, { recursive: true });
writeFileSync(`${SCRATCH}/kubeconfig`, [
  'apiVersion: v1', 'kind: Config', 'current-context: placeholder',
  'clusters: [{name: placeholder, cluster: {server: "https://127.0.0.1:1"}}]',
  'users: [{name: placeholder, user: {token: placeholder}}]',
  'contexts: [{name: placeholder, context: {cluster: placeholder, user: placeholder}}]', '',
].join('\n'));
const root = process.argv[2];
const only = process.argv.slice(3);
for (const t of TARGETS) if (only.length === 0 || only.includes(t.slug)) await harvest(root, t);
process.exit(0);
