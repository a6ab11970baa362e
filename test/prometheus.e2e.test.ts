import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { until } from './helpers/approvals.js';
import { RecordingUpstream } from './helpers/recording-http.js';
import { freePort } from './helpers/redis.js';
import { BIN, ROOT, denialText, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/**
 * Debian's prometheus (installed by .ci/run) scrapes a real `toolgate serve` with the metrics
 * bearer token, evaluates the starter alerts of docs/examples/prometheus-alerts.yml, and answers
 * queries for the call and denial rates. Its own process on a free loopback port, its own
 * config and TSDB in a temp dir: never the package's service on :9090.
 */

const exec = promisify(execFile);
const TOKEN = 'metrics-token-for-the-scraper-0123456789';
const ALERTS = join(ROOT, 'docs/examples/prometheus-alerts.yml');

interface Proc { proc: ChildProcess; output: () => string }

function started(proc: ChildProcess): Proc {
  let out = '';
  proc.stdout?.on('data', (d) => { out += d; });
  proc.stderr?.on('data', (d) => { out += d; });
  // If a test fails before after() runs, the processes still go with the test process.
  process.once('exit', () => { if (proc.exitCode === null) proc.kill('SIGKILL'); });
  return { proc, output: () => out };
}

const stop = (p: Proc) => new Promise<void>((resolve) => {
  if (p.proc.exitCode !== null || p.proc.signalCode !== null) return resolve();
  p.proc.once('exit', () => resolve());
  p.proc.kill('SIGTERM');
});

/** The shipped rules made quick enough for a test: short windows, no `for`, its own group name. */
function quickRules(text: string): string {
  return text.replace(/- name: toolgate$/m, '- name: toolgate-quick').replace(/\[5m\]/g, '[20s]').replace(/for: \d+m/g, 'for: 0s');
}

describe('a real Prometheus scrapes toolgate serve', () => {
  let upstream: RecordingUpstream;
  let gateway: Proc;
  let prometheus: Proc;
  let base: string;
  let prom: string;
  let client: Client;

  before(async () => {
    upstream = await RecordingUpstream.start();
    const dir = tempDir();
    // free is allowed, guarded is denied: the denial rate is a known share of the calls.
    const policy = writePolicy(dir, { version: '1', default: 'allow', tools: { guarded: { action: 'deny' } } });
    const config = join(dir, 'toolgate.json');
    writeFileSync(config, JSON.stringify({
      listen: '127.0.0.1:0', state: `sqlite:${join(dir, 'state.db')}`, metrics: { token: TOKEN },
      servers: { up: { url: upstream.url, policy, auth: 'none' } },
    }));
    gateway = started(spawn(process.execPath, [BIN, 'serve', '-c', config], { env: testEnv(dir, { TOOLGATE_LOG_LEVEL: 'info' }) }));
    base = await until(() => /"listen":"(http:\/\/[^"]+)"/.exec(gateway.output())?.[1], `toolgate serve to listen: ${gateway.output()}`);

    writeFileSync(join(dir, 'alerts.yml'), readFileSync(ALERTS, 'utf8'));
    writeFileSync(join(dir, 'quick.yml'), quickRules(readFileSync(ALERTS, 'utf8')));
    const target = new URL(base).host;
    // The scrape configuration docs/gateway.md shows, with a 1 s interval for the test.
    writeFileSync(join(dir, 'prometheus.yml'), [
      'global: {scrape_interval: 1s, evaluation_interval: 1s}',
      'rule_files: [alerts.yml, quick.yml]',
      'scrape_configs:',
      '  - job_name: toolgate',
      '    metrics_path: /metrics',
      `    authorization: {credentials: ${TOKEN}}`,
      `    static_configs: [{targets: ["${target}"]}]`,
      '',
    ].join('\n'));
    const port = await freePort();
    prom = `http://127.0.0.1:${port}`;
    prometheus = started(spawn('prometheus', [
      `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn',
    ], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] }));
    let failed = '';
    prometheus.proc.once('error', (err) => { failed = `cannot start Debian's prometheus (.ci/run installs it): ${err.message}`; });
    await until(async () => {
      if (failed || prometheus.proc.exitCode !== null) throw new Error(failed || `prometheus exited: ${prometheus.output()}`);
      return (await fetch(`${prom}/-/ready`).catch(() => undefined))?.ok;
    }, 'prometheus to be ready');

    client = new Client({ name: 'prometheus-test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/up`)));
  });

  after(async () => {
    await client?.close();
    if (prometheus) await stop(prometheus);
    if (gateway) await stop(gateway);
    await upstream?.stop();
  });

  /** The vector an instant query returns, as {labels → value}. */
  async function query(expr: string): Promise<{ metric: Record<string, string>; value: number }[]> {
    const res = await fetch(`${prom}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = await res.json() as { status: string; error?: string; data: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] } };
    assert.equal(body.status, 'success', `${expr}: ${body.error}`);
    return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  async function scalar(expr: string): Promise<number | undefined> {
    const [first] = await query(expr);
    return first?.value;
  }

  /** One allowed call and three denied ones, checked as the client sees them. */
  async function round(): Promise<void> {
    const ok = await client.callTool({ name: 'free', arguments: {} });
    assert.equal(denialText(ok), undefined);
    for (let i = 0; i < 3; i++) assert.ok(denialText(await client.callTool({ name: 'guarded', arguments: {} })), 'guarded is denied');
  }

  it('scrapes /metrics with the bearer token and answers the call rate, the denial rate and the denial ratio', async () => {
    // The series must exist in a scrape before the calls rate() counts: a first round, a scrape, then more.
    await round();
    await until(async () => (await scalar('sum(toolgate_calls_total)')) === 4, 'a first scrape with the first round');
    const target = (await (await fetch(`${prom}/api/v1/targets`)).json()) as { data: { activeTargets: { health: string; lastError: string; labels: Record<string, string> }[] } };
    assert.deepEqual(target.data.activeTargets.map((t) => [t.labels.job, t.health, t.lastError]), [['toolgate', 'up', '']], 'the scrape with the token succeeds');
    // Without the token toolgate refuses the scrape: the token is what let Prometheus in.
    assert.equal((await fetch(`${base}/metrics`)).status, 401);

    const rounds = 5;
    for (let i = 0; i < rounds; i++) await round();
    const total = 4 * (rounds + 1);
    const byDecision = await until(async () => {
      const rows = await query('sum by (decision) (toolgate_calls_total{job="toolgate", server="up"})');
      const counts = Object.fromEntries(rows.map((r) => [r.metric.decision, r.value]));
      return counts.allow === rounds + 1 && counts.deny === 3 * (rounds + 1) ? counts : undefined;
    }, 'Prometheus to have scraped every call');
    assert.deepEqual(byDecision, { allow: rounds + 1, deny: 3 * (rounds + 1) });
    assert.equal(await scalar('sum(toolgate_calls_total{tool="guarded"})'), 3 * (rounds + 1), 'tool names the policy knows are labels');

    const callRate = await scalar('sum(rate(toolgate_calls_total[5m]))');
    const denialRate = await scalar('sum(rate(toolgate_calls_total{decision="deny"}[5m]))');
    assert.ok(callRate !== undefined && callRate > 0, `call rate ${callRate}`);
    assert.ok(denialRate !== undefined && denialRate > 0 && denialRate < callRate, `denial rate ${denialRate} of ${callRate}`);
    // Every call after the first scrape was in rounds of one allowed, three denied.
    const ratio = await scalar('sum(increase(toolgate_calls_total{decision="deny"}[5m])) / sum(increase(toolgate_calls_total[5m]))');
    assert.ok(ratio !== undefined && Math.abs(ratio - 0.75) < 0.02, `denial ratio ${ratio}, expected 0.75 (${total} calls)`);
    assert.equal(await scalar('sum(toolgate_pending_approvals)'), 0);
    assert.equal(await scalar('max(toolgate_oldest_pending_approval_seconds)'), 0);
    assert.deepEqual((await query('toolgate_state_up')).map((r) => [r.metric.kind, r.value]), [['sqlite', 1]]);
  });

  it('loads the starter alerts without error, and the denial spike fires when most calls are denied', async () => {
    const { stdout } = await exec('promtool', ['check', 'rules', ALERTS]);
    assert.match(stdout, /SUCCESS: 4 rules found/);

    const rules = (await (await fetch(`${prom}/api/v1/rules`)).json()) as { data: { groups: { name: string; file: string; rules: { name: string; health: string; lastError?: string; type: string }[] }[] } };
    const shipped = rules.data.groups.find((g) => g.name === 'toolgate');
    assert.ok(shipped, 'the shipped group is loaded');
    assert.deepEqual(shipped.rules.map((r) => r.name), ['ToolgateDenialSpike', 'ToolgatePendingApprovalAgeing', 'ToolgateStoreDegraded', 'ToolgateDown']);
    // Evaluated at least once, each without an error (a typo in a metric name would not error, but a bad expression would).
    const evaluated = await until(async () => {
      const r = (await (await fetch(`${prom}/api/v1/rules`)).json()) as typeof rules;
      const all = r.data.groups.flatMap((g) => g.rules);
      return all.every((x) => x.health === 'ok') ? all : undefined;
    }, 'every rule evaluated healthy');
    assert.ok(evaluated.every((r) => r.type === 'alerting' && !r.lastError));

    // The quick copy of the same rules (20 s windows, no `for`): the spike fires, the others do not.
    await round();
    const firing = await until(async () => {
      const r = (await (await fetch(`${prom}/api/v1/alerts`)).json()) as { data: { alerts: { labels: Record<string, string>; state: string }[] } };
      const f = r.data.alerts.filter((a) => a.state === 'firing');
      return f.some((a) => a.labels.alertname === 'ToolgateDenialSpike') ? f : undefined;
    }, 'ToolgateDenialSpike to fire');
    assert.deepEqual(firing.map((a) => [a.labels.alertname, a.labels.server, a.labels.severity]), [['ToolgateDenialSpike', 'up', 'warning']]);
  });
});
