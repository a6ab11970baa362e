import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openMemoryState } from '../src/state/memory.js';
import { installSuite, readChecks, suiteProcess, table } from './helpers/conformance.js';
import { approveOnConsentPage } from './helpers/oauth.js';
import { LENIENT, tempDir, writePolicy } from './helpers/toolgate.js';

/**
 * The official conformance suite's two authorization-server scenarios (`conformance authorization`,
 * 0.2.0-alpha.12) against the gateway's built-in authorization server: RFC 8414 metadata (with
 * client ID metadata document support), and the authorization code grant with PKCE, where this test
 * is the person in the browser (it signs in on the consent page the suite's URL opens). Once with a
 * dynamically registered client, once with a client known only by its metadata document URL.
 * A few seconds.
 */
const ADMIN = 'admin-token-for-conformance-0123456';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => resolve(p)); });
  });
}

describe('conformance authorization scenarios against the built-in authorization server', { timeout: 300_000 }, () => {
  let gateway: Gateway;
  let audit: AuditLog;
  let base: string;
  const docs = createHttpServer((req, res) => { const d = documents.get(req.url!); res.writeHead(d ? 200 : 404, { 'content-type': 'application/json' }).end(d ?? ''); });
  const documents = new Map<string, string>();
  let docsBase: string;

  before(async () => {
    await installSuite();
    await new Promise<void>((r) => docs.listen(0, '127.0.0.1', r));
    docsBase = `http://127.0.0.1:${(docs.address() as { port: number }).port}`;
    const dir = tempDir();
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0', admin: { token: ADMIN },
      oauth: { builtin: true, client_metadata_allow_hosts: ['127.0.0.1'] },
      servers: { srv: { command: process.execPath, args: [LENIENT], policy: writePolicy(dir, { version: '1', default: 'allow' }) } },
    });
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state: openMemoryState(), audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
  });

  after(async () => {
    await gateway?.stop();
    audit?.close();
    docs.close();
  });

  /** Runs both scenarios; signs in on the consent page when the suite prints the authorization URL, then lets the browser land on its callback. */
  async function run(clientId: string, port: number) {
    const out = tempDir('toolgate-conformance-auth-');
    const child = suiteProcess(['authorization', '--url', base, '--client-id', clientId, '--resource', `${base}/mcp/srv`, '-p', String(port), '-o', out]);
    let output = '';
    let signedIn: Promise<void> | undefined;
    child.stdout!.on('data', (d: Buffer) => {
      output += d.toString();
      const m = /^(http:\/\/\S+\/oauth\/authorize\?\S+)$/mu.exec(output);
      if (m && !signedIn) {
        signedIn = (async () => {
          const consent = await approveOnConsentPage(new URL(m[1]), { adminToken: ADMIN, label: 'conformance' });
          assert.ok(consent.location, `the consent page redirected (${consent.status}: ${consent.page.slice(-500)})`);
          await (await fetch(consent.location)).text();
        })();
      }
    });
    child.stderr!.on('data', (d: Buffer) => { output += d.toString(); });
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    await signedIn;
    return { code, output, checks: readChecks(out) };
  }

  function assertAllPass(r: Awaited<ReturnType<typeof run>>, t: { diagnostic: (s: string) => void }) {
    for (const line of table({ result: r.checks }).split('\n')) t.diagnostic(line);
    assert.deepEqual([...r.checks.keys()].sort(), [
      'authorization-code-grant · authorization-code-grant · AuthorizationCodeGrant',
      'authorization-server-metadata-endpoint · authorization-server-metadata · AuthorizationServerMetadata',
      'authorization-server-metadata-endpoint · authorization-server-metadata-cimd · AuthorizationServerMetadataCIMD',
    ], r.output.slice(-3000));
    for (const [k, c] of r.checks) assert.equal(c.status, 'SUCCESS', `${k}: ${c.error ?? ''}\n${r.output.slice(-2000)}`);
    assert.equal(r.code, 0, r.output.slice(-2000));
  }

  it('both pass with a dynamically registered client', async (t) => {
    const port = await freePort();
    const reg = await (await fetch(`${base}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name: 'conformance', redirect_uris: [`http://127.0.0.1:${port}/callback`] }) })).json();
    assertAllPass(await run(reg.client_id, port), t);
  });

  it('both pass with a client ID metadata document as the client_id', async (t) => {
    const port = await freePort();
    const id = `${docsBase}/conformance-client.json`;
    documents.set('/conformance-client.json', JSON.stringify({ client_id: id, client_name: 'conformance (CIMD)', redirect_uris: [`http://127.0.0.1:${port}/callback`], token_endpoint_auth_method: 'none' }));
    assertAllPass(await run(id, port), t);
  });
});
