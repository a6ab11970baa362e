import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CompiledPolicy, Engine, type CallContext } from '../src/engine/index.js';
import { validatePolicyObject } from '../src/policy/index.js';
import { MemoryCounterStore, MemoryFlagStore, openMemoryState } from '../src/state/memory.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { CounterStore, FlagStore } from '../src/state/types.js';
import { tempDir } from './helpers/toolgate.js';

function compile(policy: unknown): CompiledPolicy {
  const r = validatePolicyObject(policy);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return new CompiledPolicy(r.policy, r.hash);
}

function engineFor(policy: unknown, opts: { counters?: CounterStore; flags?: FlagStore; failOpen?: boolean; shadow?: boolean } = {}) {
  return new Engine({ policy: compile(policy), counters: opts.counters ?? new MemoryCounterStore(), flags: opts.flags, failOpen: opts.failOpen, shadow: opts.shadow });
}

const T0 = Date.UTC(2026, 10, 30, 12, 0, 10); // 12:00:10 UTC, a Monday

function ctx(tool: string, args: Record<string, unknown> = {}, over: Partial<CallContext> = {}): CallContext {
  return { tool, args, grant: { label: 'ci', tags: ['prod'] }, session: { id: 's1', client: 'claude-code' }, server: { name: 'stripe' }, now: T0, ...over };
}

const REFUNDS = {
  version: '1',
  default: 'deny',
  hide: ['delete_*'],
  all_tools: { limits: [{ counter: 'calls', window: 'minute', max: 120, scope: 'grant' }] },
  tools: {
    debugpy_session_status: {},
    create_refund: {
      require: [{ conditions: [{ path: 'args.reason', op: 'exists', value: true }], on_deny: 'Give a reason.' }],
      deny_if: [{ conditions: [{ path: 'args.amount', op: 'gt', value: 10000 }], on_deny: 'Refunds over 100.00 are not allowed.' }],
      approve_if: [{ conditions: [{ path: 'args.amount', op: 'gt', value: 2000 }] }],
      limits: [{ counter: 'refund_total', window: 'day', max: 5000, scope: 'server', increment_from: 'args.amount' }],
    },
    drop_table: { action: 'deny', on_deny: 'Schema changes go through migrations.' },
    'deploy_*': { action: 'approve', approval: { timeout: '10m' } },
  },
};

describe('decision order', () => {
  it('allows a listed tool and names its entry', async () => {
    const d = await engineFor(REFUNDS).decide(ctx('debugpy_session_status'));
    assert.equal(d.verdict, 'allow');
    assert.equal(d.rule, '/tools/debugpy_session_status');
  });

  it('denies an unlisted tool under default deny, allows it under default allow', async () => {
    assert.deepEqual(
      (({ verdict, rule }) => ({ verdict, rule }))(await engineFor(REFUNDS).decide(ctx('whatever'))),
      { verdict: 'deny', rule: '(default)' },
    );
    const d = await engineFor({ ...REFUNDS, default: 'allow' }).decide(ctx('whatever'));
    assert.equal(d.verdict, 'allow');
    assert.equal(d.rule, '(default)');
  });

  it('hide wins over an entry and does not confirm the tool exists', async () => {
    const e = engineFor({ version: '1', default: 'allow', hide: ['delete_*'], tools: { delete_repo: {} } });
    const d = await e.decide(ctx('delete_repo'));
    assert.equal(d.rule, '/hide/0');
    assert.equal(d.message, 'Tool "delete_repo" is not available.');
  });

  it('a tool without an entry under default deny: the denial says so and how to add one, nothing about the server', async () => {
    const d = await engineFor({ version: '1', default: 'deny', tools: { other: {} } }).decide(ctx('delete_repo'));
    assert.equal(d.rule, '(default)');
    assert.equal(d.message, 'The policy has no entry for "delete_repo" and denies what it does not list (default: deny). To allow it, add "delete_repo": {} under "tools" in the policy.');
  });

  it('an allowed camelCase tool under default deny is not denied for its lower-cased look-alike', async () => {
    const e = engineFor({ version: '1', default: 'deny', tools: { getSum: {}, Delete_Repo: {} } });
    assert.equal((await e.decide(ctx('getSum'))).verdict, 'allow');
    assert.equal((await e.decide(ctx('getsum'))).rule, '(default)');
    // A look-alike the server does list stays a reason to deny.
    assert.equal((await e.decide(ctx('Delete_Repo'), { aliases: ['delete_repo'] })).rule, '(default)');
  });

  it('"*" in hide hides everything', async () => {
    const d = await engineFor({ version: '1', default: 'allow', hide: ['*'] }).decide(ctx('anything'));
    assert.equal(d.rule, '/hide/0');
  });

  it('action deny uses its message', async () => {
    const d = await engineFor(REFUNDS).decide(ctx('drop_table'));
    assert.equal(d.verdict, 'deny');
    assert.equal(d.rule, '/tools/drop_table/action');
    assert.equal(d.message, 'Schema changes go through migrations.');
  });

  it('require, then deny_if, then approve_if, then limits', async () => {
    const e = engineFor(REFUNDS);
    let d = await e.decide(ctx('create_refund', { amount: 50000 }));
    assert.equal(d.rule, '/tools/create_refund/require/0', 'require comes before deny_if');
    assert.equal(d.message, 'Give a reason.');
    d = await e.decide(ctx('create_refund', { amount: 50000, reason: 'x' }));
    assert.equal(d.rule, '/tools/create_refund/deny_if/0');
    d = await e.decide(ctx('create_refund', { amount: 3000, reason: 'x' }));
    assert.equal(d.verdict, 'approve');
    assert.equal(d.rule, '/tools/create_refund/approve_if/0');
    d = await e.decide(ctx('create_refund', { amount: 1500, reason: 'x' }));
    assert.equal(d.verdict, 'allow');
    assert.deepEqual(d.charges.map((c) => c.amount), [1500, 1]);
  });

  it('action approve holds every call, with the entry\'s timeout', async () => {
    const d = await engineFor(REFUNDS).decide(ctx('deploy_prod'));
    assert.equal(d.verdict, 'approve');
    assert.equal(d.rule, '/tools/deploy_*/action');
    assert.deepEqual(d.approval, { timeoutMs: 600_000, via: ['dashboard', 'cli', 'api', 'webhook'], mode: 'hold', validForMs: 600_000, maxPending: 20 });
  });

  // Counters of the same state store read the kill switch in their reservation (one step).
  const killSwitchStores: [string, () => { counters: CounterStore; flags: FlagStore; close?: () => Promise<void> }][] = [
    ['separate stores', () => ({ counters: new MemoryCounterStore(), flags: new MemoryFlagStore() })],
    ['one memory store', () => openMemoryState()],
    ['one SQLite store', () => openSqliteState(join(tempDir(), 'state.db'))],
  ];
  for (const [name, open] of killSwitchStores) {
    it(`kill switch beats everything, gateway-wide or per server (${name})`, async () => {
      const { counters, flags, close } = open();
      const e = engineFor(REFUNDS, { counters, flags, shadow: true });
      await flags.setKillSwitch('other', true);
      const allowed = await e.decide(ctx('debugpy_session_status'));
      assert.equal(allowed.verdict, 'allow');
      await flags.setKillSwitch('stripe', true);
      const d = await e.decide(ctx('debugpy_session_status'));
      assert.equal(d.rule, '(kill-switch)');
      assert.equal(d.enforced, true, 'the kill switch is enforced even in shadow mode');
      assert.deepEqual(d.charges, []);
      assert.equal((await e.decide(ctx('delete_all'))).rule, '(kill-switch)', 'before the policy\'s own denials');
      await flags.setKillSwitch('stripe', false);
      await flags.setKillSwitch('*', true);
      assert.equal((await e.decide(ctx('debugpy_session_status'))).rule, '(kill-switch)');
      assert.equal(await counters.value(allowed.charges[0].key, T0), 1, 'only the allowed call was counted');
      await close?.();
    });
  }

  it('a changed pin denies only when the policy says block', async () => {
    const warn = await engineFor(REFUNDS).decide(ctx('debugpy_session_status'), { pinChanged: true });
    assert.equal(warn.verdict, 'allow');
    const d = await engineFor({ ...REFUNDS, pins: { on_change: 'block' } }).decide(ctx('debugpy_session_status'), { pinChanged: true });
    assert.equal(d.rule, '(pin)');
    assert.match(d.message!, /toolgate pin --accept/);
  });

  it('all_tools deny_if with no conditions always denies', async () => {
    const d = await engineFor({ version: '1', default: 'allow', all_tools: { deny_if: [{ on_deny: 'maintenance' }] } }).decide(ctx('x'));
    assert.equal(d.rule, '/all_tools/deny_if/0');
    assert.equal(d.message, 'maintenance');
  });

  it('shadow mode decides but does not enforce', async () => {
    const d = await engineFor({ ...REFUNDS, mode: 'shadow' }).decide(ctx('drop_table'));
    assert.equal(d.verdict, 'deny');
    assert.equal(d.enforced, false);
  });
});

describe('tool name matching', () => {
  const policy = {
    version: '1', default: 'deny',
    tools: { 'get_*': { limits: [{ counter: 'a', window: 'minute', max: 1 }] }, 'get_secret_*': { action: 'deny' }, get_secret_public: {}, 'g?t_x': {} },
  };
  it('an exact name beats a glob, a longer glob beats a shorter one', async () => {
    const e = engineFor(policy);
    assert.equal((await e.decide(ctx('get_secret_public'))).rule, '/tools/get_secret_public');
    assert.equal((await e.decide(ctx('get_secret_key'))).rule, '/tools/get_secret_*/action');
    assert.equal((await e.decide(ctx('get_weather'))).rule, '/tools/get_*');
    assert.equal((await e.decide(ctx('got_x'))).rule, '/tools/g?t_x');
  });

  it('glob metacharacters other than * and ? are literal', async () => {
    const e = engineFor({ version: '1', default: 'deny', tools: { 'a.b(c)': {}, 'x[1]': {} } });
    assert.equal((await e.decide(ctx('a.b(c)'))).verdict, 'allow');
    assert.equal((await e.decide(ctx('aXb(c)'))).verdict, 'deny');
    assert.equal((await e.decide(ctx('x[1]'))).verdict, 'allow');
  });

  it('look-alike names are judged like the name they imitate', async () => {
    const e = engineFor({ version: '1', default: 'allow', hide: ['delete_*'], tools: { drop_table: { action: 'deny' }, createPullRequest: { action: 'deny' } } });
    for (const name of ['DELETE_ALL', 'delete\u200b_all', 'dеlete_all' /* Cyrillic е */, 'ｄｅｌｅｔｅ_all', ' delete_all', 'Drop_Table', 'createpullrequest', 'CREATEPULLREQUEST']) {
      assert.equal((await e.decide(ctx(name))).verdict, 'deny', `${JSON.stringify(name)} must be denied`);
    }
    assert.equal((await e.decide(ctx('list_tables'))).verdict, 'allow');
  });

  it('names with control, format or invisible characters, or spaces at the ends, are skeleton-equal to the plain name', async () => {
    const e = engineFor({ version: '1', default: 'allow', hide: ['Danger*'], tools: { delete_file: { action: 'deny' } } });
    for (const c of ['\u001c', '\u001d', '\u001e', '\u001f', '\u0000', '\u0085', '\u00a0', '\u200b', '\u2028', '\u2029', '\u202f', '\u3000', '\ufeff', '\u180e', '\u00ad', '\u034f', '\u3164', '\u0007', '\u009f']) {
      for (const name of [`delete_file${c}`, `${c}delete_file`, `delete${c}_file`, `danger${c}zone`]) {
        assert.equal((await e.decide(ctx(name))).verdict, 'deny', JSON.stringify(name));
      }
    }
  });

  it('globs and hide patterns match whatever the case, like plain names', async () => {
    const e = engineFor({ version: '1', default: 'allow', hide: ['Danger*'], tools: { 'Delete*': { action: 'deny' }, 'Send?Mail': { action: 'deny' } } });
    for (const name of ['DELETEFILE', 'deletefile', 'DeleteFile', 'ｄｅｌｅｔｅfile', 'dangerzone', 'DANGERZONE', 'dАngerzone' /* Cyrillic А */, 'sendxmail', 'SEND_MAIL']) {
      assert.equal((await e.decide(ctx(name))).verdict, 'deny', name);
    }
    assert.equal(e.current.isHidden('dangerzone'), true);
    assert.equal((await e.decide(ctx('list_files'))).verdict, 'allow');
  });

  it('an exact entry still beats a glob under any case, and the strictest of same-skeleton entries wins', async () => {
    const e = engineFor({ version: '1', default: 'allow', tools: { DeleteDraft: {}, 'Delete*': { action: 'deny' }, read_file: {}, READ_FILE: { action: 'deny' } } });
    assert.equal((await e.decide(ctx('deletedraft'))).verdict, 'allow');
    assert.equal((await e.decide(ctx('deletefile'))).verdict, 'deny');
    assert.equal((await e.decide(ctx('read_file'))).verdict, 'deny');
  });

  it('a call in other case counts against the limits of the entry it imitates', async () => {
    const counters = new MemoryCounterStore();
    const e = engineFor({ version: '1', default: 'allow', tools: { echo: { limits: [{ counter: 'echo', window: 'day', max: 2 }] } } }, { counters });
    const verdicts = [];
    for (const name of ['ECHO', 'Echo', 'echo​', 'echo']) verdicts.push((await e.decide(ctx(name))).verdict);
    assert.deepEqual(verdicts, ['allow', 'allow', 'deny', 'deny']);
  });

  it('known tool names with the same skeleton count as aliases', async () => {
    const e = engineFor({ version: '1', default: 'allow', tools: { Delete_Repo: { action: 'deny' } } });
    assert.equal((await e.decide(ctx('DELETE_REPO'), { aliases: ['Delete_Repo'] })).verdict, 'deny');
  });
});

function cond(path: string, op: string, value?: unknown) {
  return { version: '1', default: 'allow', tools: { t: { deny_if: [{ conditions: [{ path, op, ...(value === undefined ? {} : { value }) }] }] } } };
}
async function holds(path: string, op: string, value: unknown, args: Record<string, unknown>, over: Partial<CallContext> = {}): Promise<boolean> {
  return (await engineFor(cond(path, op, value)).decide(ctx('t', args, over))).verdict === 'deny';
}

describe('conditions', () => {
  it('compares plain numbers and canonical decimal strings as numbers', async () => {
    assert.equal(await holds('args.amount', 'gt', 100, { amount: '999' }), true);
    assert.equal(await holds('args.amount', 'gt', 100, { amount: 99 }), false);
    assert.equal(await holds('args.amount', 'gt', 100, { amount: '99.5' }), false);
    assert.equal(await holds('args.amount', 'gt', -1, { amount: '-0.5' }), true);
    assert.equal(await holds('args.amount', 'lte', '100', { amount: 100 }), true);
    assert.equal(await holds('args.amount', 'eq', 5, { amount: '5' }), true);
    assert.equal(await holds('args.amount', 'in', [1, 2], { amount: '2' }), true);
    assert.equal(await holds('args.amount', 'in', ['x', 2], { amount: 'x' }), true);
  });

  // Each of these is 99999 (or more) to some runtime's int()/parseInt/strtol, or no number at all.
  const UNREADABLE = ['99_999', '９９９９９', '٩٩٩٩٩', '۹۹۹۹۹', ' 99999', '99999 ', '+99999', '099999', '1e5', '0x1869F', '99999abc', 'NaN', 'Infinity', '-Infinity', '', 'lots', '9007199254740993', true, null, [99999], { n: 99999 }];

  it('a numeric comparison on anything else fails closed: deny_if matches, require fails, approve_if holds', async () => {
    for (const amount of UNREADABLE) {
      for (const op of ['gt', 'gte', 'lt', 'lte', 'eq', 'neq', 'in', 'not_in'] as const) {
        const value = op === 'in' || op === 'not_in' ? [5] : op.startsWith('l') ? 0 : 5;
        assert.equal(await holds('args.amount', op, value, { amount }), true, `deny_if ${op} on ${JSON.stringify(amount)}`);
      }
      const require = engineFor({ version: '1', default: 'allow', tools: { t: { require: [{ conditions: [{ path: 'args.amount', op: 'lte', value: 10000 }] }] } } });
      assert.equal((await require.decide(ctx('t', { amount }))).verdict, 'deny', `require on ${JSON.stringify(amount)}`);
      const approve = engineFor({ version: '1', default: 'allow', tools: { t: { approve_if: [{ conditions: [{ path: 'args.amount', op: 'gt', value: 10000 }] }] } } });
      assert.equal((await approve.decide(ctx('t', { amount }))).verdict, 'approve', `approve_if on ${JSON.stringify(amount)}`);
    }
    // Through [*]: one unreadable element is enough.
    assert.equal(await holds('args.items[*].n', 'gt', 100, { items: [{ n: 1 }, { n: '٩٩٩' }] }), true);
    const require = engineFor({ version: '1', default: 'allow', tools: { t: { require: [{ conditions: [{ path: 'args.items[*].n', op: 'lt', value: 100 }] }] } } });
    assert.equal((await require.decide(ctx('t', { items: [{ n: 1 }, { n: '٩٩٩' }] }))).verdict, 'deny');
  });

  it('increment_from takes only a plain non-negative number', async () => {
    const policy = { version: '1', default: 'allow', tools: { pay: { limits: [{ counter: 'spend', window: 'day', max: 1000, increment_from: 'args.amount' }] } } };
    for (const amount of [...UNREADABLE, -5, '-5']) {
      const d = await engineFor(policy).decide(ctx('pay', { amount }));
      assert.equal(d.verdict, 'deny', JSON.stringify(amount));
      assert.equal(d.rule, '/tools/pay/limits/0');
    }
    const ok = await engineFor(policy).decide(ctx('pay', { amount: '999.5' }));
    assert.equal(ok.verdict, 'allow');
    assert.equal(ok.charges[0].amount, 999.5);
  });

  it('a missing path makes every operator but exists false', async () => {
    for (const [op, value] of [['eq', 1], ['neq', 1], ['in', [1]], ['not_in', [1]], ['lt', 1], ['gt', 1], ['regex', '.*'], ['contains', 'a'], ['starts_with', ''], ['ends_with', ''], ['len_lte', 5], ['len_gte', 0]] as const) {
      assert.equal(await holds('args.missing', op, value, {}), false, op);
    }
    assert.equal(await holds('args.missing', 'exists', false, {}), true);
    assert.equal(await holds('args.missing', 'exists', true, {}), false);
    assert.equal(await holds('args.here', 'exists', undefined, { here: null }), true);
  });

  it('string operators, regex, contains and lengths', async () => {
    assert.equal(await holds('args.p', 'starts_with', '/etc', { p: '/etc/passwd' }), true);
    assert.equal(await holds('args.p', 'ends_with', '.pem', { p: 'a/key.pem' }), true);
    assert.equal(await holds('args.p', 'regex', '^feat/', { p: 'feat/x' }), true);
    assert.equal(await holds('args.p', 'regex', '^feat/', { p: 'fix/x' }), false);
    assert.equal(await holds('args.p', 'contains', 'DROP', { p: 'x; DROP TABLE' }), true);
    assert.equal(await holds('args.l', 'contains', 'b', { l: ['a', 'b'] }), true);
    assert.equal(await holds('args.l', 'len_gte', 3, { l: [1, 2, 3] }), true);
    assert.equal(await holds('args.s', 'len_lte', 2, { s: 'héé' }), false);
    assert.equal(await holds('args.c', 'not_in', ['usd', 'eur'], { c: 'gbp' }), true);
    assert.equal(await holds('args.c', 'neq', 'usd', { c: 'usd' }), false);
  });

  it('walks nested paths, [n] and [*] (any element)', async () => {
    const args = { items: [{ price: 5 }, { price: 500 }], matrix: [[1, 2], [3, 4]], meta: { owner: { name: 'root' } } };
    assert.equal(await holds('args.items[*].price', 'gt', 100, args), true);
    assert.equal(await holds('args.items[0].price', 'gt', 100, args), false);
    assert.equal(await holds('args.items[1].price', 'gt', 100, args), true);
    assert.equal(await holds('args.matrix[1][0]', 'eq', 3, args), true);
    assert.equal(await holds('args.matrix[*][*]', 'eq', 4, args), true);
    assert.equal(await holds('args.meta.owner.name', 'eq', 'root', args), true);
    assert.equal(await holds('args.items[*].nope', 'exists', true, args), false);
  });

  it('reads only own properties: __proto__ and constructor in arguments are plain keys', async () => {
    const args = JSON.parse('{"__proto__": {"path": "/safe"}}');
    assert.equal(await holds('args.path', 'exists', true, args), false);
    assert.equal(await holds('args.__proto__.path', 'eq', '/safe', args), true);
    assert.equal(await holds('args.constructor', 'exists', true, {}), false);
    assert.equal(await holds('args.toString', 'exists', true, {}), false);
  });

  it('context paths: grant, session, server, time', async () => {
    assert.equal(await holds('grant.label', 'eq', 'ci', {}), true);
    assert.equal(await holds('grant.tags', 'contains', 'prod', {}), true);
    assert.equal(await holds('session.client', 'starts_with', 'claude', {}), true);
    assert.equal(await holds('server.name', 'eq', 'stripe', {}), true);
    assert.equal(await holds('tool.name', 'eq', 't', {}), true);
    assert.equal(await holds('time.hour_utc', 'eq', 12, {}), true);
    assert.equal(await holds('time.weekday', 'in', ['saturday', 'sunday'], {}), false);
    assert.equal(await holds('time.weekday', 'eq', 'monday', {}), true);
  });

  it('literal regexes take a string fast path that agrees with RE2', async () => {
    const { regexTest } = await import('../src/engine/conditions.js');
    const { RE2JS } = await import('re2js');
    const patterns = ['^rm -rf', 'DROP TABLE', '(?i)password', '\\.pem$', '^feat/', '^a$', '(?i)^ADMIN$', '^\\$HOME', 'a.b', 'api[_-]?key', ''];
    const inputs = ['rm -rf /', 'x rm -rf', 'x; DROP TABLE y', 'drop table', 'My PassWord', 'a/key.pem', 'a/keypem', 'feat/x', 'a', 'ab', 'admin', '$HOME/x', 'axb', 'api_key', '', 'ADMIN\n'];
    for (const p of patterns) for (const i of inputs) assert.equal(regexTest(p)(i), RE2JS.compile(p).matcher(i).find(), `${p} on ${JSON.stringify(i)}`);
  });

  it('regexes run in linear time on hostile input', async () => {
    // A backtracking engine needs about 2^n steps for n a's here (n = 60: centuries), so this
    // answers at all only on a linear-time engine; how fast is npm run bench's business.
    const e = engineFor(cond('args.s', 'regex', '^(a+)+$'));
    assert.equal((await e.decide(ctx('t', { s: 'a'.repeat(60) + '!' }))).verdict, 'allow');
    assert.equal((await e.decide(ctx('t', { s: 'a'.repeat(100_000) + '!' }))).verdict, 'allow');
    assert.equal((await e.decide(ctx('t', { s: 'a'.repeat(100_000) }))).verdict, 'deny');
  });
});

describe('limits', () => {
  const limited = (limit: object, extra: object = {}) => ({ version: '1', default: 'allow', tools: { t: { limits: [limit] } }, ...extra });

  it('allows exactly max calls per window, then says when the window resets', async () => {
    const e = engineFor(limited({ counter: 'c', window: 'minute', max: 3 }));
    for (let i = 0; i < 3; i++) assert.equal((await e.decide(ctx('t'))).verdict, 'allow');
    const d = await e.decide(ctx('t'));
    assert.equal(d.verdict, 'deny');
    assert.equal(d.rule, '/tools/t/limits/0');
    assert.equal(d.retryAfterSeconds, 50, 'T0 is 12:00:10, the minute window resets at 12:01:00');
    assert.equal((await e.decide(ctx('t', {}, { now: Date.UTC(2026, 10, 30, 12, 1, 0) }))).verdict, 'allow', 'a new UTC minute starts at :00');
  });

  it('windows: second, hour, day and N seconds, aligned to UTC', async () => {
    for (const [window, reset] of [['second', 1], ['hour', 3590], ['day', 12 * 3600 - 10], [30, 20]] as const) {
      const e = engineFor(limited({ counter: 'c', window, max: 1 }));
      await e.decide(ctx('t'));
      assert.equal((await e.decide(ctx('t'))).retryAfterSeconds, reset, String(window));
    }
  });

  it('scopes: grant, session, server and global count separately', async () => {
    const other = { grant: { label: 'other', tags: [] } };
    const counters = new MemoryCounterStore();
    const grant = engineFor(limited({ counter: 'c', window: 'minute', max: 1, scope: 'grant' }), { counters });
    assert.equal((await grant.decide(ctx('t'))).verdict, 'allow');
    assert.equal((await grant.decide(ctx('t', {}, other))).verdict, 'allow', 'another grant has its own count');
    assert.equal((await grant.decide(ctx('t'))).verdict, 'deny');

    const session = engineFor(limited({ counter: 'c', window: 'minute', max: 1, scope: 'session' }));
    assert.equal((await session.decide(ctx('t'))).verdict, 'allow');
    assert.equal((await session.decide(ctx('t', {}, { session: { id: 's2' } }))).verdict, 'allow');
    assert.equal((await session.decide(ctx('t'))).verdict, 'deny');

    const server = engineFor(limited({ counter: 'c', window: 'minute', max: 1, scope: 'server' }));
    assert.equal((await server.decide(ctx('t'))).verdict, 'allow');
    assert.equal((await server.decide(ctx('t', {}, other))).verdict, 'deny', 'everyone on a server shares the count');
    assert.equal((await server.decide(ctx('t', {}, { server: { name: 'github' } }))).verdict, 'allow');

    const global = engineFor(limited({ counter: 'c', window: 'minute', max: 1, scope: 'global' }));
    assert.equal((await global.decide(ctx('t'))).verdict, 'allow');
    assert.equal((await global.decide(ctx('t', {}, { server: { name: 'github' } }))).verdict, 'deny');
  });

  it('increment_from caps a total; a missing, negative or non-numeric amount is denied', async () => {
    const e = engineFor(limited({ counter: 'spend', window: 'day', max: 100, increment_from: 'args.amount', on_deny: 'Daily cap reached.' }));
    assert.equal((await e.decide(ctx('t', { amount: 60 }))).verdict, 'allow');
    const over = await e.decide(ctx('t', { amount: '41' }));
    assert.equal(over.verdict, 'deny');
    assert.equal(over.message, 'Daily cap reached.');
    assert.equal((await e.decide(ctx('t', { amount: 40 }))).verdict, 'allow');
    for (const amount of [undefined, -5, 'abc', { n: 1 }]) {
      const d = await e.decide(ctx('t', amount === undefined ? {} : { amount }));
      assert.equal(d.verdict, 'deny', JSON.stringify(amount));
      assert.match(d.message!, /args\.amount as a non-negative number/);
    }
  });

  it('takes all limits or none', async () => {
    const counters = new MemoryCounterStore();
    const e = engineFor({ version: '1', default: 'allow', all_tools: { limits: [{ counter: 'all', window: 'minute', max: 1 }] }, tools: { t: { limits: [{ counter: 'own', window: 'minute', max: 5 }] } } }, { counters });
    const first = await e.decide(ctx('t'));
    assert.equal(first.verdict, 'allow');
    const second = await e.decide(ctx('t'));
    assert.equal(second.rule, '/all_tools/limits/0');
    const ownKey = first.charges[0].key;
    assert.equal(await counters.value(ownKey, T0), 1, 'the entry limit was not taken by the denied call');
  });

  it('keys a counter by name, window, scope and window start, the same as stored counters always were', async () => {
    const scopes = ['global', 'server', 'grant', 'session'] as const;
    const e = engineFor({ version: '1', default: 'allow', tools: { t: { limits: scopes.map((scope) => ({ counter: 'c', window: 'minute', max: 100, scope })) } } });
    const keys = async (over: Partial<CallContext> = {}) => (await e.decide(ctx('t', {}, over))).charges.map((c) => c.key);
    const start = T0 - (T0 % 60_000);
    const first = await keys();
    assert.deepEqual(first, [`c\x1f60\x1fglobal\x1f${start}`, `c\x1f60\x1fserver\x1fstripe\x1f${start}`, `c\x1f60\x1fgrant\x1fstripe\x1fci\x1f${start}`, `c\x1f60\x1fsession\x1fstripe\x1fs1\x1f${start}`]);
    const other = await keys({ session: { id: 's2' }, grant: { label: 'ops', tags: [] }, server: { name: 'github' } });
    assert.deepEqual(other, [`c\x1f60\x1fglobal\x1f${start}`, `c\x1f60\x1fserver\x1fgithub\x1f${start}`, `c\x1f60\x1fgrant\x1fgithub\x1fops\x1f${start}`, `c\x1f60\x1fsession\x1fgithub\x1fs2\x1f${start}`]);
    assert.deepEqual(await keys(), first, 'the first scope again, after another');
    assert.deepEqual((await e.decide(ctx('t'))).charges.map((c) => c.local), [false, false, false, true], "only a session's counter is this process's alone");
    assert.ok((await keys({ now: start + 60_000 })).every((k) => k.endsWith(`\x1f${start + 60_000}`)), 'the next window');
    assert.ok((await keys({ now: start + 59_999 })).every((k) => k.endsWith(`\x1f${start}`)), 'back in the window before');
  });

  it('settle(false) rolls the reservation back, settle(true) keeps it', async () => {
    const counters = new MemoryCounterStore();
    const e = engineFor(limited({ counter: 'c', window: 'minute', max: 1 }), { counters });
    const d = await e.decide(ctx('t'));
    await e.settle(d, false);
    const again = await e.decide(ctx('t'));
    assert.equal(again.verdict, 'allow', 'the rolled-back unit is available again');
    await e.settle(again, true);
    assert.equal((await e.decide(ctx('t'))).verdict, 'deny');
  });

  it('fails closed when the store fails, open when told to', async () => {
    const broken: CounterStore = { reserve: async () => { throw new Error('disk I/O error'); }, release: async () => {}, value: async () => 0 };
    const d = await engineFor(limited({ counter: 'c', window: 'minute', max: 5 }), { counters: broken }).decide(ctx('t'));
    assert.equal(d.verdict, 'deny');
    assert.equal(d.rule, '(state-store)');
    const open = await engineFor(limited({ counter: 'c', window: 'minute', max: 5 }), { counters: broken, failOpen: true }).decide(ctx('t'));
    assert.equal(open.verdict, 'allow');
    const unlimited = await engineFor({ version: '1', default: 'allow' }, { counters: broken }).decide(ctx('t'));
    assert.equal(unlimited.verdict, 'allow', 'calls without limits do not need the store');
  });

  it('counters survive a policy reload', async () => {
    const counters = new MemoryCounterStore();
    const e = engineFor(limited({ counter: 'c', window: 'minute', max: 2 }), { counters });
    await e.decide(ctx('t'));
    await e.decide(ctx('t'));
    e.setPolicy(compile(limited({ counter: 'c', window: 'minute', max: 3 })));
    assert.equal((await e.decide(ctx('t'))).verdict, 'allow');
    assert.equal((await e.decide(ctx('t'))).verdict, 'deny');
  });
});

describe('a call that continues one already charged (input_required retry)', () => {
  it('takes no limit again, yet every other step applies: rules, approval, kill switch', async () => {
    const state = openMemoryState();
    const e = new Engine({ policy: compile(REFUNDS), counters: state.counters, flags: state.flags });
    const call = ctx('create_refund', { reason: 'dup', amount: 3000 });
    const first = await e.decide(call, { approved: true });
    assert.equal(first.verdict, 'allow');
    assert.equal(first.charges.length, 2);
    // The refund_total limit (5000 a day) has 3000 taken: charged again, the same call would not fit.
    assert.equal((await e.decide(call, { approved: true })).verdict, 'deny');
    const again = await e.decide(call, { approved: true, charged: true });
    assert.equal(again.verdict, 'allow');
    assert.deepEqual(again.charges, []);
    assert.equal((await e.decide(call, { charged: true })).verdict, 'approve', 'the approval step is not skipped');
    assert.equal((await e.decide(ctx('create_refund', { amount: 3000 }), { approved: true, charged: true })).rule, '/tools/create_refund/require/0');
    await state.flags.setKillSwitch('*', true);
    assert.equal((await e.decide(call, { approved: true, charged: true })).rule, '(kill-switch)');
  });
});
