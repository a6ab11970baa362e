// Issue 25 item 1: subscriptions/listen carries list-changed notifications to 2026-07-28 clients
// (which have no session stream to receive them unsolicited), on `run` and on `serve`; the list
// they then fetch is still filtered by the policy.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { Grants } from '../src/grants/grants.js';
import { openMemoryState } from '../src/state/memory.js';
import type { StateStore } from '../src/state/types.js';
import type { Client } from '@modelcontextprotocol/client';
import { RECORDING, until } from './helpers/approvals.js';
import { MODES, modernHttp, modernRun, type Mode } from './helpers/modern.js';
import { tempDir, writePolicy } from './helpers/toolgate.js';

const POLICY = { version: '1', default: 'allow', tools: { delete_file: { action: 'deny' }, purge_notes: { action: 'deny' } } };

/** Connects with listChanged for tools; adds a tool upstream; the client hears of it and re-lists, filtered. */
async function hearsListChanged(connect: (options: object) => Promise<Client>, meanwhile: () => Promise<void> = async () => {}): Promise<void> {
  const lists: string[][] = [];
  const client = await connect({ listChanged: { tools: { onChanged: (err: Error | null, tools: { name: string }[] | null) => { if (!err && tools) lists.push(tools.map((t) => t.name)); } } } });
  try {
    assert.ok(client.autoOpenedSubscription, 'the listen subscription was acknowledged at connect');
    assert.deepEqual(client.autoOpenedSubscription.honoredFilter, { toolsListChanged: true });
    await meanwhile();
    await client.callTool({ name: 'add_tool', arguments: {} });
    // purge_notes was added upstream; toolgate lists it and judges it like any tool: hidden (denied).
    const listed = await until(() => lists[0], 'the list_changed notification to reach the client');
    assert.ok(listed.includes('add_tool') && !listed.includes('purge_notes') && !listed.includes('delete_file'), listed.join());
  } finally {
    await client.close();
  }
}

for (const mode of MODES) {
  describe(`subscriptions/listen (${mode})`, () => {
    it('toolgate run', async () => {
      const home = tempDir();
      await hearsListChanged(async (options) => (await modernRun(mode as Mode, ['-p', writePolicy(home, POLICY), '--', process.execPath, RECORDING], home, {}, options)).client);
    });
  });
}

describe('subscriptions/listen on toolgate serve', () => {
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  const tokens: string[] = [];

  before(async () => {
    const dir = tempDir();
    // Idle after a second: an open listen stream must keep its internal session all the same.
    const config = GatewayConfigSchema.parse({ listen: '127.0.0.1:0', sessions: { idle_timeout: '1s', idle_timeout_unused: '1s' }, servers: { rec: { command: process.execPath, args: [RECORDING], policy: writePolicy(dir, POLICY) } } });
    state = openMemoryState();
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    const grants = new Grants(state.grants);
    for (const label of [...MODES, 'shared']) tokens.push((await grants.create({ server: 'rec', label })).token);
  });

  after(async () => {
    await gateway.stop();
    audit.close();
    await state.close();
  });

  it('two clients of one grant, both with subscription id listen:0: one closing leaves the other subscribed', async () => {
    const heard: string[][] = [];
    const options = (into: string[][]) => ({ listChanged: { tools: { onChanged: (err: Error | null, tools: { name: string }[] | null) => { if (!err && tools) into.push(tools.map((t) => t.name)); } } } });
    const a = await modernHttp('auto', `${base}/mcp/rec`, tokens[2], options([]));
    const b = await modernHttp('auto', `${base}/mcp/rec`, tokens[2], options(heard));
    await a.autoOpenedSubscription!.close(); // aborts its stream and sends notifications/cancelled for "listen:0"
    await a.close();
    try {
      await b.callTool({ name: 'add_tool', arguments: {} });
      await until(() => heard[0], 'the other client to hear the change');
    } finally {
      await b.close();
    }
  });

  MODES.forEach((mode, i) => {
    it(mode, async () => {
      await hearsListChanged((options) => modernHttp(mode, `${base}/mcp/rec`, tokens[i], options), async () => {
        await new Promise((r) => setTimeout(r, 1100));
        (gateway as any).live.reap();
        assert.ok(gateway.sessionCount > 0, 'the internal session with a listen stream open was not reaped');
      });
    });
  });
});
