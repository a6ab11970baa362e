import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { FETCHES_PER_ADDRESS, isPrivateAddress } from '../src/auth/client-metadata.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openMemoryState } from '../src/state/memory.js';
import { approveOnConsentPage } from './helpers/oauth.js';
import { LENIENT, tempDir, writePolicy } from './helpers/toolgate.js';

const ADMIN = 'admin-token-for-cimd-tests-0123456';
const CALLBACK = 'http://127.0.0.1:18777/callback';

/** A client's web host: serves whatever a test puts at a path, and counts the requests it gets. */
class DocumentHost {
  readonly docs = new Map<string, { status?: number; type?: string; body: string; headers?: Record<string, string> }>();
  readonly hits = new Map<string, number>();
  private server?: Server;
  port = 0;
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      this.hits.set(req.url!, (this.hits.get(req.url!) ?? 0) + 1);
      const d = this.docs.get(req.url!);
      if (!d) { res.writeHead(404).end(); return; }
      res.writeHead(d.status ?? 200, { 'content-type': d.type ?? 'application/json', ...d.headers }).end(d.body);
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.port = (this.server!.address() as { port: number }).port;
  }
  url(path: string, host = '127.0.0.1'): string { return `http://${host}:${this.port}${path}`; }
  document(path: string, fields: Record<string, unknown> = {}, host = '127.0.0.1'): string {
    const id = this.url(path, host);
    this.docs.set(path, { body: JSON.stringify({ client_id: id, client_name: 'Doc Client', redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none', ...fields }) });
    return id;
  }
  stop(): Promise<void> { return new Promise((r) => this.server ? this.server.close(() => r()) : r()); }
}

async function startGateway(oauth: Record<string, unknown>): Promise<{ gateway: Gateway; base: string; audit: AuditLog }> {
  const dir = tempDir();
  const config = GatewayConfigSchema.parse({
    listen: '127.0.0.1:0', admin: { token: ADMIN }, oauth: { builtin: true, ...oauth },
    servers: { srv: { command: process.execPath, args: [LENIENT], policy: writePolicy(dir, { version: '1', default: 'allow' }) } },
  });
  const audit = new AuditLog(join(dir, 'audit.db'));
  const gateway = new Gateway({ config, state: openMemoryState(), audit, log: pino({ level: 'silent' }) });
  return { gateway, audit, base: `http://127.0.0.1:${(await gateway.start()).port}` };
}

const verifier = randomBytes(32).toString('base64url');
const challenge = createHash('sha256').update(verifier).digest('base64url');

describe('client ID metadata documents at the built-in authorization server', () => {
  const host = new DocumentHost();
  let gw: Awaited<ReturnType<typeof startGateway>>;
  const authorize = (clientId: string, extra: Record<string, string> = {}) => new URL(`${gw.base}/oauth/authorize?${new URLSearchParams({
    response_type: 'code', client_id: clientId, redirect_uri: CALLBACK, state: 'st-1', code_challenge: challenge, code_challenge_method: 'S256', resource: `${gw.base}/mcp/srv`, ...extra,
  })}`);

  before(async () => {
    await host.start();
    gw = await startGateway({ client_metadata_allow_hosts: ['127.0.0.1'] });
  });
  after(async () => {
    await gw.gateway.stop();
    gw.audit.close();
    await host.stop();
  });

  it('advertises them, and the RFC 9207 iss parameter, in its RFC 8414 metadata', async () => {
    const meta = await (await fetch(`${gw.base}/.well-known/oauth-authorization-server`)).json();
    assert.equal(meta.client_id_metadata_document_supported, true);
    assert.equal(meta.authorization_response_iss_parameter_supported, true);
  });

  it('a client_id URL goes through consent and token exchange with no registration; the redirect carries state and iss', async () => {
    const id = host.document('/clients/ok.json');
    const page = await fetch(authorize(id));
    const html = await page.text();
    assert.equal(page.status, 200);
    assert.ok(html.includes('Doc Client') && html.includes(id.replace(/&/g, '&amp;')), 'the consent page names the client and the URL it is known by');
    const approved = await approveOnConsentPage(authorize(id), { adminToken: ADMIN, label: 'doc-client' });
    const to = approved.location!;
    assert.equal(`${to.origin}${to.pathname}`, CALLBACK);
    assert.equal(to.searchParams.get('state'), 'st-1');
    assert.equal(to.searchParams.get('iss'), gw.base);
    const token = await (await fetch(`${gw.base}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code: to.searchParams.get('code')!, code_verifier: verifier, client_id: id, redirect_uri: CALLBACK }) })).json();
    assert.match(token.access_token, /^tg_/);
    assert.equal(host.hits.get('/clients/ok.json'), 1, 'fetched once: the consent page, the form and the token exchange used the cached document');
    // Approved now: its errors go back to its redirect URI, with iss (RFC 9207) as on success.
    const error = await fetch(authorize(id, { code_challenge_method: 'plain' }), { redirect: 'manual' });
    const back = new URL(error.headers.get('location')!);
    assert.equal(back.searchParams.get('error'), 'invalid_request');
    assert.equal(back.searchParams.get('iss'), gw.base);
    assert.equal(back.searchParams.get('state'), 'st-1');
  });

  it('never sends the browser to a redirect_uri the document does not list', async () => {
    const id = host.document('/clients/other-cb.json');
    const res = await fetch(authorize(id, { redirect_uri: 'https://attacker.example/cb' }), { redirect: 'manual' });
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('location'), null);
    assert.match(await res.text(), /redirect_uri is not one this client registered/);
  });

  const refusal = async (id: string) => {
    const res = await fetch(authorize(id), { redirect: 'manual' });
    assert.equal(res.headers.get('location'), null, 'a refused client is never redirected to');
    return { status: res.status, text: await res.text() };
  };

  it('refuses documents that are not what the client_id says: another client_id, a secret, a bad redirect URI, not JSON, too large, a redirect', async () => {
    host.document('/clients/mismatch.json', { client_id: 'https://elsewhere.example/client.json' });
    assert.match((await refusal(host.url('/clients/mismatch.json'))).text, /client_id is not the URL/);
    assert.match((await refusal(host.document('/clients/secret.json', { client_secret: 's3cret' }))).text, /no client_secret/);
    assert.match((await refusal(host.document('/clients/confidential.json', { token_endpoint_auth_method: 'client_secret_basic' }))).text, /public clients only/);
    assert.match((await refusal(host.document('/clients/js.json', { redirect_uris: ['javascript:alert(1)'] }))).text, /refused/);
    host.docs.set('/clients/html.json', { type: 'text/html', body: '<html></html>' });
    assert.match((await refusal(host.url('/clients/html.json'))).text, /not served as application\/json/);
    host.docs.set('/clients/big.json', { body: JSON.stringify({ client_id: host.url('/clients/big.json'), redirect_uris: [CALLBACK], pad: 'x'.repeat(6000) }) });
    assert.match((await refusal(host.url('/clients/big.json'))).text, /larger than 5120 bytes/);
    host.docs.set('/clients/moved.json', { status: 302, body: '', headers: { location: host.url('/clients/ok.json') } });
    assert.match((await refusal(host.url('/clients/moved.json'))).text, /HTTP 302/);
  });

  it('refuses client_id URLs without a path, with a query, fragment, user info or dot segments, before fetching anything', async () => {
    const before = [...host.hits.values()].reduce((a, b) => a + b, 0);
    for (const id of [host.url('/'), `${host.url('/c.json')}?x=1`, `${host.url('/c.json')}#f`, `http://u:p@127.0.0.1:${host.port}/c.json`, host.url('/a/../c.json').replace('/c.json', '/a/../c.json')]) {
      const r = await refusal(id);
      assert.equal(r.status, 400, id);
    }
    assert.equal([...host.hits.values()].reduce((a, b) => a + b, 0), before, 'no request reached the host');
  });
});

describe('client ID metadata documents: no fetches to private addresses, plain http or at all unless configured', () => {
  const host = new DocumentHost();
  before(() => host.start());
  after(() => host.stop());

  it('by default: http is refused, and https to a loopback name or address is refused without a request', async () => {
    const gw = await startGateway({});
    try {
      const q = (id: string) => `${gw.base}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: id, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: 'S256', resource: `${gw.base}/mcp/srv` })}`;
      host.document('/c.json');
      const texts: string[] = [];
      for (const id of [host.url('/c.json'), `https://127.0.0.1:${host.port}/c.json`, `https://localhost:${host.port}/c.json`, `https://[::ffff:7f00:1]:${host.port}/c.json`, 'https://169.254.169.254/latest/meta-data.json']) {
        const res = await fetch(q(id), { redirect: 'manual' });
        assert.equal(res.status, 400, id);
        texts.push(await res.text());
      }
      assert.match(texts[0], /must be https/);
      assert.match(texts[1], /private address/);
      assert.match(texts[2], /resolves to a private address/);
      assert.match(texts[3], /private address/);
      assert.match(texts[4], /private address/);
      assert.equal(host.hits.size, 0, 'the gateway made no request to the loopback host');
    } finally {
      await gw.gateway.stop();
      gw.audit.close();
    }
  });

  it('client_metadata_documents: false turns them off, in the metadata too', async () => {
    const gw = await startGateway({ client_metadata_documents: false, client_metadata_allow_hosts: ['127.0.0.1'] });
    try {
      assert.equal((await (await fetch(`${gw.base}/.well-known/oauth-authorization-server`)).json()).client_id_metadata_document_supported, false);
      const id = host.document('/off.json');
      const res = await fetch(`${gw.base}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: id, redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: 'S256', resource: `${gw.base}/mcp/srv` })}`, { redirect: 'manual' });
      assert.equal(res.status, 400);
      assert.match(await res.text(), /does not use client ID metadata documents/);
      assert.equal(host.hits.get('/off.json'), undefined);
    } finally {
      await gw.gateway.stop();
      gw.audit.close();
    }
  });

  it('one client address makes the gateway fetch at most so many documents a minute (it is nobody\'s anonymous GET relay)', async () => {
    const gw = await startGateway({ client_metadata_allow_hosts: ['127.0.0.1'] });
    try {
      const status = async (n: number) => (await fetch(`${gw.base}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: host.url(`/relay/${n}.json`), redirect_uri: CALLBACK, code_challenge: challenge, code_challenge_method: 'S256', resource: `${gw.base}/mcp/srv` })}`, { redirect: 'manual' })).status;
      for (let n = 0; n < FETCHES_PER_ADDRESS; n++) assert.equal(await status(n), 400, 'each unknown document is fetched (404) and refused');
      assert.equal(await status(FETCHES_PER_ADDRESS), 429);
      assert.equal([...host.hits.keys()].filter((k) => k.startsWith('/relay/')).length, FETCHES_PER_ADDRESS, 'the request past the limit fetched nothing');
      assert.equal(await status(0), 400, 'a document already fetched (its refusal cached) costs no fetch');
    } finally {
      await gw.gateway.stop();
      gw.audit.close();
    }
  });

  it('judges IPv4-mapped and NAT64 IPv6 addresses by the IPv4 address inside', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '192.168.1.1', '172.16.0.1', '100.64.0.1', '0.0.0.0', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::a9fe:a9fe', '::ffff:10.0.0.1']) {
      assert.equal(isPrivateAddress(a), true, a);
    }
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) assert.equal(isPrivateAddress(a), false, a);
  });
});
