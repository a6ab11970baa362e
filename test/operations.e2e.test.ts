import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { BIN, LENIENT, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const exec = promisify(execFile);

describe('operations: status and replay', () => {
  it('status shows the instance, calls per minute and top denials; replay shows what a new policy would change', async () => {
    const home = tempDir();
    const env = testEnv(home);
    const policy = writePolicy(home, { version: '1', default: 'allow', tools: { delete_all: { action: 'deny' } } });
    const raw = new RawSession(['-p', policy, '--audit-args', '--name', 'shop', '--', process.execPath, LENIENT], env);
    await raw.initialize();
    await raw.request(1, 'tools/call', { name: 'refund', arguments: { amount: 50, token: 'secret-value' } });
    await raw.request(2, 'tools/call', { name: 'refund', arguments: { amount: 5000 } });
    await raw.request(3, 'tools/call', { name: 'delete_all', arguments: {} });
    await raw.request(4, 'tools/call', { name: 'delete_all', arguments: {} });

    const status = JSON.parse((await exec(process.execPath, [BIN, 'status', '--json'], { env })).stdout);
    assert.equal(status.instances.length, 1);
    assert.deepEqual(status.instances[0].servers, ['shop']);
    assert.deepEqual(status.callsLastMinute, [{ server: 'shop', calls: 4, denied: 2 }]);
    assert.deepEqual(status.topDenialsLastHour[0], { server: 'shop', tool: 'delete_all', rule: '/tools/delete_all/action', count: 2 });
    const text = (await exec(process.execPath, [BIN, 'status'], { env })).stdout;
    assert.match(text, /shop: 4 \(2 denied\)/);
    await raw.close();

    const stricter = writePolicy(home, { version: '1', default: 'allow', tools: { refund: { deny_if: [{ conditions: [{ path: 'args.amount', op: 'gt', value: 100 }] }] } } }, 'new.json');
    const out = JSON.parse((await exec(process.execPath, [BIN, 'replay', '--policy', stricter, '--since', '1h', '--json'], { env })).stdout);
    assert.equal(out.examined, 4);
    const changed = out.changed.map((c: any) => [c.tool, c.before.decision, c.after.decision, c.after.rule]);
    assert.deepEqual(changed, [
      ['refund', 'allow', 'deny', '/tools/refund/deny_if/0'],
      ['delete_all', 'deny', 'allow', '(default)'],
      ['delete_all', 'deny', 'allow', '(default)'],
    ]);
    assert.ok(out.changed.every((c: any) => c.argsKnown));
    const audit = (await exec(process.execPath, [BIN, 'audit', '--json', '--instance', status.instances[0].instance], { env })).stdout;
    const first = JSON.parse(audit).find((r: any) => r.tool === 'refund');
    assert.deepEqual(JSON.parse(first.args), { amount: 50, token: '***' });
    assert.ok(!audit.includes('secret-value'), 'argument values are stored masked');
  });
});
