// Attacks on the end of a lease (issue 26): what a lenient upstream sends after a request's lease
// ended must reach no other caller. With `share: server` one upstream session serves several
// grants one lease at a time; a cancelled request may still be running on it (servers need not
// stop), and a server request asked during a lease may be answered after it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { grant, request, setup } from './helpers/pool.js';

const call = (id: string, tag: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hold', arguments: { tag } } });

describe('pooled upstream sessions: the end of a lease', () => {
  it('share: server — a cancelled request\'s session is closed and replaced: what the server still sends for it reaches no other grant', async () => {
    const { ups, open } = setup('server', { max: 1 });
    const a = open(grant('grant-a'), 'legacy');
    const b = open(grant('grant-b'), 'legacy');
    const callA = await request(a.view, ups, call('a1', 'A'));
    // B waits for the one session while A's call runs.
    const sentB = b.view.send(call('b1', 'B'));
    await a.view.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'a1', reason: 'gave up' } });
    assert.ok(callA.up.sent.some((m) => m.method === 'notifications/cancelled'), 'the server hears the cancellation');
    await sentB;
    const onB = ups.find((u) => u.sent.some((m) => m.method === 'tools/call' && String(JSON.stringify(m.params)).includes('"B"')))!;
    assert.notEqual(onB, callA.up, "B's call does not run on the session where A's cancelled call may still run");
    assert.ok(callA.up.closed, 'that session is closed');
    // The lenient server goes on with A's call: a question and a log line about A.
    callA.up.reply({ jsonrpc: '2.0', id: 'ask-1', method: 'elicitation/create', params: { message: "A's question", requestedSchema: { type: 'object', properties: {} } } });
    callA.up.reply({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: "A's log line" } });
    assert.deepEqual(b.got.filter((m) => Object.hasOwn(m, 'method')), [], 'B hears nothing of A');
    await a.view.close();
    await b.view.close();
  });

  it('share: server — a client that closes during its call: that session is closed too, not handed to the next grant', async () => {
    const { ups, open } = setup('server', { max: 1 });
    const a = open(grant('grant-a'), 'legacy');
    const b = open(grant('grant-b'), 'legacy');
    const callA = await request(a.view, ups, call('a1', 'A'));
    const sentB = b.view.send(call('b1', 'B'));
    await a.view.close();
    await sentB;
    const onB = ups.find((u) => u.sent.some((m) => m.method === 'tools/call' && String(JSON.stringify(m.params)).includes('"B"')))!;
    assert.notEqual(onB, callA.up);
    callA.up.reply({ jsonrpc: '2.0', id: 'ask-1', method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: "A's data" } }] } });
    assert.deepEqual(b.got.filter((m) => Object.hasOwn(m, 'method')), []);
    await b.view.close();
  });

  it('an answer to a server request asked during a lease that has ended reaches no session (the server may have given its id to another caller\'s request)', async () => {
    const { ups, open } = setup('server', { max: 1 });
    const a = open(grant('grant-a'), 'legacy');
    const b = open(grant('grant-b'), 'legacy');
    const callA = await request(a.view, ups, call('a1', 'A'));
    const up = callA.up;
    // A is asked during its call; the server answers the call without waiting for A's answer.
    up.reply({ jsonrpc: '2.0', id: 'ask-1', method: 'elicitation/create', params: { message: 'for A', requestedSchema: { type: 'object', properties: {} } } });
    const askA = a.got.find((m) => m.method === 'elicitation/create')!;
    up.reply({ jsonrpc: '2.0', id: callA.inner, result: { content: [] } });
    // B's call on the same session; the server numbers its questions per call: "ask-1" again, now for B.
    const callB = await request(b.view, ups, call('b1', 'B'));
    assert.equal(callB.up, up);
    up.reply({ jsonrpc: '2.0', id: 'ask-1', method: 'elicitation/create', params: { message: 'for B', requestedSchema: { type: 'object', properties: {} } } });
    const askB = b.got.find((m) => m.method === 'elicitation/create')!;
    // A answers its old question late: it must not become the answer to B's.
    await a.view.send({ jsonrpc: '2.0', id: askA.id, result: { action: 'accept', content: { who: 'A' } } });
    await b.view.send({ jsonrpc: '2.0', id: askB.id, result: { action: 'accept', content: { who: 'B' } } });
    const answers = up.sent.filter((m) => m.id === 'ask-1' && !Object.hasOwn(m, 'method'));
    assert.deepEqual(answers.map((m) => (m.result as { content: unknown }).content), [{ who: 'B' }], "only B's answer reaches the session");
    await a.view.close();
    await b.view.close();
  });

  it('share: server — one grant leases at most half the pool (max_per_grant): its requests that never end cannot starve another grant', async () => {
    const { ups, open } = setup('server', { max: 2, queue_timeout: '1s' });
    const a = open(grant('grant-a'));
    const b = open(grant('grant-b'));
    const first = await request(a.view, ups, call('a1', 'A1'));
    // A's second request waits although a session could start: A holds its share.
    let secondSent = false;
    const second = a.view.send(call('a2', 'A2')).then(() => { secondSent = true; });
    const callB = await request(b.view, ups, call('b1', 'B'));
    assert.notEqual(callB.up, first.up, 'B is served at once, on the other session');
    assert.equal(secondSent, false, "A's second request still waits");
    // A's first call ends: its second runs.
    first.up.reply({ jsonrpc: '2.0', id: first.inner, result: { content: [] } });
    await second;
    assert.ok(first.up.sent.some((m) => String(JSON.stringify(m.params)).includes('"A2"')), "A's second request runs on the session A freed");
    await a.view.close();
    await b.view.close();
  });

  it('share: server — a grant over its share that waits past queue_timeout hears why (retryable -32051), never forwarded', async () => {
    const { ups, open } = setup('server', { max: 2, max_per_grant: 1, queue_timeout: '1s' });
    const a = open(grant('grant-a'));
    await request(a.view, ups, call('a1', 'A1'));
    const refused = await a.view.send(call('a2', 'A2')).then(() => undefined, (err: Error & { code?: number; data?: { retryable?: boolean } }) => err);
    assert.equal(refused?.code, -32051);
    assert.equal(refused?.data?.retryable, true);
    assert.match(refused!.message, /this grant already leases 1 of them \(pool\.max_per_grant\)/);
    assert.ok(!ups.some((u) => u.sent.some((m) => String(JSON.stringify(m.params)).includes('"A2"'))), 'never forwarded');
    await a.view.close();
  });

  it('share: server — a cancelled request on a session that runs another grant\'s task: the task goes on there, but nothing unattributed reaches anyone; the session closes when the task ends', async () => {
    const { ups, open } = setup('server', { max: 1 });
    const a = open(grant('grant-a'), 'legacy');
    const b = open(grant('grant-b'), 'legacy');
    const createB = await request(b.view, ups, { jsonrpc: '2.0', id: 'b1', method: 'tools/call', params: { name: 'work', arguments: {}, task: {} } });
    const up = createB.up;
    const task = { taskId: 'task-1', status: 'working', ttl: 60_000, createdAt: 'now', lastUpdatedAt: 'now' };
    up.reply({ jsonrpc: '2.0', id: createB.inner, result: { task } });
    // A's call on the same session, then cancelled: closing the session would end B's task.
    await request(a.view, ups, call('a1', 'A'));
    await a.view.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'a1' } });
    assert.equal(up.closed, false, "B's task still runs there");
    const poll = await request(b.view, ups, { jsonrpc: '2.0', id: 'b2', method: 'tasks/get', params: { taskId: 'task-1' } });
    assert.equal(poll.up, up, "B's tasks/get reaches its task");
    // During B's poll the server goes on with A's cancelled call: nothing of it reaches B.
    up.reply({ jsonrpc: '2.0', id: 'ask-1', method: 'elicitation/create', params: { message: "A's question", requestedSchema: { type: 'object', properties: {} } } });
    up.reply({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: "A's log line" } });
    const refusal = up.sent.find((m) => m.id === 'ask-1' && !Object.hasOwn(m, 'method'));
    assert.equal((refusal?.error as { code?: number } | undefined)?.code, -32601, 'the question is refused, not asked of B');
    up.reply({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: { ...task, status: 'working' } });
    assert.deepEqual(b.got.filter((m) => Object.hasOwn(m, 'method')).map((m) => m.method), ['notifications/tasks/status'], "B hears its task's news only");
    up.reply({ jsonrpc: '2.0', id: poll.inner, result: { ...task, status: 'completed' } });
    assert.equal(up.closed, true, 'its last task ended: the session is closed');
    await a.view.close();
    await b.view.close();
  });

  it('share: server — no pooled session is initialized as one client: the first client\'s name reaches neither the server nor, through the server, another grant', async () => {
    const { ups, open } = setup('server', { max: 2 });
    const a = open(grant('grant-a'), 'legacy');
    const b = open(grant('grant-b'), 'legacy');
    await a.view.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'alice-laptop', version: '1' } } });
    await request(a.view, ups, call('a1', 'A'));
    await request(b.view, ups, call('b1', 'B'));
    assert.equal(ups.length, 2);
    for (const up of ups) {
      assert.deepEqual((up.initialized?.clientInfo as { name?: string } | undefined)?.name, 'toolgate', `${up.name} is initialized as toolgate, not as a client`);
      assert.deepEqual(up.initialized?.capabilities, { elicitation: {} }, 'with the capabilities clients of the pool are asked for');
    }
    await a.view.close();
    await b.view.close();
  });
});
