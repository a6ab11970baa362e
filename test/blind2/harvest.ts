// Fetches real tool definitions for the second blind set: MCP servers from npm that are in neither
// test/corpus (see test/corpus/harvest.ts) nor test/blind (see test/blind/README.md). Modelled on
// test/blind/harvest.ts. The definitions are kept exactly as listed.
// Usage: node --import tsx test/blind2/harvest.ts DIR_WITH_NODE_MODULES [slug...]
// DIR_WITH_NODE_MODULES is a scratch dir where the packages below were installed with
// `npm install --ignore-scripts PKG...`; each server is started over stdio with placeholder
// credentials and asked for every page of tools/list; the answer goes to servers/<slug>.json.
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import { harvestToFile, type HarvestTarget } from '../helpers/list-tools.js';

const FAKE = 'placeholder-not-a-real-credential';
const SCRATCH = '/tmp/blind2-harvest-scratch';
const DEAD = 'http://127.0.0.1:1'; // nothing listens there: a server that calls out at start fails fast
export const TARGETS: HarvestTarget[] = [
  { slug: 'interactive-brokers', pkg: 'interactive-brokers-mcp', env: { IB_GATEWAY_HOST: '127.0.0.1', IB_GATEWAY_PORT: '1', IB_HEADLESS_MODE: 'true', IB_USERNAME: 'placeholder', IB_PASSWORD: FAKE } },
  { slug: 'conway', pkg: 'conway-terminal', env: { CONWAY_API_KEY: FAKE, CONWAY_API_URL: DEAD } },
  { slug: 'clawnch', pkg: 'clawnch-mcp-server', env: { CLAWNCH_API_KEY: FAKE, CLAWNCH_PRIVATE_KEY: '0x' + '2'.repeat(64), CLAWNCH_RHC_RPC_URL: DEAD } },
  { slug: 'food402', pkg: 'food402', env: { TGO_EMAIL: 'placeholder@example.invalid', TGO_PASSWORD: FAKE } },
  { slug: 'cookunity', pkg: 'cookunity-mcp-server', env: { COOKUNITY_EMAIL: 'placeholder@example.invalid', COOKUNITY_PASSWORD: FAKE } },
  { slug: 'woocommerce', pkg: '@lockon0927/woocommerce-mcp', env: { WORDPRESS_SITE_URL: DEAD, WOOCOMMERCE_CONSUMER_KEY: 'ck_placeholder', WOOCOMMERCE_CONSUMER_SECRET: 'cs_placeholder' } },
  { slug: 'headless-commerce', pkg: '@headless-commerce/mcp-server', env: { HEADLESS_COMMERCE_API_KEY: FAKE, HEADLESS_COMMERCE_API_URL: DEAD } },
  { slug: 'postgres-henkey', pkg: '@henkey/postgres-mcp-server', env: { POSTGRES_CONNECTION_STRING: 'postgresql://user:placeholder@127.0.0.1:1/db' } },
  // falkordb pings its database at start; a plain redis-server listening there answers the ping (see README).
  { slug: 'falkordb', pkg: '@falkordb/mcpserver', env: { FALKORDB_HOST: '127.0.0.1', FALKORDB_PORT: '46392', MCP_TRANSPORT: 'stdio' } },
  // firebase-admin parses the service account's private key at start: the harvest writes a throwaway one (below).
  { slug: 'firebase', pkg: '@gannonh/firebase-mcp', env: { SERVICE_ACCOUNT_KEY_PATH: `${SCRATCH}/firebase-sa.json`, FIREBASE_STORAGE_BUCKET: 'placeholder.appspot.com' } },
  { slug: 'cosmosdb', pkg: 'mcpcosmosdb', env: { COSMOS_CONNECTION_STRING: 'AccountEndpoint=https://127.0.0.1:1/;AccountKey=cGxhY2Vob2xkZXI=;', COSMOS_DATABASE_ID: 'placeholder', DB_ALLOW_MODIFICATIONS: 'true' } },
  { slug: 'gmail', pkg: '@gongrzhe/server-gmail-autoauth-mcp', env: { GMAIL_OAUTH_PATH: `${SCRATCH}/gcp-oauth.keys.json`, GMAIL_CREDENTIALS_PATH: `${SCRATCH}/gmail-credentials.json` } },
  { slug: 'obsidian', pkg: 'mcp-obsidian', args: [`${SCRATCH}/vault`] },
  { slug: 'browserbase', pkg: '@browserbasehq/mcp-server-browserbase', env: { BROWSERBASE_API_KEY: FAKE, BROWSERBASE_PROJECT_ID: 'placeholder', GEMINI_API_KEY: FAKE } },
  { slug: 'agent-infra-browser', pkg: '@agent-infra/mcp-server-browser', args: ['--executable-path', '/usr/bin/chromium', '--headless'] },
  { slug: 'bigquery', pkg: '@ergut/mcp-bigquery-server', args: ['--project-id', 'placeholder-project'] },
  { slug: 'metabase', pkg: '@cognitionai/metabase-mcp-server', env: { METABASE_URL: DEAD, METABASE_API_KEY: FAKE } },
  { slug: 'ios-simulator', pkg: 'ios-simulator-mcp' },
  { slug: 'mail-server', pkg: 'mcp-mail-server', env: { IMAP_HOST: '127.0.0.1', IMAP_PORT: '1', SMTP_HOST: '127.0.0.1', SMTP_PORT: '1', IMAP_SECURE: 'false', SMTP_SECURE: 'false', EMAIL_USER: 'placeholder@example.invalid', EMAIL_PASS: FAKE } },
  { slug: 'eslint', pkg: '@eslint/mcp' },
  { slug: 'drawio', pkg: '@drawio/mcp' },
  { slug: 'brightdata', pkg: '@brightdata/mcp', env: { API_TOKEN: FAKE } },
  { slug: 'deepl', pkg: 'deepl-mcp-server', env: { DEEPL_API_KEY: FAKE } },
  { slug: 'domain-search', pkg: 'domain-search-mcp', env: { MCP_TRANSPORT: 'stdio' } },
  { slug: 'mcp-installer', pkg: '@anaisbetts/mcp-installer' },
  { slug: 'postgres-mcp-server', pkg: 'mcp-postgres-server', env: { PG_HOST: '127.0.0.1', PG_PORT: '1', PG_USER: 'user', PG_PASSWORD: FAKE, PG_DATABASE: 'db' } },
  { slug: 'postgres-enhanced', pkg: 'enhanced-postgres-mcp-server', args: ['postgresql://user:placeholder@127.0.0.1:1/db'] },
];

const harvest = (root: string, t: HarvestTarget): Promise<void> =>
  harvestToFile(root, t, join(import.meta.dirname, 'servers'), { client: 'toolgate-blind2', timeoutMs: 30000, scratch: SCRATCH, stderr: process.env.HARVEST_STDERR ? 'inherit' : 'ignore' });

mkdirSync(`${SCRATCH}/bin`, { recursive: true });
mkdirSync(`${SCRATCH}/vault`, { recursive: true });
// the Gmail server reads an OAuth client and a saved token at start; both are placeholders.
writeFileSync(`${SCRATCH}/gcp-oauth.keys.json`, JSON.stringify({ installed: { client_id: 'placeholder', client_secret: 'placeholder', redirect_uris: ['http://127.0.0.1:1/oauth2callback'] } }));
writeFileSync(`${SCRATCH}/gmail-credentials.json`, JSON.stringify({ access_token: 'placeholder', refresh_token: 'placeholder', token_type: 'Bearer', expiry_date: 4102444800000 }));
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
writeFileSync(`${SCRATCH}/firebase-sa.json`, JSON.stringify({
  type: 'service_account', project_id: 'placeholder-project', private_key_id: 'placeholder', private_key: privateKey,
  client_email: 'placeholder@placeholder-project.iam.gserviceaccount.com', client_id: '0', token_uri: 'http://127.0.0.1:1/token',
}));
const root = process.argv[2];
const only = process.argv.slice(3);
for (const t of TARGETS) if (only.length === 0 || only.includes(t.slug)) await harvest(root, t);
process.exit(0);
