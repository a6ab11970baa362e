// Issue 25 "Done when", first bullet: the SDK v2 client (@modelcontextprotocol/client 2.4) in each
// negotiation mode (legacy, auto, pinned 2026-07-28) × through `toolgate run` and `toolgate serve`
// × against a legacy upstream (server-everything) and a modern one (test/fixtures/modern-server.mjs
// with MODERN_ONLY=1, so the 2026-07-28 upstream path is really taken) — twelve pairings, each with
// the policy holding: allowed, denied (reason readable), limited, approved from the CLI, approved in
// the client (elicitation/create for legacy clients, input_required for modern ones), pins (rug
// pull) and the audit. One upstream and one toolgate per pairing; every pairing has its own home.
//
// Runtime: each pairing starts toolgate (run or serve) and its upstream once, plus a handful of CLI
// processes (pin, approvals list/approve, audit), in sequence: the twelve (90 tests) took 1 min 47 s to 2 min
// on a shared two-core machine, most of it CLI start-up while polling for the held call; under heavy load one
// file of all twelve passed the suite's 10-minute file timeout, so test/era-pairings-run.e2e.test.ts and
// test/era-pairings-serve.e2e.test.ts each run the six of one front.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { cli, pendingApprovals, until } from './approvals.js';
import { type Mode, modernHttp, modernRun } from './modern.js';
import { MODERN, ran } from './modern-upstream.js';
import { Serve } from './serve.js';
import { denialText, EVERYTHING, tempDir, testEnv, writePolicy } from './toolgate.js';

export type Front = 'run' | 'serve';
type Call = { name: string; arguments: Record<string, unknown> };

/** What each upstream offers for each role a pairing needs (distinct tools, so rows tell apart). */
interface Upstream {
  label: string;
  command: string[];
  /** The upstream's environment; `record` is where it writes the tool runs it completed, if it can. */
  env: (record: string) => Record<string, string>;
  /** Whether the fixture records its runs (so a test can count how often a call really ran). */
  records: boolean;
  allowed: Call & { result: RegExp };
  denied: Call;
  limited: Call;
  cliApproval: Call & { result: RegExp };
  clientApproval: Call & { result: RegExp };
  /** A tool whose definition the pairing's upstream changed after it was pinned (rug pull), if the fixture can. */
  rugPulled?: Call;
}

const UPSTREAMS: Upstream[] = [
  {
    label: 'legacy upstream (server-everything)',
    command: [process.execPath, EVERYTHING],
    env: () => ({}),
    records: false,
    allowed: { name: 'echo', arguments: { message: 'hello pairing' }, result: /hello pairing/ },
    denied: { name: 'get-sum', arguments: { a: 1, b: 2 } },
    limited: { name: 'get-tiny-image', arguments: {} },
    cliApproval: { name: 'get-annotated-message', arguments: { messageType: 'success' }, result: /success/i },
    clientApproval: { name: 'get-structured-content', arguments: { location: 'New York' }, result: /temperature/ },
    // server-everything has no variant whose definitions change: no rug pull here.
  },
  {
    label: 'modern upstream (2026-07-28 only)',
    command: [process.execPath, MODERN],
    // Pinned as it starts (read_note honest), then run as the rug-pull variant (read_note's description changed).
    env: (record) => ({ MODERN_ONLY: '1', FIXTURE_VARIANT: 'rugpull', RECORD_FILE: record }),
    records: true,
    allowed: { name: 'regional_lookup', arguments: { region: 'eu', query: 'q' }, result: /regional_lookup done/ },
    denied: { name: 'confirm_delete', arguments: { path: '/x' } },
    limited: { name: 'write_note', arguments: { name: 'n', text: 't' } },
    cliApproval: { name: 'run_command', arguments: { command: 'ls' }, result: /run_command done/ },
    clientApproval: { name: 'delete_file', arguments: { path: '/tmp/x' }, result: /delete_file done/ },
    rugPulled: { name: 'read_note', arguments: { name: 'a' } },
  },
];

const MODE_LABEL: Record<Mode, string> = { legacy: 'legacy', auto: 'auto', pinned: 'pinned 2026-07-28' };

function policyFor(u: Upstream) {
  const tools: Record<string, unknown> = {
    [u.allowed.name]: {},
    [u.denied.name]: { action: 'deny', on_deny: 'Not here: ask a person.' },
    [u.limited.name]: { limits: [{ counter: 'once', window: 'hour', max: 1, scope: 'grant' }] },
    [u.cliApproval.name]: { action: 'approve', approval: { via: ['cli'] } },
    [u.clientApproval.name]: { action: 'approve', approval: { via: ['client'] } },
  };
  if (u.rugPulled) tools[u.rugPulled.name] = {};
  return { version: '1', default: 'deny', pins: { on_change: 'block' }, tools };
}

/** One pairing's toolgate (run or serve) and client; `state` are the CLI flags that reach its state and audit. */
interface Pairing { client: Client; state: string[]; close(): Promise<void> }

/** Records the method of every request toolgate sent to the client (server-to-client requests). */
function tapRequests(client: Client, into: string[]): void {
  const transport = client.transport!;
  const deliver = transport.onmessage!;
  transport.onmessage = ((message: any, extra: any) => {
    if (message.method !== undefined && message.id !== undefined) into.push(message.method);
    return deliver.call(transport, message, extra);
  }) as typeof deliver;
}

async function open(front: Front, mode: Mode, u: Upstream, home: string, elicited: unknown[], requests: string[]): Promise<Pairing> {
  const policy = writePolicy(home, policyFor(u));
  const options = { capabilities: { elicitation: { form: {} } } } as never;
  let pairing: Pairing;
  if (front === 'run') {
    const run = await modernRun(mode, ['-p', policy, '--', ...u.command], home, u.env(join(home, 'runs.jsonl')), options);
    pairing = { client: run.client, state: [], close: () => run.close() };
  } else {
    const config = join(home, 'toolgate.json');
    writeFileSync(config, JSON.stringify({
      listen: '127.0.0.1:0', state: 'sqlite:./state.db', audit: './audit.db',
      servers: { up: { command: u.command[0], args: u.command.slice(1), env: u.env(join(home, 'runs.jsonl')), auth: 'none', policy } },
    }));
    const serve = new Serve(['-c', config, '--json'], testEnv(home));
    const info = await serve.started();
    const client = await modernHttp(mode, info.servers[0].mcp[0], undefined, options);
    pairing = { client, state: ['-c', config], close: async () => { await client.close(); await serve.stop(); } };
  }
  tapRequests(pairing.client, requests);
  pairing.client.setRequestHandler('elicitation/create' as never, (async (req: { params: unknown }) => {
    elicited.push(req.params);
    return { action: 'accept', content: { decision: 'approve' } };
  }) as never);
  return pairing;
}

const call = (client: Client, c: Call) => client.callTool({ name: c.name, arguments: c.arguments }, { timeout: 60_000 });
/** How often the upstream completed this tool (fixtures that record only). */
const runs = (home: string, tool: string) => ran(join(home, 'runs.jsonl')).filter((r) => r.tool === tool).length;
const decisionOf = (r: any) => (r._meta as any)?.['dev.toolgate/decision'];
/** A wait that never ends fails the test that waited, with its name, not the whole file at 10 minutes. */
const LIMIT = { timeout: 120_000 };

/** The six pairings (three client modes × two upstreams) through one front, as node:test suites. */
export function pairingSuites(front: Front): void {
for (const mode of ['legacy', 'auto', 'pinned'] as Mode[]) {
  for (const u of UPSTREAMS) {
    describe(`pairing: SDK v2 client (${MODE_LABEL[mode]}) × toolgate ${front} × ${u.label}`, () => {
      let home: string;
      let p: Pairing;
      const elicited: unknown[] = [];
      const requests: string[] = [];
      const state = (args: string[]) => [...args, ...p.state];

      before(async () => {
        home = tempDir();
        if (u.rugPulled) {
          // Pin the honest definitions first: the pairing's upstream then runs the rug-pull variant.
          const pinned = await cli(home, ['pin', '--json', '--state', `sqlite:${join(home, 'state.db')}`, '--', ...u.command], { MODERN_ONLY: '1' });
          assert.equal(pinned.code, 0, pinned.stderr);
        }
        p = await open(front, mode, u, home, elicited, requests);
      }, LIMIT);
      after(async () => { await p?.close(); }, LIMIT);

      it('negotiates the era the mode asks for', LIMIT, () => {
        assert.equal(p.client.getNegotiatedProtocolVersion(), mode === 'legacy' ? '2025-11-25' : '2026-07-28');
      });

      it('an allowed call returns the upstream\'s result', LIMIT, async () => {
        const r = await call(p.client, u.allowed);
        assert.equal(r.isError, undefined, JSON.stringify(r));
        assert.match(JSON.stringify(r.content), u.allowed.result);
      });

      it('a denied call\'s reason is readable by the agent (an isError result, no throw)', LIMIT, async () => {
        const r = await call(p.client, u.denied);
        assert.equal(denialText(r), '[POLICY DENIED] Not here: ask a person.');
        if (u.records) assert.equal(runs(home, u.denied.name), 0, 'the denied call never reached the upstream');
      });

      it('a limit of 1 refuses the second call with "Limit reached"', LIMIT, async () => {
        assert.equal(denialText(await call(p.client, u.limited)), undefined);
        assert.match(denialText(await call(p.client, u.limited)) ?? '', /Limit reached/);
        if (u.records) assert.equal(runs(home, u.limited.name), 1);
      });

      it('an approval from the CLI releases the held call exactly once', LIMIT, async () => {
        const held = call(p.client, u.cliApproval);
        const [pending] = await until(async () => { const l = await pendingApprovals(home, p.state); return l.length > 0 ? l : undefined; }, 'the held call to be listed');
        assert.equal(pending.tool, u.cliApproval.name);
        assert.equal((await cli(home, state(['approvals', 'approve', pending.id]))).code, 0);
        const r = await held;
        assert.equal(r.isError, undefined, JSON.stringify(r));
        assert.match(JSON.stringify(r.content), u.cliApproval.result);
        const again = await cli(home, state(['approvals', 'approve', pending.id]));
        assert.notEqual(again.code, 0, 'an approval is used once');
        assert.deepEqual(await pendingApprovals(home, p.state), []);
        if (u.records) assert.equal(runs(home, u.cliApproval.name), 1, 'the upstream ran the approved call once');
      });

      it(`an approval in the client (${mode === 'legacy' ? 'elicitation/create' : 'input_required'}) releases the held call`, LIMIT, async () => {
        const r = await call(p.client, u.clientApproval);
        assert.equal(elicited.length, 1, 'the user was asked once');
        // A 2025 client is asked by an elicitation/create request; a 2026-07-28 client gets no request
        // from the server at all: the SDK answered an input_required result and retried the call.
        assert.deepEqual(requests, mode === 'legacy' ? ['elicitation/create'] : []);
        assert.match((elicited[0] as { message: string }).message, new RegExp(`holding a call to "${u.clientApproval.name}" for approval`));
        assert.equal(r.isError, undefined, JSON.stringify(r));
        assert.match(JSON.stringify(r.content), u.clientApproval.result);
        if (u.records) assert.equal(runs(home, u.clientApproval.name), 1, 'the upstream ran the approved call once');
      });

      if (u.rugPulled) {
        it('a tool whose definition changed since it was pinned is hidden and refused', LIMIT, async () => {
          const names = (await p.client.listTools()).tools.map((t) => t.name);
          assert.ok(!names.includes(u.rugPulled!.name) && names.includes(u.allowed.name), names.join());
          const r = await call(p.client, u.rugPulled!);
          assert.match(denialText(r) ?? '', /POLICY DENIED/);
          assert.equal(decisionOf(r)?.rule, '(pin)');
          assert.equal(runs(home, u.rugPulled!.name), 0, 'the changed tool never ran');
        });
      }

      it('the audit has one call row per call, with its decision, and the approvals with who gave them', LIMIT, async () => {
        const out = await cli(home, state(['audit', '--json']));
        assert.equal(out.code, 0, out.stderr);
        const rows = JSON.parse(out.stdout) as any[];
        const byTool = (a: string[], b: string[]) => `${a}`.localeCompare(`${b}`);
        const calls = rows.filter((r) => r.kind === 'call').map((r) => [r.tool, r.decision]).sort(byTool);
        assert.deepEqual(calls, [
          [u.allowed.name, 'allow'],
          [u.denied.name, 'deny'],
          [u.limited.name, 'allow'], [u.limited.name, 'deny'],
          // a held call's call row is written when it is decided: allowed once approved
          [u.cliApproval.name, 'allow'],
          [u.clientApproval.name, 'allow'],
          ...(u.rugPulled ? [[u.rugPulled.name, 'deny']] : []),
        ].sort(byTool));
        const approvals = rows.filter((r) => r.kind === 'approval').map((r) => [r.tool, r.decision, r.decision === 'approved' ? r.message.replace(/^\w+: /, '') : '']);
        assert.deepEqual(approvals.sort(byTool), [
          [u.cliApproval.name, 'approval_requested', ''],
          [u.cliApproval.name, 'approved', 'approved by cli:' + userInfo().username],
          [u.clientApproval.name, 'approval_requested', ''],
          [u.clientApproval.name, 'approved', 'approved by client:modern-test'],
        ].sort(byTool));
      });
    });
  }
}
}
