import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema, type GatewayConfig } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { StateStore } from '../src/state/types.js';
import { FIXTURES, tempDir } from './helpers/toolgate.js';

const ADMIN = 'stream-revoke-admin-token-0123456789abcdef';
const NEW_ADMIN = 'stream-revoke-new-admin-token-0123456789ab';

/** Whether the stream ends within `ms` (its reader reports done), reading and dropping what it sends. */
async function endsWithin(body: ReadableStream<Uint8Array>, ms: number): Promise<boolean> {
  const reader = body.getReader();
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const next = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), deadline - Date.now()))]);
    if (next === null) break;
    if (next.done) return true;
  }
  await reader.cancel().catch(() => {});
  return false;
}

/**
 * Signing out, or a new admin token, must shut out whoever held the old credential: an event
 * stream opened with it (live audit, approvals with their arguments) must end too, not keep
 * streaming for as long as the connection stays open.
 */
describe('admin event streams end when their credential does', () => {
  let state: StateStore; let audit: AuditLog; let gateway: Gateway; let base: string; let config: GatewayConfig;

  before(async () => {
    const dir = tempDir('toolgate-stream-revoke-');
    config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0', admin: { token: ADMIN },
      servers: { tiny: { command: process.execPath, args: [join(FIXTURES, 'poisoned-server.mjs')] } },
    });
    state = openSqliteState(join(dir, 'state.db'));
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
  });

  after(async () => {
    await gateway?.stop();
    audit?.close();
    await state?.close();
  });

  it('signing out of the dashboard ends the streams the session opened', async () => {
    const signIn = await fetch(`${base}/ui/session`, { method: 'POST', headers: { origin: base, 'content-type': 'application/json' }, body: JSON.stringify({ token: ADMIN }) });
    assert.equal(signIn.status, 200);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0];
    const { csrf } = await signIn.json() as { csrf: string };
    const auditStream = await fetch(`${base}/api/audit/stream`, { headers: { cookie } });
    const approvalStream = await fetch(`${base}/api/approvals/stream`, { headers: { cookie } });
    assert.equal(auditStream.status, 200);
    assert.equal(approvalStream.status, 200);
    const out = await fetch(`${base}/ui/session`, { method: 'DELETE', headers: { cookie, origin: base, 'x-csrf-token': csrf } });
    assert.equal(out.status, 200);
    assert.equal((await fetch(`${base}/api/audit`, { headers: { cookie } })).status, 401, 'the cookie no longer opens the API');
    assert.ok(await endsWithin(auditStream.body!, 3000), 'the live audit stream ended with the session');
    assert.ok(await endsWithin(approvalStream.body!, 3000), 'the approvals stream ended with the session');
  });

  it('a new admin token ends the streams opened with the old one', async () => {
    const stream = await fetch(`${base}/api/approvals/stream`, { headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(stream.status, 200);
    gateway.setConfig({ ...config, admin: { ...config.admin!, token: NEW_ADMIN } });
    assert.equal((await fetch(`${base}/api/approvals`, { headers: { authorization: `Bearer ${ADMIN}` } })).status, 401);
    assert.ok(await endsWithin(stream.body!, 3000), 'the stream opened with the old token ended');
  });
});
