// Fetches real tool definitions for the blind set: MCP servers from npm that are NOT in
// test/corpus (see test/corpus/harvest.ts for those). The definitions are kept exactly as listed.
// Usage: node --import tsx test/blind/harvest.ts DIR_WITH_NODE_MODULES [slug...]
// DIR_WITH_NODE_MODULES is a scratch dir where the packages below were installed with
// `npm install --ignore-scripts PKG...`; each server is started over stdio with placeholder
// credentials and asked for every page of tools/list; the answer goes to servers/<slug>.json.
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { harvestToFile, type HarvestTarget } from '../helpers/list-tools.js';

const FAKE = 'placeholder-not-a-real-credential';
const SCRATCH = '/tmp/blind-harvest-scratch';
export const TARGETS: HarvestTarget[] = [
  // dbhub connects at start unless a source is lazy, which only its TOML config can say (written below).
  { slug: 'dbhub', pkg: '@bytebase/dbhub', args: ['--transport', 'stdio', `--config=${SCRATCH}/dbhub.toml`] },
  { slug: 'desktop-commander', pkg: '@wonderwhy-er/desktop-commander', bin: 'desktop-commander' },
  { slug: 'git-cyanheads', pkg: '@cyanheads/git-mcp-server', env: { MCP_TRANSPORT_TYPE: 'stdio', GIT_BASE_DIR: SCRATCH } },
  { slug: 'airtable', pkg: 'airtable-mcp-server', env: { AIRTABLE_API_KEY: FAKE } },
  { slug: 'asana', pkg: '@roychri/mcp-server-asana', env: { ASANA_ACCESS_TOKEN: FAKE } },
  { slug: 'argocd', pkg: 'argocd-mcp', args: ['stdio'], env: { ARGOCD_BASE_URL: 'https://argocd.invalid', ARGOCD_API_TOKEN: FAKE } },
  { slug: 'pinecone', pkg: '@pinecone-database/mcp', env: { PINECONE_API_KEY: FAKE } },
  { slug: 'mapbox', pkg: '@mapbox/mcp-server', env: { MAPBOX_ACCESS_TOKEN: 'pk.placeholder' } },
  { slug: 'antv-chart', pkg: '@antv/mcp-server-chart' },
  { slug: 'mermaid', pkg: 'mcp-mermaid' },
  { slug: 'line-bot', pkg: '@line/line-bot-mcp-server', env: { CHANNEL_ACCESS_TOKEN: FAKE, DESTINATION_USER_ID: 'U000' } },
  { slug: 'pdf-reader', pkg: '@sylphx/pdf-reader-mcp' },
  { slug: 'searxng', pkg: 'mcp-searxng', env: { SEARXNG_URL: 'http://127.0.0.1:1' } },
  { slug: 'reddit-buddy', pkg: 'reddit-mcp-buddy', bin: 'reddit-mcp-buddy' },
  { slug: 'browsermcp', pkg: '@browsermcp/mcp' },
  { slug: 'browser-tools', pkg: '@agentdeskai/browser-tools-mcp' },
  { slug: 'fetcher', pkg: 'fetcher-mcp' },
  { slug: 'hostinger-billing', pkg: 'hostinger-api-mcp', bin: 'hostinger-billing-mcp', env: { API_TOKEN: FAKE } },
  { slug: 'hostinger-domains', pkg: 'hostinger-api-mcp', bin: 'hostinger-domains-mcp', env: { API_TOKEN: FAKE } },
  { slug: 'creem', pkg: 'creem', args: ['start', '--api-key', FAKE] },
  { slug: 'n8n', pkg: 'n8n-mcp', env: { MCP_MODE: 'stdio', N8N_API_URL: 'http://127.0.0.1:1', N8N_API_KEY: FAKE, LOG_LEVEL: 'error', DISABLE_CONSOLE_OUTPUT: 'true' } },
  { slug: 'ccxt', pkg: '@mcpfun/mcp-server-ccxt' },
  { slug: 'bnb-chain', pkg: '@bnb-chain/mcp', env: { PRIVATE_KEY: '0x' + '1'.repeat(64) } },
  { slug: 'mcp-debugger', pkg: '@debugmcp/mcp-debugger', args: ['stdio'] },
  { slug: 'nodejs-debugger', pkg: '@hyperdrive-eng/mcp-nodejs-debugger' },
  { slug: 'elasticsearch', pkg: '@elastic/mcp-server-elasticsearch', env: { ES_URL: 'http://127.0.0.1:1', ES_API_KEY: FAKE } },
  { slug: 'prometheus', pkg: 'prometheus-mcp', args: ['stdio'], env: { PROMETHEUS_URL: 'http://127.0.0.1:1' } },
  // podman-mcp-server refuses to start without a podman CLI; a stub on PATH that only prints a version is enough to list.
  { slug: 'podman', pkg: 'podman-mcp-server', env: { PATH: `${SCRATCH}/bin:${process.env.PATH}` } },
  { slug: 'instantdb', pkg: '@instantdb/mcp', args: ['--token', FAKE] },
  { slug: 'netlify', pkg: '@netlify/mcp' },
  { slug: 'codex', pkg: 'codex-mcp-server' },
  { slug: 'redis-gongrzhe', pkg: '@gongrzhe/server-redis-mcp', args: ['redis://127.0.0.1:46391'] }, // needs a redis-server listening there
  { slug: 'excel', pkg: '@negokaz/excel-mcp-server' },
  { slug: 'commands', pkg: 'mcp-server-commands' },
  { slug: 'claude-code', pkg: '@steipete/claude-code-mcp' },
];

const harvest = (root: string, t: HarvestTarget): Promise<void> =>
  harvestToFile(root, t, join(import.meta.dirname, 'servers'), { client: 'toolgate-blind', timeoutMs: 30000, scratch: SCRATCH, stderr: process.env.HARVEST_STDERR ? 'inherit' : 'ignore' });

mkdirSync(`${SCRATCH}/bin`, { recursive: true });
writeFileSync(`${SCRATCH}/dbhub.toml`, '[[sources]]\nid = "default"\ndsn = "postgres://user:placeholder@127.0.0.1:1/db"\nlazy = true\n');
writeFileSync(`${SCRATCH}/bin/podman`, '#!/bin/sh\necho "podman version 5.4.0"\n', { mode: 0o755 });
const root = process.argv[2];
const only = process.argv.slice(3);
for (const t of TARGETS) if (only.length === 0 || only.includes(t.slug)) await harvest(root, t);
process.exit(0);
