import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { cli, denialText, EVERYTHING, LENIENT, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';
import { Serve } from './helpers/serve.js';


function parsesAsJson(text: string): boolean {
  try { JSON.parse(text); return true; } catch { return false; }
}

describe('toolgate serve -c FILE', () => {
  let dir: string;
  let env: Record<string, string>;
  let config: string;
  let serve: Serve;
  let info: { listen: string; servers: { name: string; auth: string; mcp: string[]; sse: string[] }[] };
  let token: string;

  before(async () => {
    dir = tempDir();
    env = testEnv(dir, { TOOLGATE_LOG_LEVEL: 'info' });
    const policy = writePolicy(dir, { version: '1', default: 'deny', tools: { echo: {}, 'get-sum': { action: 'deny' }, 'get-env': {} } });
    const limited = writePolicy(dir, { version: '1', default: 'allow', tools: { echo: { limits: [{ counter: 'e', window: 'minute', max: 100 }] } } }, 'limited.json');
    config = writePolicy(dir, {
      listen: '127.0.0.1:0',
      state: 'sqlite:./state.db',
      audit: './audit.db',
      admin: { token: '${TG_TEST_ADMIN_TOKEN}' },
      servers: {
        everything: { command: process.execPath, args: [EVERYTHING], policy, audit_args: true },
        lenient: { command: process.execPath, args: [LENIENT], auth: 'none', env: { LENIENT_STDERR: 'lenient is starting' }, policy: limited, fail_open: true },
        strict: { command: process.execPath, args: [LENIENT], auth: 'none', policy: limited },
      },
    }, 'toolgate.json');
    serve = new Serve(['-c', config, '--json'], { ...env, TG_TEST_ADMIN_TOKEN: 'admin-token-0123456789abcdef' });
    await serve.until(parsesAsJson);
    info = JSON.parse(serve.stdout);
    // -c works for a state command although the admin token's variable is not set here.
    const created = await cli(['grants', 'create', '-c', config, '--server', 'everything', '--label', 'me', '--json'], env);
    assert.equal(created.code, 0, created.stderr);
    token = JSON.parse(created.stdout).token;
  });

  after(async () => {
    if (serve.child.exitCode === null) await serve.stop();
  });

  it('--json prints one JSON object: where each server is, in both URL forms', () => {
    assert.match(info.listen, /^http:\/\/127\.0\.0\.1:\d+$/);
    const everything = info.servers.find((s) => s.name === 'everything')!;
    assert.deepEqual(everything, {
      name: 'everything', auth: 'grants',
      mcp: [`${info.listen}/everything/mcp`, `${info.listen}/mcp/everything`],
      sse: [`${info.listen}/everything/sse`, `${info.listen}/sse/everything`],
    });
    assert.equal(info.servers.find((s) => s.name === 'lenient')!.auth, 'none');
  });

  it('serves /<server>/mcp (Streamable HTTP) with tools/list filtered by the policy, and /<server>/sse', async () => {
    const headers = { Authorization: `Bearer ${token}` };
    const client = new Client({ name: 'first-use', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${info.listen}/everything/mcp`), { requestInit: { headers } }));
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), ['echo', 'get-env']);
    const echo = await client.callTool({ name: 'echo', arguments: { message: 'hello from /everything/mcp' } });
    assert.match(JSON.stringify(echo.content), /hello from \/everything\/mcp/);
    assert.match(denialText(await client.callTool({ name: 'get-tiny-image', arguments: {} }))!, /The policy has no entry for "get-tiny-image"/);
    await client.close();

    const legacy = new Client({ name: 'legacy', version: '1' });
    await legacy.connect(new SSEClientTransport(new URL(`${info.listen}/everything/sse`), {
      requestInit: { headers },
      eventSourceInit: { fetch: (u, init) => fetch(u, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }) },
    }));
    const over = await legacy.callTool({ name: 'echo', arguments: { message: 'over /everything/sse' } });
    assert.match(JSON.stringify(over.content), /over \/everything\/sse/);
    await legacy.close();
  });

  it("the wrapped servers' stderr lines are log entries with server and session", async () => {
    const client = new Client({ name: 'stderr', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${info.listen}/lenient/mcp`)));
    await client.listTools();
    await client.close();
    const entries = serve.stderr.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const said = entries.find((e) => e.msg === 'lenient is starting');
    assert.ok(said, 'the line arrived as a log entry');
    assert.equal(said.server, 'lenient');
    assert.equal(said.stream, 'stderr');
    assert.ok(entries.some((e) => e.msg === 'session opened' && e.session === said.session), 'with the session it belongs to');
  });

  it('audit_args stores argument values for the server that asks, and only there', async () => {
    const rows = JSON.parse((await cli(['audit', '-c', config, '--tool', 'echo', '--json'], env)).stdout) as { server: string; args: string | null }[];
    const everything = rows.filter((r) => r.server === 'everything');
    assert.ok(everything.length >= 2);
    assert.ok(everything.some((r) => r.args !== null && JSON.parse(r.args).message === 'hello from /everything/mcp'));
    const lenient = rows.filter((r) => r.server === 'lenient');
    assert.ok(lenient.every((r) => r.args === null));
  });

  it('fail_open lets a limited call through while the state store is locked; without it the call is denied', async () => {
    // Another connection holds the SQLite write lock: the gateway's reservation fails after its busy timeout.
    const db = new Database(join(dir, 'state.db'));
    const call = async (server: string) => {
      const client = new Client({ name: 'outage', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${info.listen}/${server}/mcp`)));
      const r = await client.callTool({ name: 'echo', arguments: { message: 'during the outage' } });
      await client.close();
      return r;
    };
    try {
      db.exec('BEGIN EXCLUSIVE');
      const open = await call('lenient');
      assert.equal(denialText(open), undefined, JSON.stringify(open));
      const closed = await call('strict');
      assert.match(denialText(closed)!, /state store/);
    } finally {
      db.exec('ROLLBACK');
      db.close();
    }
  });

  it('a normal shutdown logs no warnings, even with sessions open', async () => {
    const open = new Client({ name: 'left-open', version: '1' });
    await open.connect(new StreamableHTTPClientTransport(new URL(`${info.listen}/lenient/mcp`)));
    await open.listTools();
    const before = serve.stderr.length;
    assert.equal(await serve.stop(), 0);
    const after = serve.stderr.slice(before).trim().split('\n').map((l) => JSON.parse(l) as { level: number; msg: string });
    assert.ok(after.some((e) => /session closed: the gateway is stopping/.test(e.msg)));
    assert.deepEqual(after.filter((e) => e.level >= 40).map((e) => e.msg), []);
  });
});

describe('toolgate serve --fail-open', () => {
  it('is the default for every server without its own fail_open; a server that says false still fails closed', async () => {
    const dir = tempDir();
    const limited = writePolicy(dir, { version: '1', default: 'allow', tools: { echo: { limits: [{ counter: 'e', window: 'minute', max: 100 }] } } }, 'limited.json');
    const config = writePolicy(dir, {
      listen: '127.0.0.1:0', state: 'sqlite:./state.db', audit: './audit.db',
      servers: {
        inherits: { command: process.execPath, args: [LENIENT], auth: 'none', policy: limited },
        strict: { command: process.execPath, args: [LENIENT], auth: 'none', policy: limited, fail_open: false },
      },
    }, 'toolgate.json');
    const serve = new Serve(['-c', config, '--json', '--fail-open'], testEnv(dir));
    const db = new Database(join(dir, 'state.db'));
    try {
      await serve.until(parsesAsJson);
      const { listen } = JSON.parse(serve.stdout) as { listen: string };
      const call = async (server: string) => {
        const client = new Client({ name: 'outage', version: '1' });
        await client.connect(new StreamableHTTPClientTransport(new URL(`${listen}/${server}/mcp`)));
        const r = await client.callTool({ name: 'echo', arguments: { message: 'during the outage' } });
        await client.close();
        return r;
      };
      db.exec('BEGIN EXCLUSIVE');
      const open = await call('inherits');
      assert.equal(denialText(open), undefined, JSON.stringify(open));
      const closed = await call('strict');
      assert.match(denialText(closed)!, /fail closed/);
    } finally {
      if (db.inTransaction) db.exec('ROLLBACK');
      db.close();
      await serve.stop();
    }
  });
});

describe('toolgate serve -c FILE, as text', () => {
  it('prints where each server is, how to create a grant and how to connect a client', async () => {
    const dir = tempDir();
    const config = writePolicy(dir, {
      listen: '127.0.0.1:0', state: 'sqlite:./state.db', audit: './audit.db',
      servers: { lenient: { command: process.execPath, args: [LENIENT], policy: writePolicy(dir, { version: '1', default: 'allow' }, 'p.json') } },
    }, 'toolgate.json');
    const serve = new Serve(['-c', config], testEnv(dir));
    try {
      await serve.until((out) => out.includes('.mcp.json') && out.trimEnd().endsWith('}'));
      const base = /gateway on (http:\/\/127\.0\.0\.1:\d+)/.exec(serve.stdout)![1];
      assert.match(serve.stdout, new RegExp(`lenient: ${base}/lenient/mcp\\n    also /mcp/lenient; legacy SSE at /lenient/sse or /sse/lenient`));
      assert.ok(serve.stdout.includes(`toolgate grants create -c ${config} --server lenient --label me`));
      const snippet = JSON.parse(serve.stdout.slice(serve.stdout.indexOf('{')));
      assert.deepEqual(snippet, { mcpServers: { lenient: { type: 'http', url: `${base}/lenient/mcp`, headers: { Authorization: 'Bearer <token>' } } } });
    } finally {
      await serve.stop();
    }
  });
});
