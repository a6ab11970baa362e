import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AuditLog } from '../src/audit/index.js';
import { FIXTURES, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/**
 * Issue 9's attacks through the real CLI, against a lenient Python server (NFKC + strip() +
 * lower() on tool names, int() on numbers) that logs every tool it runs: nothing the policy
 * denies may appear in that log.
 */
const LENIENT_PY = join(FIXTURES, 'lenient.py');

interface Ran { ran: string; args: Record<string, unknown>; charged?: number }

function ranLog(file: string): Ran[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Ran);
  } catch {
    return [];
  }
}

function startRun(dir: string, policy: unknown, extra: string[] = []): RawSession {
  const file = writePolicy(dir, policy);
  return new RawSession(['-p', file, '--state', `sqlite:${join(dir, 'state.db')}`, ...extra, '--', 'python3', LENIENT_PY], testEnv(dir, { LENIENT_LOG: join(dir, 'ran.log') }));
}

const denial = (r: any) => r.result?._meta?.['dev.toolgate/decision'];

describe('hardening: names, case and numbers against a lenient Python server', () => {
  let dir: string;
  let raw: RawSession;
  const ran = () => ranLog(join(dir, 'ran.log'));
  let n = 0;
  const call = (name: string, args: Record<string, unknown> = {}) => raw.request(`c${n++}`, 'tools/call', { name, arguments: args });

  before(async () => {
    dir = tempDir();
    raw = startRun(dir, {
      version: '1',
      default: 'allow',
      hide: ['Danger*'],
      tools: {
        'Delete*': { action: 'deny' },
        delete_file: { action: 'deny' },
        charge: {
          deny_if: [{ conditions: [{ path: 'args.amount', op: 'gt', value: 10000 }] }],
          limits: [{ counter: 'spend', window: 'day', max: 20000, scope: 'server', increment_from: 'args.amount' }],
        },
      },
    });
    await raw.initialize();
  });
  after(() => raw.close());

  it('1. a tool name with a control or format character is refused with a denial the agent reads', async () => {
    const chars = ['\u001f', '\u001c', '\u001d', '\u001e', '\u0000', '\u0085', '\u0007', '\u009c', '\u200b', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u2028', '\u2029', '\u180e', '\u061c', '\u3164'];
    for (const c of chars) {
      for (const name of [`delete_file${c}`, `${c}delete_file`, `echo${c}`]) {
        const r = await call(name);
        assert.equal(denial(r)?.rule, '(tool-name)', JSON.stringify(name));
        assert.match(r.result.content[0].text, /^\[POLICY DENIED\] .*control, format or invisible characters.*U\+/);
      }
    }
    // Spaces a trim drops, at either end (NBSP and friends included).
    for (const name of ['delete_file\u00a0', '\u3000delete_file', 'delete_file\u2007', 'delete_file ', '\tdelete_file', 'delete_file\u202f']) {
      assert.equal(denial(await call(name))?.rule, '(tool-name)', JSON.stringify(name));
    }
    assert.deepEqual(ran(), []);
    const ok = await call('echo');
    assert.equal(ok.result.content[0].text, 'echo ran');
  });

  it('1. a method with a control or format character is refused', async () => {
    for (const [i, method] of ['tools/call\u001f', '\u001ctools/call', 'tools/call\u00a0', 'tools/\u200bcall', 'tools/call\ufeff'].entries()) {
      const r = await raw.request(`m${i}`, method, { name: 'delete_file', arguments: {} });
      assert.equal(r.error?.code, -32600, JSON.stringify(method));
    }
    assert.ok(!ran().some((r) => r.ran === 'delete_file'));
  });

  it('2. globs and hide patterns hold whatever the case, before and after tools/list', async () => {
    for (const name of ['DELETEFILE', 'deletefile', 'dangerzone', 'DANGERZONE', 'Dangerzone']) {
      assert.ok(denial(await call(name)), name);
    }
    const list = await raw.request('list', 'tools/list', {});
    const names = list.result.tools.map((t: any) => t.name);
    assert.ok(!names.includes('DangerZone'));
    for (const name of ['dangerzone', 'dangerZONE', 'deletefile']) {
      const r = await call(name);
      assert.ok(denial(r), name);
      assert.doesNotMatch(r.result.content[0].text, /DangerZone/, 'a hidden tool is not confirmed');
    }
    assert.deepEqual(ran().filter((r) => r.ran !== 'echo'), []);
  });

  it('3. a number the server reads differently fails closed (deny_if matches)', async () => {
    for (const amount of ['99_999', '９９９９９', '٩٩٩٩٩', ' 99999', '+99999', '099999', '1e5', 99999]) {
      const r = await call('charge', { amount });
      assert.equal(denial(r)?.rule, '/tools/charge/deny_if/0', JSON.stringify(amount));
    }
    const ok = await call('charge', { amount: '500' });
    assert.equal(ok.result.content[0].text, 'charge ran');
    assert.deepEqual(ran().filter((r) => r.ran === 'charge').map((r) => r.charged), [500]);
  });
});
