import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { generateKeyPair, SignJWT, UnsecuredJWT } from 'jose';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Grants } from '../src/grants/grants.js';
import { Gateway } from '../src/gateway/server.js';
import { openMemoryState } from '../src/state/memory.js';
import type { StateStore } from '../src/state/types.js';
import { newSigningKey, TestIdentityProvider, type SigningKey } from './helpers/oidc.js';
import { denialText, EVERYTHING, MEMORY, tempDir, writePolicy } from './helpers/toolgate.js';

describe('OAuth with an external identity provider (oidc-provider issuing JWT access tokens)', () => {
  const idp = new TestIdentityProvider();
  let k1: SigningKey;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  let staticToken: string;
  let servers: Record<string, unknown>;

  before(async () => {
    const dir = tempDir();
    k1 = await newSigningKey('k1');
    await idp.start([k1]);
    const policy = writePolicy(dir, {
      version: '1', default: 'allow',
      tools: { 'get-sum': { require: [{ conditions: [{ path: 'grant.tags', op: 'contains', value: 'ops' }], on_deny: 'get-sum is for the ops group' }] } },
    });
    const limited = writePolicy(dir, { version: '1', default: 'allow', tools: { echo: { limits: [{ counter: 'echo', window: 'hour', max: 1, scope: 'grant' }] } } }, 'limited.json');
    servers = {
      everything: { command: process.execPath, args: [EVERYTHING], policy },
      limited: { command: process.execPath, args: [EVERYTHING], policy: limited },
      memory: { command: process.execPath, args: [MEMORY], policy, env: { MEMORY_FILE_PATH: join(dir, 'memory.jsonl') } },
    };
    state = openMemoryState();
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config: GatewayConfigSchema.parse({ listen: '127.0.0.1:0', servers }), state, audit, log: pino({ level: process.env.TEST_LOG ?? 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    // The audience is each server's URL (RFC 8707), known once the port is.
    gateway.setConfig(GatewayConfigSchema.parse({ listen: '127.0.0.1:0', servers, oauth: { issuer: idp.issuer, audience: `${base}/mcp/{server}`, jwks_cooldown: '0s' } }));
    staticToken = (await new Grants(state.grants).create({ server: 'everything', label: 'static-ci' })).token;
  });

  after(async () => {
    await gateway.stop();
    audit.close();
    await idp.stop();
  });

  const resource = (server = 'everything') => `${base}/mcp/${server}`;
  const post = (token: string | undefined, server = 'everything') => fetch(resource(server), {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
  });
  async function refused(token: string, reason: RegExp): Promise<void> {
    const res = await post(token);
    assert.equal(res.status, 401);
    assert.match(res.headers.get('www-authenticate')!, /^Bearer realm="toolgate", resource_metadata="[^"]+", error="invalid_token"/);
    assert.match((await res.json()).error.message, reason);
  }
  const claims = (over: Record<string, unknown> = {}) => ({ sub: 'forger', groups: ['ops'], ...over });
  const now = () => Math.floor(Date.now() / 1000);

  it('names the identity provider in each server URL\'s metadata, and points at it from the 401', async () => {
    const res = await post(undefined);
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('www-authenticate'), `Bearer realm="toolgate", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp/everything"`);
    const meta = await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp/everything`)).json();
    assert.deepEqual(meta.authorization_servers, [idp.issuer]);
    assert.equal(meta.resource, resource());
    assert.equal((await fetch(`${base}/.well-known/oauth-authorization-server`)).status, 404, 'the gateway is no authorization server in this mode');
  });

  it('accepts the provider\'s JWT for this server: sub becomes the grant label, groups its tags, and policy decides by them', async () => {
    const connect = async (token: string) => {
      const client = new Client({ name: 'jwt-client', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(resource()), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      return client;
    };
    const ops = await connect(await idp.token(resource()));
    assert.ok(!(await ops.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } })).isError, 'agent-ci is in ops');
    await ops.close();
    const guest = await connect(await idp.token(resource(), 'agent-other', 'agent-other-secret-012345678'));
    assert.match(denialText(await guest.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } }))!, /for the ops group/);
    assert.ok(!(await guest.callTool({ name: 'echo', arguments: { message: 'hi' } })).isError);
    await guest.close();
    const labels = new Set(audit.query({ kind: 'call' }).map((r) => r.grant_label));
    assert.ok(labels.has('agent-ci') && labels.has('agent-other'), `audited under the sub claim (${[...labels]})`);
  });

  it('refuses a token for another server (audience), expired, from another issuer, signed by an unknown key, alg none, and HS256 signed with the public key', async () => {
    await refused(await idp.token(resource('memory')), /audience/);
    assert.equal((await post(await idp.token(resource('memory')), 'memory')).status, 200, 'the same kind of token works where it belongs');
    const signed = (payload: Record<string, unknown>, key = k1) => new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: key.jwk.kid, typ: 'at+jwt' });
    await refused(await signed(claims()).setIssuer(idp.issuer).setAudience(resource()).setIssuedAt(now() - 600).setExpirationTime(now() - 300).sign(k1.privateKey), /expired/);
    await refused(await signed(claims()).setIssuer('https://other-issuer.example').setAudience(resource()).setExpirationTime('5m').sign(k1.privateKey), /another issuer/);
    await refused(await signed(claims()).setIssuer(idp.issuer).setAudience(resource()).setExpirationTime('5m').setNotBefore(now() + 3600).sign(k1.privateKey), /not valid yet/);
    await refused(await signed(claims()).setIssuer(idp.issuer).setAudience(resource()).sign(k1.privateKey), /exp/);
    const rogue = await newSigningKey('rogue');
    await refused(await signed(claims(), rogue).setIssuer(idp.issuer).setAudience(resource()).setExpirationTime('5m').sign(rogue.privateKey), /key the issuer does not publish/);
    const sameKidOtherKey = (await generateKeyPair('RS256')).privateKey;
    await refused(await signed(claims()).setIssuer(idp.issuer).setAudience(resource()).setExpirationTime('5m').sign(sameKidOtherKey), /signature/);
    await refused(new UnsecuredJWT(claims()).setIssuer(idp.issuer).setAudience(resource()).setExpirationTime('5m').encode(), /algorithm|not a valid JWT/);
    const publicKeyAsSecret = new TextEncoder().encode(JSON.stringify(k1.publicJwk));
    await refused(await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', kid: 'k1' }).setIssuer(idp.issuer).setAudience(resource()).setExpirationTime('5m').sign(publicKeyAsSecret), /algorithm/);
  });

  it('picks up a key rotation: a token signed with a new key is accepted once the provider publishes it', async () => {
    const k2 = await newSigningKey('k2');
    idp.use([k2, k1]);
    const token = await idp.token(resource());
    assert.equal(JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()).kid, 'k2');
    assert.equal((await post(token)).status, 200);
  });

  it('static grant tokens keep working beside the identity provider', async () => {
    assert.equal((await post(staticToken)).status, 200);
    assert.equal((await post('tg_not-a-grant')).status, 401);
  });

  it('a label claim that is not unique: two subjects with the same label keep their own per-grant limits (keyed by sub)', async () => {
    gateway.setConfig(GatewayConfigSchema.parse({ listen: '127.0.0.1:0', servers, oauth: { issuer: idp.issuer, audience: `${base}/mcp/{server}`, jwks_cooldown: '0s', label_claim: 'team' } }));
    try {
      const token = (sub: string) => new SignJWT({ sub, team: 'payments' }).setProtectedHeader({ alg: 'RS256', kid: k1.jwk.kid, typ: 'at+jwt' })
        .setIssuer(idp.issuer).setAudience(resource('limited')).setIssuedAt().setExpirationTime('5m').sign(k1.privateKey);
      const connect = async (sub: string) => {
        const client = new Client({ name: sub, version: '1' });
        await client.connect(new StreamableHTTPClientTransport(new URL(resource('limited')), { requestInit: { headers: { authorization: `Bearer ${await token(sub)}` } } }));
        return client;
      };
      const alice = await connect('alice');
      const mallory = await connect('mallory');
      assert.equal(denialText(await alice.callTool({ name: 'echo', arguments: { message: 'a' } })), undefined);
      assert.match(denialText(await alice.callTool({ name: 'echo', arguments: { message: 'a' } }))!, /Limit reached/);
      assert.equal(denialText(await mallory.callTool({ name: 'echo', arguments: { message: 'm' } })), undefined, 'mallory has the same label, not the same limit');
      assert.ok(audit.query({ kind: 'call', server: 'limited' }).every((r) => r.grant_label === 'payments'), 'the label is what people read');
      await alice.close();
      await mallory.close();
    } finally {
      gateway.setConfig(GatewayConfigSchema.parse({ listen: '127.0.0.1:0', servers, oauth: { issuer: idp.issuer, audience: `${base}/mcp/{server}`, jwks_cooldown: '0s' } }));
    }
  });

  it('refuses symmetric algorithms in the configuration', () => {
    const r = GatewayConfigSchema.safeParse({ oauth: { issuer: 'https://idp.example', audience: 'x', algorithms: ['HS256'] } });
    assert.equal(r.success, false);
  });
});
