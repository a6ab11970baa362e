import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { TestRedis } from './helpers/redis.js';
import { BIN, tempDir, testEnv } from './helpers/toolgate.js';

/** Runs toolgate to its end (a hang is killed after 60 s and then fails the exit-code assertion). */
function toolgate(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: testEnv(tempDir()), timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr });
    });
  });
}

/**
 * A port nothing listens on, for "unreachable": a free ephemeral port from the OS could be handed
 * to a Redis another test file starts meanwhile; port 1 (tcpmux) is below the ephemeral range no
 * test ever binds, so a connect there is refused.
 */
const CLOSED_PORT = 1;

describe('state commands with Redis unreachable', () => {
  it('each ends with exit 2 and one line naming the DSN without its password, in toolgate\'s words', async () => {
    const port = CLOSED_PORT;
    const dsn = `redis://:hunter2@127.0.0.1:${port}/0?timeout=500ms`;
    const dir = tempDir();
    const config = join(dir, 'toolgate.json');
    writeFileSync(config, JSON.stringify({ state: dsn, servers: { s: { url: 'http://127.0.0.1:9/mcp', auth: 'none' } } }));
    const commands = [
      ['kill-switch', 'on', '--state', dsn], ['kill-switch', 'status', '--state', dsn], ['kill-switch', 'on', '-c', config],
      ['audit', '--follow', '--state', dsn], ['grants', 'list', '--state', dsn], ['grants', 'create', '--server', 's', '--label', 'l', '-c', config],
      ['approvals', 'list', '--state', dsn], ['approvals', 'approve', 'abcdefghjk', '-c', config], ['state', 'reset-ack', '--state', dsn],
    ];
    // Nine at once on a loaded machine: a connect may time out (500 ms) before it is refused; both are toolgate's words.
    const results = await Promise.all(commands.map((args) => toolgate(args)));
    results.forEach(({ code, stdout, stderr }, i) => {
      const what = `${commands[i].slice(0, 2).join(' ')}: ${stderr}`;
      assert.equal(code, 2, what);
      assert.equal(stdout, '', what);
      assert.match(stderr, new RegExp(`^toolgate: Redis at redis://127\\.0\\.0\\.1:${port}/0 is unreachable \\((connect ECONNREFUSED [^)]*|no connection within 500 ms)\\): check that it runs and the state DSN \\(--state, -c or TOOLGATE_STATE\\)\\n$`), what);
      assert.ok(!/hunter2|retries|maxRetriesPerRequest/i.test(stderr), what);
    });
  });

  it('something else on the port (an HTTP server) is named as such, not in the client library\'s words', async () => {
    const http = createServer((socket) => { socket.end('HTTP/1.1 400 Bad Request\r\n\r\n'); });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const { port } = http.address() as { port: number };
    try {
      const { code, stderr } = await toolgate(['grants', 'list', '--state', `redis://127.0.0.1:${port}/0?timeout=500ms`]);
      assert.equal(code, 2, stderr);
      assert.equal(stderr, `toolgate: Redis at redis://127.0.0.1:${port}/0 is unreachable (what answers there does not speak the Redis protocol): check that it runs and the state DSN (--state, -c or TOOLGATE_STATE)\n`);
    } finally {
      http.close();
    }
  });

  it('a redis:// DSN naming a node of a Redis Cluster is named as such (not EXECABORT or CLUSTERDOWN), by commands and by serve', async () => {
    const dir = tempDir();
    const redis = await TestRedis.start(['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf')]);
    try {
      const dsn = `${redis.url}/0?timeout=2s`;
      const config = join(dir, 'toolgate.json');
      writeFileSync(config, JSON.stringify({ listen: '127.0.0.1:0', state: dsn, servers: {} }));
      for (const args of [['kill-switch', 'on', '--state', dsn], ['grants', 'list', '--state', dsn], ['state', 'reset-ack', '--state', dsn], ['serve', '-c', config]]) {
        const { code, stdout, stderr } = await toolgate(args);
        assert.equal(code, 2, `${args[0]}: ${stderr}`);
        assert.equal(stdout, '');
        assert.match(stderr.trim().split('\n').at(-1)!, new RegExp(`^toolgate: Redis at redis://127\\.0\\.0\\.1:${redis.port}/0 is a node of a Redis Cluster: name the cluster as the state DSN, redis\\+cluster://HOST:PORT`), args[0]);
      }
    } finally {
      await redis.stop();
    }
  });

  it('serve refuses to start without its Redis, in one line', async () => {
    const port = CLOSED_PORT;
    const config = join(tempDir(), 'toolgate.json');
    writeFileSync(config, JSON.stringify({ listen: '127.0.0.1:0', state: `redis://:hunter2@127.0.0.1:${port}/0?timeout=300ms`, servers: {} }));
    const { code, stderr } = await toolgate(['serve', '-c', config]);
    assert.equal(code, 2, stderr);
    assert.match(stderr, new RegExp(`toolgate: Redis at redis://127\\.0\\.0\\.1:${port}/0 is unreachable \\((connect ECONNREFUSED [^)]*|no connection within 500 ms)\\): check that it runs and the state DSN`));
    assert.ok(!stderr.includes('hunter2'));
  });
});

describe('serve on a Redis that may evict keys', () => {
  it('refuses to start (exit 2, one line) unless the DSN says eviction=warn', async () => {
    const redis = await TestRedis.start(['--maxmemory-policy', 'allkeys-lru']);
    try {
      const config = join(tempDir(), 'toolgate.json');
      writeFileSync(config, JSON.stringify({ listen: '127.0.0.1:0', state: `${redis.url}/0`, servers: {} }));
      const { code, stdout, stderr } = await toolgate(['serve', '-c', config]);
      assert.equal(code, 2, stderr);
      assert.equal(stdout, '');
      assert.match(stderr.trim().split('\n').at(-1)!, /^toolgate: Redis at redis:\/\/127\.0\.0\.1:\d+\/0 may evict keys \(maxmemory_policy allkeys-lru\).*Set maxmemory-policy noeviction on that Redis, or add eviction=warn to the state DSN/);
      const reset = await toolgate(['state', 'reset-ack', '--state', `${redis.url}/0`, '--json']);
      assert.equal(reset.code, 0, reset.stderr);
      assert.match((JSON.parse(reset.stdout) as { generation: string }).generation, /^[0-9a-f]{16}$/);
    } finally {
      await redis.stop();
    }
  });

  it('state reset-ack on a store that is not Redis says so', async () => {
    const { code, stderr } = await toolgate(['state', 'reset-ack', '--state', 'memory:']);
    assert.equal(code, 2);
    assert.match(stderr, /^toolgate: state reset-ack is for a Redis state store, and this one is memory/);
  });
});
