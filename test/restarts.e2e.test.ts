import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { connect as tcp, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { cli, pendingApprovals, until } from './helpers/approvals.js';
import { CountingUpstream } from './helpers/counting-upstream.js';
import { freePort } from './helpers/redis.js';
import { Serve } from './helpers/serve.js';
import { denialText, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/** One toolgate serve on SQLite state, stopped with SIGTERM and started again on the same files and port. */
async function setup(upstream: CountingUpstream, grace = '30s'): Promise<{ home: string; config: string; port: number; start: () => Promise<Serve> }> {
  const home = tempDir();
  const port = await freePort();
  const policy = writePolicy(home, {
    version: '1', default: 'deny',
    tools: { work: {}, guarded: { action: 'approve', approval: { timeout: '5m', valid_for: '10m' } } },
  });
  const config = join(home, 'toolgate.json');
  writeFileSync(config, JSON.stringify({
    listen: `127.0.0.1:${port}`, state: `sqlite:${join(home, 'state.db')}`, audit: join(home, 'audit.db'),
    shutdown: { grace }, servers: { up: { url: upstream.url, policy, auth: 'none', audit_args: true } },
  }));
  const start = async () => {
    const serve = new Serve(['-c', config, '--json'], testEnv(home, { TOOLGATE_LOG_LEVEL: 'info' }));
    await serve.started();
    return serve;
  };
  return { home, config, port, start };
}

async function connect(port: number): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'restart-test', version: '1' });
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp/up`));
  await client.connect(transport);
  return { client, transport };
}

/** A raw connection that has sent part of a request: the gateway sees a request in progress (not an idle connection) until the rest comes. */
function partialRequest(port: number, head: string): Promise<{ socket: Socket; finish: (rest: string) => Promise<{ status: number; headers: string; body: string }> }> {
  return new Promise((resolve, reject) => {
    const socket = tcp(port, '127.0.0.1', () => {
      socket.write(head);
      let text = '';
      socket.on('data', (d) => { text += d.toString(); });
      const ended = new Promise<string>((r) => socket.on('close', () => r(text)));
      resolve({
        socket,
        finish: async (rest) => {
          socket.write(rest);
          const all = await ended;
          const [headers, ...body] = all.split('\r\n\r\n');
          const chunked = /transfer-encoding: chunked/i.test(headers);
          const raw = body.join('\r\n\r\n');
          return { status: Number(/^HTTP\/1\.1 (\d+)/.exec(headers)?.[1]), headers, body: chunked ? raw.split('\r\n').filter((_, i) => i % 2 === 1).join('') : raw };
        },
      });
    });
    socket.on('error', reject);
  });
}

describe('toolgate serve stops cleanly on SIGTERM', () => {
  let upstream: CountingUpstream;
  before(async () => { upstream = await CountingUpstream.start(); });
  after(async () => { await upstream.stop(); });

  it('a held call gets "restarting, call again", an in-flight call finishes, new requests get a retryable 503; after a restart with the approval granted meanwhile the call runs once', async () => {
    const { home, config, port, start } = await setup(upstream);
    const serve = await start();
    assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
    const { client, transport } = await connect(port);
    const held = client.callTool({ name: 'guarded', arguments: { n: 101 } });
    const pending = await until(async () => (await pendingApprovals(home, ['-c', config])).find((a) => a.tool === 'guarded'), 'the held call\'s approval');
    const inFlight = client.callTool({ name: 'work', arguments: { n: 102, gate: true } });
    await until(() => upstream.atGate === 1, 'the call to run upstream');
    // Requests in progress when the stop begins: their heads are in, the rest comes after.
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'late', method: 'tools/call', params: { name: 'work', arguments: { n: 103 } } });
    const late = await partialRequest(port, `POST /mcp/up HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n`
      + `Mcp-Session-Id: ${transport.sessionId}\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`);
    const probe = await partialRequest(port, `GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`);

    serve.child.kill('SIGTERM');
    const answer = await held;
    const text = denialText(answer);
    assert.match(text ?? '', new RegExp(`^\\[GATEWAY RESTARTING\\] The gateway is restarting, so this call was not forwarded: call again\\. Approval ${pending.id} stays pending .*the same call made again runs once\\.$`));
    assert.deepEqual((answer._meta as Record<string, unknown>)['dev.toolgate/decision'], { rule: '(restart)', retryAfterSeconds: 1, approval: { id: pending.id, status: 'pending' } });

    const ready = await probe.finish('\r\n');
    assert.equal(ready.status, 503, ready.headers);
    assert.equal(JSON.parse(ready.body).status, 'stopping');
    const refused = await late.finish(body);
    assert.equal(refused.status, 503, refused.headers);
    assert.match(refused.headers, /retry-after: 1/i);
    const error = JSON.parse(refused.body).error;
    assert.equal(error.code, -32050);
    assert.deepEqual(error.data, { retryable: true, reason: 'restarting', retryAfterSeconds: 1 });
    assert.equal(upstream.ran(103), 0, 'the refused request was not forwarded');

    // The call forwarded before the signal finishes within the grace period, and only then does serve exit.
    assert.equal(serve.child.exitCode, null, 'serve waits for the call in flight');
    upstream.openGate();
    assert.equal(denialText(await inFlight), undefined);
    assert.equal(await serve.exited, 0);
    await client.close().catch(() => {});

    // Approved while the gateway is down: the same call made again after the restart runs, once.
    assert.equal((await cli(home, ['approvals', 'approve', pending.id, '-c', config])).code, 0);
    const again = await start();
    const { client: next } = await connect(port);
    const result = await next.callTool({ name: 'guarded', arguments: { n: 101 } });
    assert.equal(denialText(result), undefined, JSON.stringify(result));
    assert.equal(upstream.ran(101), 1);
    // A third time asks for a new approval instead of running again.
    const third = next.callTool({ name: 'guarded', arguments: { n: 101 } });
    const fresh = await until(async () => (await pendingApprovals(home, ['-c', config])).find((a) => a.tool === 'guarded'), 'a new approval for the call made a third time');
    assert.notEqual(fresh.id, pending.id);
    again.child.kill('SIGTERM');
    assert.match(denialText(await third) ?? '', /^\[GATEWAY RESTARTING\]/);
    assert.equal(await again.exited, 0);
    assert.equal(upstream.ran(101), 1, 'forwarded exactly once');
    assert.equal(upstream.ran(102), 1);
    await next.close().catch(() => {});

    const rows = JSON.parse((await cli(home, ['audit', '--json', '-c', config])).stdout) as { kind: string; tool: string; decision: string; rule: string; outcome: string | null; args: string | null }[];
    const calls = rows.filter((r) => r.kind === 'call');
    assert.deepEqual(calls.map((r) => [r.tool, JSON.parse(r.args ?? '{}').n, r.decision, r.rule, r.outcome]), [
      ['work', 102, 'allow', '/tools/work', 'result'],
      ['guarded', 101, 'deny', '(restart)', null],
      ['guarded', 101, 'allow', '/tools/guarded/action', 'result'],
      ['guarded', 101, 'deny', '(restart)', null],
    ]);
    assert.match((await cli(home, ['audit', 'verify', '-c', config])).stdout, /^audit log intact/);
  });

  it('after shutdown.grace a call still in flight is cancelled upstream and its client told', async () => {
    const { start, port } = await setup(upstream, '0s');
    const serve = await start();
    const { client } = await connect(port);
    const inFlight = client.callTool({ name: 'work', arguments: { n: 201, gate: true } });
    await until(() => upstream.atGate === 1, 'the call to run upstream');
    serve.child.kill('SIGTERM');
    await assert.rejects(inFlight, /did not finish within shutdown\.grace \(0s\): the request was cancelled upstream\. The call had been sent, so it may have run/);
    assert.equal(await serve.exited, 0);
    upstream.openGate();
    await client.close().catch(() => {});
  });

  it('a second signal during the stop exits at once', async () => {
    const { start, port } = await setup(upstream);
    const second = await start();
    const { client: other } = await connect(port);
    const stuck = other.callTool({ name: 'work', arguments: { n: 202, gate: true } }).catch((err: Error) => err);
    await until(() => upstream.atGate === 1, 'the call to run upstream');
    second.child.kill('SIGTERM');
    await until(() => /stopping/.test(second.stderr) || undefined, 'the stop to begin');
    second.child.kill('SIGTERM');
    assert.equal(await second.exited, 143, 'the second signal ends the process at once');
    assert.ok((await stuck) instanceof Error);
    upstream.openGate();
    await other.close().catch(() => {});
  });
});
