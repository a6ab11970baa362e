// Fetches real tool definitions for the eighth blind set (issue 24): MCP servers from npm that are in none
// of test/corpus (see test/corpus/harvest.ts), test/blind, blind2 … blind7 (their harvest.ts, servers/ and
// READMEs, including the packages they tried or dropped), plus (part two) fourteen packages that an earlier set
// harvested and dropped only for size, whose tools no set ever listed. Modelled on test/blind7/harvest.ts. The
// definitions are kept exactly as listed, every page of tools/list.
// Usage: node --import tsx test/blind8/harvest.ts PKGS_DIR [slug...]
// PKGS_DIR holds one install prefix per target, PKGS_DIR/<slug>, made with
//   npm install --prefix PKGS_DIR/<slug> --ignore-scripts --legacy-peer-deps PKG
// (see README.md); each server is started over stdio with placeholder credentials and dead endpoints and
// asked for every page of tools/list; the answer goes to servers/<slug>.json.
// The harvest was run with no network at all, in a fresh network namespace with only loopback up:
//   unshare -n sh -c 'ip link set lo up && exec node --import tsx test/blind8/harvest.ts PKGS_DIR'
// so a server that phones home (telemetry, licence checks) reaches nothing.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { harvestToFile, type HarvestTarget } from '../helpers/list-tools.js';

const FAKE = 'placeholder-not-a-real-credential';
const SCRATCH = join(tmpdir(), 'blind8-harvest-scratch');
const DEAD = 'http://127.0.0.1:1'; // nothing listens there: a server that calls out at start fails fast

export const TARGETS: HarvestTarget[] = [
  // every tool (the default 'operator' profile); product type Enterprise, a dead URL.
  { slug: 'influxdb3', pkg: '@influxdata/influxdb3-mcp-server', env: { INFLUX_DB_PRODUCT_TYPE: 'enterprise', INFLUX_DB_INSTANCE_URL: DEAD, INFLUX_DB_TOKEN: FAKE } },
  { slug: 'confluence-answerai', pkg: '@answerai/confluence-mcp', bin: 'answerai-confluence-mcp', env: { CONFLUENCE_BASE_URL: DEAD, CONFLUENCE_USER_EMAIL: 'placeholder@example.invalid', CONFLUENCE_API_TOKEN: FAKE } },
  { slug: 'ripgrep', pkg: 'mcp-ripgrep' },
  { slug: 'linear-mcp-server', pkg: 'linear-mcp-server', env: { LINEAR_API_KEY: FAKE } },
  { slug: 'memory-bank-allpepper', pkg: '@allpepper/memory-bank-mcp', env: { MEMORY_BANK_ROOT: SCRATCH } },
  { slug: 'taskmanager-kazuph', pkg: '@kazuph/mcp-taskmanager', env: { TASK_MANAGER_FILE_PATH: `${SCRATCH}/tasks.json` } },
  { slug: 'llama-agile', pkg: '@agllama/mcp', env: { LLAMA_API_KEY: FAKE, LLAMA_API_URL: DEAD, LLAMA_FRONTEND_URL: DEAD } },
  // its `recipe-mcp-server` bin is the MCP server (the first bin is a CLI).
  { slug: 'recipe-mcp', pkg: 'recipe-mcp', bin: 'recipe-mcp-server' },
  { slug: 'calc-mcp', pkg: '@coo-quack/calc-mcp' },
  { slug: 'openzeppelin', pkg: '@openzeppelin/contracts-mcp' },
  { slug: 'trust-mcp', pkg: '@trustthenverify/trust-mcp', env: { TRUST_REGISTRY_URL: DEAD } },
  // its Figma plugin socket is a dead port; the prefix also got zod@3.25.76 (zod-to-json-schema needs zod's v3 export,
  // which the zod that --legacy-peer-deps left it does not have).
  { slug: 'talk-to-figma', pkg: 'cursor-talk-to-figma-mcp', args: ['--server=127.0.0.1', '--port=1'] },
  { slug: 'opentofu', pkg: '@opentofu/opentofu-mcp-server' },
  { slug: 'hotelzero', pkg: 'hotelzero', env: { HOTELZERO_SESSION_PATH: `${SCRATCH}/hotelzero` } },
  { slug: 'system-monitor', pkg: '@modelcontextprotocol/server-system-monitor', args: ['--stdio'] },
  { slug: 'google-map-cablate', pkg: '@cablate/mcp-google-map', args: ['--stdio'], env: { GOOGLE_MAPS_API_KEY: FAKE } },
  { slug: 'apidog', pkg: 'apidog-mcp-server', args: ['--project-id=1'], env: { APIDOG_ACCESS_TOKEN: FAKE } },
  { slug: 'mcp-omnisearch', pkg: 'mcp-omnisearch', env: { BRAVE_API_KEY: FAKE, EXA_API_KEY: FAKE, FIRECRAWL_API_KEY: FAKE, FIRECRAWL_BASE_URL: DEAD, GITHUB_API_KEY: FAKE, JINA_AI_API_KEY: FAKE, KAGI_API_KEY: FAKE, PERPLEXITY_API_KEY: FAKE, TAVILY_API_KEY: FAKE } },
  { slug: 'mcp-figma', pkg: 'mcp-figma' },
  { slug: 'neo4j-alanse', pkg: '@alanse/mcp-neo4j-server', env: { NEO4J_URI: 'bolt://127.0.0.1:1', NEO4J_USERNAME: 'placeholder', NEO4J_PASSWORD: FAKE, NEO4J_DATABASE: 'placeholder' } },
  // it uses the global WebSocket, which this Node (20) has only behind a flag.
  { slug: 'hyperliquid-mektigboy', pkg: '@mektigboy/server-hyperliquid', env: { NODE_OPTIONS: '--experimental-websocket' } },
  // its index.mjs (the package's main, which no bin names) is the MCP server; the bin is a CLI.
  { slug: 'agentaudit', pkg: 'agentaudit', exe: 'index.mjs', node: true },
  // it reads Claude usage data and exits unless a Claude data dir exists: an empty one is made in the scratch HOME.
  { slug: 'ccusage', pkg: '@ccusage/mcp' },
  { slug: 'drawio-mcp', pkg: 'drawio-mcp' },
  { slug: 'z-ai', pkg: '@z_ai/mcp-server', env: { Z_AI_API_KEY: FAKE, Z_AI_BASE_URL: DEAD, Z_AI_MODE: 'ZAI', ZAI_MCP_LOG_PATH: `${SCRATCH}/zai.log` } },
  { slug: 'variflight', pkg: '@variflight-ai/variflight-mcp', env: { VARIFLIGHT_API_KEY: FAKE, VARIFLIGHT_API_URL: DEAD } },
  { slug: 'amap', pkg: '@amap/amap-maps-mcp-server', env: { AMAP_MAPS_API_KEY: FAKE } },
  { slug: 'baidu-map', pkg: '@baidumap/mcp-server-baidu-map', env: { BAIDU_MAP_API_KEY: FAKE } },
  { slug: 'memdata', pkg: 'memdata-mcp', env: { MEMDATA_API_KEY: FAKE, MEMDATA_API_URL: DEAD } },
  { slug: 'astrotask', pkg: '@astrotask/mcp', bin: 'astrotask-mcp-stdio' },
  { slug: 'vibepowerpack', pkg: 'mcp-vibepowerpack', env: { MCP_TRANSPORT: 'stdio', MCP_PORT: '47110', OPENROUTER_API_KEY: FAKE } },
  { slug: 'slashvibe', pkg: 'slashvibe-mcp', env: { VIBE_API_URL: DEAD } },
  { slug: 'svgmaker', pkg: '@genwave/svgmaker-mcp', env: { SVGMAKER_API_KEY: FAKE, SVGMAKER_BASE_URL: DEAD } },
  { slug: 'weather-dangahagan', pkg: '@dangahagan/weather-mcp', env: { ANALYTICS_ENABLED: 'false' } },
  { slug: 'airbnb-openbnb', pkg: '@openbnb/mcp-server-airbnb' },
  { slug: 'mcp-excalidraw-server', pkg: 'mcp-excalidraw-server', env: { EXPRESS_SERVER_URL: DEAD, EXCALIDRAW_NO_AUTOSTART: 'true', EXCALIDRAW_EXPORT_DIR: SCRATCH, ENABLE_CANVAS_SYNC: 'false' } },
  { slug: 'gtasks-alvincrave', pkg: '@alvincrave/gtasks-mcp', env: { GOOGLE_CLIENT_ID: 'placeholder.apps.googleusercontent.com', GOOGLE_CLIENT_SECRET: FAKE, GOOGLE_REFRESH_TOKEN: FAKE } },

  // Part two: packages that an earlier set harvested but dropped only to keep its size down (test/blind/README.md,
  // blind2 and blind3 "Harvested but dropped …"); no set's servers/ holds them, so no set ever listed their tools.
  { slug: 'coolify', pkg: '@masonator/coolify-mcp', env: { COOLIFY_BASE_URL: DEAD, COOLIFY_ACCESS_TOKEN: FAKE } },
  { slug: 'ssh-manager', pkg: 'mcp-ssh-manager' },
  { slug: 'terraform-mcp-server', pkg: 'terraform-mcp-server', env: { TERRAFORM_REGISTRY_URL: DEAD, TFC_TOKEN: FAKE } },
  { slug: 'bitwarden', pkg: '@bitwarden/mcp-server', env: { BW_SESSION: FAKE, BW_CLIENT_ID: FAKE, BW_CLIENT_SECRET: FAKE, BW_API_BASE_URL: DEAD, BW_IDENTITY_URL: DEAD, BITWARDENCLI_APPDATA_DIR: SCRATCH } },
  { slug: 'lunchmoney', pkg: '@akutishevsky/lunchmoney-mcp', env: { LUNCHMONEY_API_TOKEN: FAKE, LUNCHMONEY_ATTACHMENTS_DIR: SCRATCH } },
  // BITBUCKET_ENABLE_DANGEROUS=true: every tool enabled, the dangerous ones included (off by default).
  { slug: 'bitbucket-mcp', pkg: 'bitbucket-mcp', env: { BITBUCKET_URL: DEAD, BITBUCKET_TOKEN: FAKE, BITBUCKET_ENABLE_DANGEROUS: 'true', BITBUCKET_LOG_DISABLE: 'true' } },
  // a Speakeasy-generated server: its `start` command serves over stdio.
  { slug: 'cloudinary-assets', pkg: '@cloudinary/asset-management-mcp', args: ['start'], env: { CLOUDINARY_CLOUD_NAME: 'placeholder', CLOUDINARY_API_KEY: FAKE, CLOUDINARY_API_SECRET: FAKE } },
  { slug: 'fast-filesystem', pkg: 'fast-filesystem-mcp', env: { CREATE_BACKUP_FILES: 'false' } },
  { slug: 'replicate-mcp', pkg: 'replicate-mcp', env: { REPLICATE_API_TOKEN: FAKE } },
  { slug: 'shopify-mcp', pkg: 'shopify-mcp', args: ['--accessToken', FAKE, '--domain', 'placeholder.myshopify.com'], env: { SHOPIFY_ACCESS_TOKEN: FAKE, MYSHOPIFY_DOMAIN: 'placeholder.myshopify.com' } },
  { slug: 'grafana-leval', pkg: '@leval/mcp-grafana', env: { GRAFANA_URL: DEAD, GRAFANA_API_KEY: FAKE, GRAFANA_SERVICE_ACCOUNT_TOKEN: FAKE } },
  { slug: 'discord-mcp', pkg: 'mcp-discord', env: { DISCORD_TOKEN: FAKE } },
  // the connection string is its first argument (a dead port); no permissions or categories: every tool.
  { slug: 'mysql-berthojoris', pkg: '@berthojoris/mcp-mysql-server', args: [`mysql://placeholder:${FAKE}@127.0.0.1:1/placeholder`] },
  { slug: 'plane', pkg: '@makeplane/plane-mcp-server', env: { PLANE_API_HOST_URL: DEAD, PLANE_API_KEY: FAKE, PLANE_WORKSPACE_SLUG: 'placeholder' } },
];

// Servers shipped as a native executable inside an npm platform package: started directly by the shared
// helper (`exe`), with the same client, scratch dir, timeout and output format.
export const NATIVE: HarvestTarget[] = [
  { slug: 'leanspec-go', pkg: '@leanspec/mcp-linux-x64', exe: 'leanspec-mcp' },
];

const harvest = (root: string, t: HarvestTarget): Promise<void> =>
  harvestToFile(join(root, t.slug), t, join(import.meta.dirname, 'servers'), { client: 'toolgate-blind8', timeoutMs: 30000, scratch: SCRATCH, stderr: process.env.HARVEST_STDERR ? 'inherit' : 'ignore' });

mkdirSync(join(SCRATCH, '.claude', 'projects'), { recursive: true });
mkdirSync(join(import.meta.dirname, 'servers'), { recursive: true });
const root = process.argv[2];
const only = process.argv.slice(3);
for (const t of [...TARGETS, ...NATIVE]) if (only.length === 0 || only.includes(t.slug)) await harvest(root, t);
process.exit(0);
