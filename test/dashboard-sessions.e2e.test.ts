import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openMemoryState } from '../src/state/memory.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { StateStore } from '../src/state/types.js';
import { tempDir } from './helpers/toolgate.js';

const ADMIN = 'dashboard-sessions-admin-token-0123456789';

/** A gateway on the given state, as `toolgate serve` would run it; stopped with everything it opened. */
async function startGateway(state: StateStore, dir: string): Promise<{ base: string; stop(): Promise<void> }> {
  const audit = new AuditLog(join(dir, `audit-${Math.random().toString(36).slice(2)}.db`));
  const gateway = new Gateway({ config: GatewayConfigSchema.parse({ listen: '127.0.0.1:0', admin: { token: ADMIN } }), state, audit, log: pino({ level: 'silent' }) });
  const { port } = await gateway.start();
  return { base: `http://127.0.0.1:${port}`, stop: async () => { await gateway.stop(); audit.close(); } };
}

async function signIn(base: string): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`${base}/ui/session`, { method: 'POST', headers: { origin: base, 'content-type': 'application/json' }, body: JSON.stringify({ token: ADMIN }) });
  assert.equal(res.status, 200);
  const { csrf } = await res.json() as { csrf: string };
  return { cookie: res.headers.get('set-cookie')!.split(';')[0], csrf };
}

async function apiStatus(base: string, cookie: string): Promise<number> {
  const res = await fetch(`${base}/api/servers`, { headers: { cookie } });
  await res.arrayBuffer();
  return res.status;
}

async function signOut(base: string, s: { cookie: string; csrf: string }): Promise<void> {
  const res = await fetch(`${base}/ui/session`, { method: 'DELETE', headers: { cookie: s.cookie, origin: base, 'x-csrf-token': s.csrf } });
  await res.arrayBuffer();
  assert.equal(res.status, 200);
}

describe('dashboard sessions live in the state store', () => {
  it('sign-out sticks across a restart on the same state, and the sessions still signed in stay so', async () => {
    const dir = tempDir('toolgate-dashboard-sessions-');
    const file = join(dir, 'state.db');
    let state = openSqliteState(file);
    let gateway = await startGateway(state, dir);
    const out = await signIn(gateway.base);
    const stays = await signIn(gateway.base);
    assert.equal(await apiStatus(gateway.base, out.cookie), 200);
    await signOut(gateway.base, out);
    assert.equal(await apiStatus(gateway.base, out.cookie), 401, 'signed out');

    await gateway.stop();
    await state.close();
    state = openSqliteState(file);
    gateway = await startGateway(state, dir);
    try {
      assert.equal(await apiStatus(gateway.base, out.cookie), 401, 'a restart does not bring a signed-out session back');
      const session = await fetch(`${gateway.base}/ui/session`, { headers: { cookie: out.cookie } });
      assert.equal(session.status, 401);
      await session.arrayBuffer();
      assert.equal(await apiStatus(gateway.base, stays.cookie), 200, 'a session still signed in survives the restart');
      await signOut(gateway.base, stays);
      assert.equal(await apiStatus(gateway.base, stays.cookie), 401);
    } finally {
      await gateway.stop();
      await state.close();
    }
  });

  it('with memory state, a restart signs everyone out rather than bringing anyone back', async () => {
    const dir = tempDir('toolgate-dashboard-sessions-');
    const first = openMemoryState();
    let gateway = await startGateway(first, dir);
    const out = await signIn(gateway.base);
    await signOut(gateway.base, out);
    const stays = await signIn(gateway.base);
    await gateway.stop();
    await first.close();
    const second = openMemoryState();
    gateway = await startGateway(second, dir);
    try {
      assert.equal(await apiStatus(gateway.base, out.cookie), 401);
      assert.equal(await apiStatus(gateway.base, stays.cookie), 401, 'memory state is gone with the process: so is every session');
    } finally {
      await gateway.stop();
      await second.close();
    }
  });
});
