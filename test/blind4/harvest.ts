// Fetches real tool definitions for the fourth blind set: MCP servers from npm that are in none of
// test/corpus (see test/corpus/harvest.ts), test/blind, test/blind2 and test/blind3 (their harvest.ts,
// servers/ and READMEs, including the packages they tried or dropped). Modelled on test/blind3/harvest.ts.
// The definitions are kept exactly as listed.
// Usage: node --import tsx test/blind4/harvest.ts DIR_WITH_NODE_MODULES [slug...]
// DIR_WITH_NODE_MODULES is a scratch dir under os.tmpdir() where the packages below were installed
// with `npm install --ignore-scripts PKG...`; each server is started over stdio with placeholder
// credentials and dead endpoints and asked for every page of tools/list; the answer goes to servers/<slug>.json.
// The harvest was run with no network at all, in a fresh network namespace with only loopback up:
//   unshare -n sh -c 'ip link set lo up && exec node --import tsx test/blind4/harvest.ts DIR'
// so a server that phones home (telemetry, licence checks) reaches nothing.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { harvestToFile, type HarvestTarget } from '../helpers/list-tools.js';

const FAKE = 'placeholder-not-a-real-credential';
const SCRATCH = join(tmpdir(), 'blind4-harvest-scratch');
const DEAD = 'http://127.0.0.1:1'; // nothing listens there: a server that calls out at start fails fast
export const TARGETS: HarvestTarget[] = [
  { slug: 'lemonsqueezy', pkg: '@yawlabs/lemonsqueezy-mcp', env: { LEMONSQUEEZY_API_KEY: FAKE, LEMONSQUEEZY_TEST_API_KEY: FAKE } },
  // preflight and provisioning would look for (or fetch) a browser driver: both skipped; the grid URL (a dead address) adds the grid tools.
  { slug: 'selenium-ai-agent', pkg: 'selenium-ai-agent', env: { SELENIUM_AI_AGENT_SKIP_PREFLIGHT: '1', SELENIUM_AI_AGENT_SKIP_PROVISION: '1', SELENIUM_GRID_URL: DEAD } },
  { slug: 'agent-browser', pkg: 'agent-browser-mcp', env: { AGENT_BROWSER_PATH: `${SCRATCH}/bin/agent-browser-missing` } },
  // telemetry and failure-artifact uploads off (the server would report to its vendor).
  { slug: 'rn-ai-debugger', pkg: 'react-native-ai-debugger', env: { RN_DEBUGGER_TELEMETRY: 'false', EXECBRO_TELEMETRY: 'false', RN_AI_DEVTOOLS_DISABLE_FAILURE_ARTIFACTS: '1', RN_AI_DEVTOOLS_ARTIFACT_ENDPOINT: DEAD } },
  { slug: 'macos-automator', pkg: '@steipete/macos-automator-mcp' },
  // client-token mode starts without a token (the other modes test their credential against Microsoft at start).
  { slug: 'lokka', pkg: '@merill/lokka', env: { USE_CLIENT_TOKEN: 'true' } },
  { slug: 'gcp', pkg: 'gcp-mcp', env: { GOOGLE_APPLICATION_CREDENTIALS: `${SCRATCH}/missing-credentials.json`, GOOGLE_CLOUD_PROJECT: 'placeholder-project' } },
  { slug: 'contextstream', pkg: '@contextstream/mcp-server', env: { CONTEXTSTREAM_API_KEY: FAKE, CONTEXTSTREAM_API_URL: DEAD } },
  { slug: 'firefox-devtools', pkg: 'firefox-devtools-mcp' },
  // telemetry off (README: TELEMETRY_DISABLED=true); the management server is a dead address.
  { slug: 'checkpoint-quantum', pkg: '@chkp/quantum-management-mcp', env: { TELEMETRY_DISABLED: 'true', TELEMETRY_URL: DEAD, MANAGEMENT_HOST: '127.0.0.1', MANAGEMENT_PORT: '1', API_KEY: FAKE } },
  { slug: 'tauri', pkg: '@hypothesi/tauri-mcp-server', env: { MCP_BRIDGE_HOST: '127.0.0.1', MCP_BRIDGE_PORT: '1' } },
  { slug: 'vonage', pkg: '@vonage/vonage-mcp-server-api-bindings', env: { VONAGE_API_KEY: 'placeholder', VONAGE_API_SECRET: FAKE, VONAGE_APPLICATION_ID: '00000000-0000-0000-0000-000000000000', VONAGE_PRIVATE_KEY64: Buffer.from('placeholder-not-a-key').toString('base64'), VONAGE_VIRTUAL_NUMBER: '15550000000', VONAGE_WHATSAPP_NUMBER: '15550000000', RCS_SENDER_ID: 'placeholder' } },
  { slug: 'dbot-limit-order', pkg: '@dbotx/limit-order-mcp-server', env: { DBOT_API_KEY: FAKE, DBOT_WALLET_ID_SOLANA: 'placeholder-wallet' } },
  // the README's configuration (`server start`, default tool mode); telemetry off.
  { slug: 'azure', pkg: '@azure/mcp', args: ['server', 'start'], env: { AZURE_MCP_COLLECT_TELEMETRY: 'false', AZURE_SUBSCRIPTION_ID: '00000000-0000-0000-0000-000000000000', AZURE_TENANT_ID: '00000000-0000-0000-0000-000000000000' } },
  { slug: 'powerpipe', pkg: '@turbot/powerpipe-mcp', args: [SCRATCH] },
  // the launcher starts the Go binary shipped in the package's platform dependency.
  { slug: 'gasoline', pkg: 'gasoline-mcp' },
  { slug: 'agent-device', pkg: 'agent-device', args: ['mcp'] },
  // writes enabled, as the README offers (MSSQL_ENABLE_WRITES), so the set holds the write tools too.
  { slug: 'mssql-node', pkg: 'mssql-mcp-node', env: { MSSQL_SERVER: '127.0.0.1', MSSQL_PORT: '1', MSSQL_USER: 'placeholder', MSSQL_PASSWORD: FAKE, MSSQL_DATABASE: 'placeholder', MSSQL_ENABLE_WRITES: 'true' } },
  { slug: 'node-mssql', pkg: 'mcp-node-mssql', env: { DB_HOST: '127.0.0.1', DB_PORT: '1', DB_USERNAME: 'placeholder', DB_PASSWORD: FAKE, DB_DATABASE: 'placeholder' } },
  { slug: 'popdb', pkg: '@daylight-labs/popdb-mcp', env: { POPDB_TOKEN: FAKE, POPDB_API_URL: DEAD, POPDB_AUTH_URL: DEAD, POPDB_DOMAIN: '127.0.0.1' } },
  { slug: 'mysql-readonly-hovecapital', pkg: '@hovecapital/read-only-mysql-mcp-server', env: { DB_HOST: '127.0.0.1', DB_PORT: '1', DB_USERNAME: 'placeholder', DB_PASSWORD: FAKE, DB_DATABASE: 'placeholder' } },
  // `mcp` is the README's server command; Sentry error telemetry off; every workflow the package ships
  // (manifests/workflows) enabled except the Xcode-IDE bridge and workflow discovery (the default is the simulator set only).
  { slug: 'xcodebuild', pkg: 'xcodebuildmcp', args: ['mcp'], env: { XCODEBUILDMCP_SENTRY_DISABLED: 'true', SENTRY_DISABLED: 'true', XCODEBUILDMCP_ENABLED_WORKFLOWS: 'simulator,simulator-management,device,macos,debugging,ui-automation,swift-package,project-discovery,project-scaffolding,utilities,coverage,session-management,doctor' } },
  { slug: 'puppeteer-claude', pkg: 'puppeteer-mcp-claude', args: ['serve'] },
  // the editor plugin it talks to is a dead address (the server listens for the Godot plugin on a local port).
  { slug: 'godot-server', pkg: 'godot-mcp-server', env: { MCP_PORT: '1' } },
  { slug: 'mobile-pixel', pkg: 'mobile-pixel-mcp' },
  { slug: 'next-devtools', pkg: 'next-devtools-mcp', env: { NEXT_TELEMETRY_DISABLED: '1' } },
  { slug: 'google-workspace-dguido', pkg: '@dguido/google-workspace-mcp', env: { GOOGLE_CLIENT_ID: 'placeholder.apps.googleusercontent.com', GOOGLE_CLIENT_SECRET: FAKE, GOOGLE_WORKSPACE_MCP_TOKEN_PATH: `${SCRATCH}/google-token.json` } },
  { slug: 'metabase-easecloud', pkg: '@easecloudio/mcp-metabase-server', env: { METABASE_URL: DEAD, METABASE_API_KEY: FAKE } },
];

const harvest = (root: string, t: HarvestTarget): Promise<void> =>
  harvestToFile(root, t, join(import.meta.dirname, 'servers'), { client: 'toolgate-blind4', timeoutMs: 30000, scratch: SCRATCH, stderr: process.env.HARVEST_STDERR ? 'inherit' : 'ignore' });

mkdirSync(SCRATCH, { recursive: true });
const root = process.argv[2];
const only = process.argv.slice(3);
for (const t of TARGETS) if (only.length === 0 || only.includes(t.slug)) await harvest(root, t);
process.exit(0);
