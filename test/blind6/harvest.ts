// Fetches real tool definitions for the sixth blind set (issue 24 item 5): MCP servers from npm that are in
// none of test/corpus (see test/corpus/harvest.ts), test/blind, blind2, blind3, blind4 and blind5 (their
// harvest.ts, servers/ and READMEs, including the packages they tried or dropped). Modelled on
// test/blind5/harvest.ts. The definitions are kept exactly as listed.
// Usage: node --import tsx test/blind6/harvest.ts PKGS_DIR [slug...]
// PKGS_DIR holds one install prefix per target, PKGS_DIR/<slug>, made with
//   npm install --prefix PKGS_DIR/<slug> --ignore-scripts --legacy-peer-deps PKG
// (see README.md); each server is started over stdio with placeholder credentials and dead endpoints and
// asked for every page of tools/list; the answer goes to servers/<slug>.json.
// The harvest was run with no network at all, in a fresh network namespace with only loopback up:
//   unshare -n sh -c 'ip link set lo up && exec node --import tsx test/blind6/harvest.ts PKGS_DIR'
// so a server that phones home (telemetry, licence checks) reaches nothing.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { harvestToFile, type HarvestTarget } from '../helpers/list-tools.js';

const FAKE = 'placeholder-not-a-real-credential';
const SCRATCH = join(tmpdir(), 'blind6-harvest-scratch');
const DEAD = 'http://127.0.0.1:1'; // nothing listens there: a server that calls out at start fails fast
export const TARGETS: HarvestTarget[] = [
  { slug: 'agentic-pay', pkg: 'agentic-payments', bin: 'agentic-payments-mcp' },
  { slug: 'figma-console', pkg: 'figma-console-mcp', env: { FIGMA_ACCESS_TOKEN: FAKE } },
  { slug: 'github-project-manager', pkg: 'mcp-github-project-manager', env: { GITHUB_TOKEN: FAKE, GITHUB_OWNER: 'placeholder', GITHUB_REPO: 'placeholder' } },
  { slug: 'github-mcp-server', pkg: 'github-mcp-server', bin: 'github-mcp-server-mcp', env: { GITHUB_TOKEN: FAKE } },
  { slug: 'powerplatform-mcp', pkg: 'powerplatform-mcp', env: { POWERPLATFORM_ENVIRONMENTS: 'DEV', POWERPLATFORM_DEV_URL: DEAD, POWERPLATFORM_DEV_CLIENT_ID: '00000000-0000-0000-0000-000000000000', POWERPLATFORM_DEV_CLIENT_SECRET: FAKE, POWERPLATFORM_DEV_TENANT_ID: '00000000-0000-0000-0000-000000000000' } },
  { slug: 'lark', pkg: '@larksuiteoapi/lark-mcp', args: ['mcp', '-a', 'cli_placeholder', '-s', FAKE, '--domain', DEAD] },
  { slug: 'metabase-nao', pkg: '@getnao/metabase-mcp-server', env: { METABASE_URL: DEAD, METABASE_API_KEY: FAKE } },
  { slug: 'bitbucket-aashari', pkg: '@aashari/mcp-server-atlassian-bitbucket', env: { ATLASSIAN_USER_EMAIL: 'placeholder@example.invalid', ATLASSIAN_API_TOKEN: FAKE, ATLASSIAN_BITBUCKET_USERNAME: 'placeholder', ATLASSIAN_BITBUCKET_APP_PASSWORD: FAKE } },
  { slug: 'openclaw', pkg: 'openclaw-mcp', env: { OPENCLAW_URL: DEAD, OPENCLAW_GATEWAY_TOKEN: FAKE } },
  { slug: 'deepseek', pkg: 'deepseek-mcp-server', env: { DEEPSEEK_API_KEY: FAKE } },
  { slug: 'agent-orchestrator', pkg: '@tejalgnrml/agent-orchestrator-mcp' },
  // the package's stdio MCP entry point (README: `mcp start`); it lists every tool of the CLI track.
  { slug: 'claude-flow-cli', pkg: '@claude-flow/cli', bin: 'claude-flow-mcp' },
  { slug: 'jira-answerai', pkg: '@answerai/jira-mcp', bin: 'answerai-jira-mcp', env: { JIRA_BASE_URL: DEAD, JIRA_USER_EMAIL: 'placeholder@example.invalid', JIRA_API_TOKEN: FAKE } },
  { slug: 'jira-cloud-aaronsb', pkg: '@aaronsb/jira-cloud-mcp', env: { JIRA_HOST: DEAD, JIRA_EMAIL: 'placeholder@example.invalid', JIRA_API_TOKEN: FAKE } },
  { slug: 'webresearch', pkg: '@mzxrai/mcp-webresearch' },
  { slug: 'hf-llmindset', pkg: '@llmindset/hf-mcp-server', env: { HF_TOKEN: FAKE } },
  { slug: 'ast-grep', pkg: '@notprolands/ast-grep-mcp' },
  // every toolset (the README's GSHEETS_TOOLSETS; the default is a subset).
  { slug: 'gsheets', pkg: 'mcp-gsheets', env: { GOOGLE_PROJECT_ID: 'placeholder-project', GOOGLE_APPLICATION_CREDENTIALS: `${SCRATCH}/missing-credentials.json`, GSHEETS_TOOLSETS: 'all' } },
  // writes and every toolset, as the README offers (`--allow_writes`, `--toolsets all`); an admin key pair for a dead site.
  { slug: 'discourse', pkg: '@discourse/mcp', args: ['--allow_writes', '--toolsets', 'all', '--auth_pairs', JSON.stringify([{ site: DEAD, api_key: FAKE, api_username: 'system' }])] },
  { slug: 'teams-floriscornel', pkg: '@floriscornel/teams-mcp' },
  { slug: 'miro', pkg: '@k-jarzyna/mcp-miro', args: ['--token', FAKE] },
  { slug: 'dataforseo', pkg: 'dataforseo-mcp-server', env: { DATAFORSEO_USERNAME: 'placeholder', DATAFORSEO_PASSWORD: FAKE } },
  { slug: 'ga-analytics', pkg: 'mcp-server-google-analytics', env: { GOOGLE_CLIENT_EMAIL: 'placeholder@placeholder.iam.gserviceaccount.com', GOOGLE_PRIVATE_KEY: FAKE, GA_PROPERTY_ID: '000000000' } },
  { slug: 'clarity', pkg: '@microsoft/clarity-mcp-server', env: { CLARITY_API_TOKEN: FAKE } },
  { slug: 'chatwork', pkg: '@chatwork/mcp-server', env: { CHATWORK_API_TOKEN: FAKE } },
  { slug: 'moltbook', pkg: 'moltbook-http-mcp', env: { MOLTBOOK_API_KEY: FAKE } },
  // second harvest: the server waits for an OAuth flow unless a token file exists, so a placeholder
  // authorized-user token is written into the scratch HOME (see below); nothing is authorized with it.
  { slug: 'google-docs-abonus', pkg: '@a-bonus/google-docs-mcp', env: { GOOGLE_CLIENT_ID: 'placeholder.apps.googleusercontent.com', GOOGLE_CLIENT_SECRET: FAKE } },
  // the default tool groups (everything except the opt-in tenants_destructive group).
  { slug: 'pulsemcp-cms-admin', pkg: 'pulsemcp-cms-admin-mcp-server', env: { PULSEMCP_ADMIN_API_KEY: FAKE, PULSEMCP_ADMIN_API_URL: DEAD } },
];

// Servers shipped as a native executable inside an npm package (a Go build in a platform package): the
// shared helper starts a bin with node, so these are started directly, with the same client, scratch dir,
// timeout and output format as harvestToFile.
export interface NativeTarget { slug: string; pkg: string; exe: string; args?: string[]; env?: Record<string, string> }
export const NATIVE: NativeTarget[] = [
  // PromQL against a dead Prometheus URL (without --url it looks for a Kubernetes cluster).
  { slug: 'prometheus-go', pkg: 'mcp-prometheus-linux-amd64', exe: 'bin/mcp-prometheus-linux-amd64', args: ['--url', DEAD] },
  // it asks the Nomad server for its leader at start and exits if none answers: NOMAD_ADDR is a stub on
  // loopback that answers only that request (see stubNomad below).
  { slug: 'nomad-go', pkg: '@kocierik/mcp-nomad-linux-x64', exe: 'bin/mcp-nomad', env: { NOMAD_ADDR: 'http://127.0.0.1:NOMAD_PORT', NOMAD_TOKEN: FAKE } },
  { slug: 'telegram-go', pkg: '@chaindead/telegram-mcp_linux_amd64', exe: 'telegram-mcp', env: { TG_APP_ID: '1', TG_API_HASH: FAKE, TG_SESSION_PATH: `${SCRATCH}/telegram-session.json` } },
];

/** A native target, listed by the shared helper (which starts `exe` directly) with the same client, scratch dir, timeout and output. */
function harvestNative(root: string, t: NativeTarget): Promise<void> {
  return harvestToFile(join(root, t.slug), t, join(import.meta.dirname, 'servers'), { client: 'toolgate-blind6', timeoutMs: 30000, scratch: SCRATCH, stderr: process.env.HARVEST_STDERR ? 'inherit' : 'ignore' });
}

/** Answers GET /v1/status/leader like a Nomad agent (nothing else), so the Nomad server can start. */
async function stubNomad(): Promise<{ port: number; close: () => void }> {
  const srv = createServer((req, res) => {
    if (req.url?.startsWith('/v1/status/leader')) { res.setHeader('content-type', 'application/json'); res.end('"127.0.0.1:4647"'); return; }
    res.statusCode = 404; res.end();
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return { port: (srv.address() as AddressInfo).port, close: () => srv.close() };
}

const harvest = (root: string, t: HarvestTarget): Promise<void> =>
  harvestToFile(join(root, t.slug), t, join(import.meta.dirname, 'servers'), { client: 'toolgate-blind6', timeoutMs: 30000, scratch: SCRATCH, stderr: process.env.HARVEST_STDERR ? 'inherit' : 'ignore' });

mkdirSync(SCRATCH, { recursive: true });
writeFileSync(join(SCRATCH, 'telegram-session.json'), '{}'); // an empty session: the server only checks that the file exists at start
mkdirSync(join(SCRATCH, '.config', 'google-docs-mcp'), { recursive: true });
writeFileSync(join(SCRATCH, '.config', 'google-docs-mcp', 'token.json'), JSON.stringify({ type: 'authorized_user', client_id: 'placeholder.apps.googleusercontent.com', client_secret: FAKE, refresh_token: FAKE }));
const root = process.argv[2];
const only = process.argv.slice(3);
for (const t of TARGETS) if (only.length === 0 || only.includes(t.slug)) await harvest(root, t);
const nomad = await stubNomad();
for (const t of NATIVE) {
  if (only.length > 0 && !only.includes(t.slug)) continue;
  const env = Object.fromEntries(Object.entries(t.env ?? {}).map(([k, v]) => [k, v.replace('NOMAD_PORT', String(nomad.port))]));
  await harvestNative(root, { ...t, env });
}
nomad.close();
process.exit(0);
