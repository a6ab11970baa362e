// Fetches real tool definitions for the fifth blind set (issue 24 item 5): MCP servers from npm that are in
// none of test/corpus (see test/corpus/harvest.ts), test/blind, blind2, blind3 and blind4 (their harvest.ts,
// servers/ and READMEs, including the packages they tried or dropped). Modelled on test/blind4/harvest.ts.
// The definitions are kept exactly as listed.
// Usage: node --import tsx test/blind5/harvest.ts PKGS_DIR [slug...]
// PKGS_DIR holds one install prefix per target, PKGS_DIR/<slug>, made with
//   npm install --prefix PKGS_DIR/<slug> --ignore-scripts --legacy-peer-deps PKG
// (see README.md); each server is started over stdio with placeholder credentials and dead endpoints and
// asked for every page of tools/list; the answer goes to servers/<slug>.json.
// The harvest was run with no network at all, in a fresh network namespace with only loopback up:
//   unshare -n sh -c 'ip link set lo up && exec node --import tsx test/blind5/harvest.ts PKGS_DIR'
// so a server that phones home (telemetry, licence checks) reaches nothing.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { harvestToFile, type HarvestTarget } from '../helpers/list-tools.js';

const FAKE = 'placeholder-not-a-real-credential';
const SCRATCH = join(tmpdir(), 'blind5-harvest-scratch');
const DEAD = 'http://127.0.0.1:1'; // nothing listens there: a server that calls out at start fails fast
export const TARGETS: HarvestTarget[] = [
  { slug: 'nexus-exchange', pkg: '@nexus-xyz/exchange-mcp', bin: 'exchange-mcp' },
  { slug: 'codex-shell', pkg: '@openai/codex-shell-tool-mcp' },
  { slug: 'gcp-observability', pkg: '@google-cloud/observability-mcp' },
  { slug: 'alertmanager', pkg: 'mcp-alertmanager', args: ['--url', DEAD] },
  { slug: 'godot-satellite', pkg: '@satelliteoflove/godot-mcp' },
  { slug: 'datadog-mcp', pkg: 'datadog-mcp', env: { DD_API_KEY: FAKE, DD_APP_KEY: FAKE, DD_SITE: '127.0.0.1:1' } },
  { slug: 'datadog-server', pkg: 'datadog-mcp-server', env: { DD_API_KEY: FAKE, DD_APP_KEY: FAKE, DD_SITE: '127.0.0.1:1' } },
  { slug: 'm365-cli', pkg: '@pnp/cli-microsoft365-mcp-server' },
  { slug: 'retellai', pkg: '@abhaybabbar/retellai-mcp-server', env: { RETELL_API_KEY: FAKE } },
  { slug: 'ssh-secured', pkg: '@marian-craciunescu/ssh-mcp-server-secured' },
  { slug: 'onepassword', pkg: '@takescake/1password-mcp', env: { OP_SERVICE_ACCOUNT_TOKEN: FAKE } },
  { slug: 'sbox', pkg: '@seleniumbox/sbox-mcp', env: { SBOX_API_BASE_URL: DEAD, SBOX_API: DEAD } },
  { slug: 'dynatrace-managed', pkg: '@dynatrace-oss/dynatrace-managed-mcp-server', env: { DT_MCP_DISABLE_TELEMETRY: 'true', DT_MCP_TELEMETRY_ENDPOINT_URL: DEAD, DT_ENVIRONMENT_CONFIGS: JSON.stringify([{ apiEndpointUrl: `${DEAD}/`, environmentId: 'placeholder', alias: 'placeholder', apiToken: 'dt0s01.PLACEHOLDER' }]) } },
  { slug: 'autotel', pkg: 'autotel-mcp' },
  { slug: 'chkp-logs', pkg: '@chkp/management-logs-mcp', env: { TELEMETRY_DISABLED: 'true', TELEMETRY_URL: DEAD, MANAGEMENT_HOST: '127.0.0.1', MANAGEMENT_PORT: '1', API_KEY: FAKE } },
  { slug: 'alibabacloud-devops', pkg: 'alibabacloud-devops-mcp-server', env: { YUNXIAO_ACCESS_TOKEN: FAKE } },
  { slug: 'metabase-ai', pkg: 'metabase-ai-assistant', env: { METABASE_URL: DEAD, METABASE_API_KEY: FAKE } },
  { slug: 'dataiku', pkg: 'dataiku-mcp', env: { DATAIKU_URL: DEAD, DATAIKU_API_KEY: FAKE } },
  { slug: 'resend', pkg: 'resend-mcp', env: { RESEND_API_KEY: FAKE } },
  { slug: 'mcp-fetch', pkg: 'mcp-fetch' },
  { slug: 'fasttest-qa', pkg: '@fasttest-ai/qa-agent' },
  { slug: 'agent-reverse-proxy', pkg: '@choonkeat/agent-reverse-proxy' },
  { slug: 'lynx-devtool', pkg: '@lynx-js/devtool-mcp-server-canary' },
  { slug: 'claude-in-mobile', pkg: 'claude-in-mobile' },
  { slug: 'comfyui', pkg: 'comfyui-mcp', env: { COMFYUI_URL: DEAD, COMFYUI_HOST: '127.0.0.1', COMFYUI_PORT: '1' } },
  { slug: 'libsql-memory', pkg: 'mcp-memory-libsql', env: { LIBSQL_URL: `file:${SCRATCH}/libsql-memory.db` } },
  // second harvest (below): added in a second commit because the first 26 servers held fewer than 250 Execute, Destructive
  // and Financial tools by the labeller's working count (no classifier was run).
  { slug: 'rest-api-dkmaker', pkg: 'dkmaker-mcp-rest-api', env: { REST_BASE_URL: DEAD } },
  { slug: 'karakeep', pkg: '@karakeep/mcp', env: { KARAKEEP_API_ADDR: DEAD, KARAKEEP_API_KEY: FAKE } },
  { slug: 'testsprite', pkg: '@testsprite/testsprite-mcp', env: { API_KEY: FAKE, API_URL: DEAD, TESTSPRITE_URL: DEAD } },
  { slug: 'shiplight', pkg: '@shiplightai/mcp', env: { DO_NOT_TRACK: '1' } },
  { slug: 'azure-devops-ajpanada', pkg: '@ajpanada/mcp-azure-devops', args: ['placeholder-org'], env: { AZURE_DEVOPS_AUTH_METHOD: 'envvar', AZURE_DEVOPS_ACCESS_TOKEN: FAKE } },
  { slug: 'wordpress-mcp', pkg: 'mcp-wordpress', env: { WORDPRESS_SITE_URL: DEAD, ALLOW_INSECURE_HTTP: 'true', ALLOW_PRIVATE_URLS: 'true', WORDPRESS_USERNAME: 'placeholder', WORDPRESS_APP_PASSWORD: FAKE } },
  { slug: 'strapi', pkg: 'strapi-mcp', env: { STRAPI_URL: DEAD, STRAPI_ADMIN_EMAIL: 'admin@example.invalid', STRAPI_ADMIN_PASSWORD: FAKE } },
  { slug: 'lighthouse-danielsogl', pkg: '@danielsogl/lighthouse-mcp' },
  { slug: 'qase', pkg: '@qase/mcp-server', env: { QASE_API_TOKEN: FAKE, QASE_API_DOMAIN: '127.0.0.1:1' } },
  { slug: 'context-mode', pkg: 'context-mode' },
  { slug: 'recker', pkg: 'recker', args: ['mcp', '--category', 'full'] },
  { slug: 'houtini-lm', pkg: '@houtini/lm', env: { LM_STUDIO_URL: DEAD } },
  // cclsp refuses to start without a config file naming language servers; one placeholder entry (never started while listing).
  { slug: 'cclsp', pkg: 'cclsp', env: { CCLSP_CONFIG_PATH: join(SCRATCH, 'cclsp.json') } },
  { slug: 'morphmcp', pkg: '@morphllm/morphmcp', env: { MORPH_API_KEY: FAKE } },
  { slug: 'sanity', pkg: '@sanity/mcp-server', env: { SANITY_PROJECT_ID: 'placeholder', SANITY_DATASET: 'production', SANITY_API_TOKEN: FAKE, SANITY_API_HOST: DEAD, MCP_USER_ROLE: 'developer' } },
  { slug: 'gemini-mcp-tool', pkg: 'gemini-mcp-tool' },
  { slug: 'lighthouse-mcp', pkg: 'lighthouse-mcp' },
];

const harvest = (root: string, t: HarvestTarget): Promise<void> =>
  harvestToFile(join(root, t.slug), t, join(import.meta.dirname, 'servers'), { client: 'toolgate-blind5', timeoutMs: 30000, scratch: SCRATCH, stderr: process.env.HARVEST_STDERR ? 'inherit' : 'ignore' });

mkdirSync(SCRATCH, { recursive: true });
writeFileSync(join(SCRATCH, 'cclsp.json'), JSON.stringify({ servers: [{ extensions: ['ts'], command: ['typescript-language-server', '--stdio'] }] }));
const root = process.argv[2];
const only = process.argv.slice(3);
for (const t of TARGETS) if (only.length === 0 || only.includes(t.slug)) await harvest(root, t);
process.exit(0);
