import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './redis.js';
import { ROOT, tempDir } from './toolgate.js';

export const NGINX = '/usr/sbin/nginx';

/** One line of the test's access log: which instance (`upstream`) served which request. */
export interface Served { method: string; uri: string; status: number; upstream: string; session: string; mcpMethod: string; phase: string }

/** The request header a test sets to name the step a request belongs to (logged as `phase`). */
export const PHASE_HEADER = 'x-test-phase';

/**
 * Debian's nginx of the test's own, running a site file from docs/examples as it is written, with
 * only its three `server 10.0.0.1x:8080;` lines replaced by `backends` and its `listen 80;` by a
 * free loopback port. Everything it writes (pid, logs, temp files) is in its own temp dir; it runs
 * in the foreground as one process (`master_process off`: no worker that switches user), and
 * stop() ends it. The access log records each request's upstream, to show where requests went,
 * and the PHASE_HEADER the test sent with it, to tell the steps of a test apart.
 */
export class TestNginx {
  private constructor(readonly url: string, private readonly dir: string, private readonly proc: ChildProcess, private readonly exited: Promise<void>) {}

  static async start(example: string, backends: string[]): Promise<TestNginx> {
    if (!existsSync(NGINX)) throw new Error(`${NGINX} is missing: the fleet tests need Debian's nginx (apt-get install nginx; .ci/run does)`);
    if (backends.length !== 3) throw new Error('the example configurations name three instances');
    const dir = tempDir('toolgate-nginx-');
    const port = await freePort();
    let site = readFileSync(join(ROOT, 'docs/examples', example), 'utf8');
    const addresses = site.match(/server 10\.0\.0\.1[1-3]:8080;/g) ?? [];
    if (addresses.length !== 3 || !/\n\s*listen 80;/.test(site)) throw new Error(`docs/examples/${example} no longer has the lines the test replaces`);
    backends.forEach((b, i) => { site = site.replace(`server 10.0.0.1${i + 1}:8080;`, `server ${b};`); });
    site = site.replace(/\n(\s*)listen 80;/, `\n$1listen 127.0.0.1:${port};`);
    writeFileSync(join(dir, 'site.conf'), site);
    for (const t of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, t));
    writeFileSync(join(dir, 'nginx.conf'), `daemon off;
master_process off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 512; }
http {
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  log_format fleet escape=json '{"method":"$request_method","uri":"$request_uri","status":$status,"upstream":"$upstream_addr","session":"$http_mcp_session_id","mcpMethod":"$http_mcp_method","phase":"$http_x_test_phase"}';
  access_log ${dir}/access.log fleet;
  include ${dir}/site.conf;
}
`);
    const proc = spawn(NGINX, ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
    proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    const url = `http://127.0.0.1:${port}`;
    // Up once it answers (any status: the instances answer 404 on /).
    for (let i = 0; ; i++) {
      if (proc.exitCode !== null) throw new Error(`nginx exited (${proc.exitCode}): ${out}${readIf(join(dir, 'error.log'))}`);
      try {
        await fetch(`${url}/healthz`);
        break;
      } catch {
        if (i > 200) throw new Error(`nginx did not answer: ${out}${readIf(join(dir, 'error.log'))}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    return new TestNginx(url, dir, proc, exited);
  }

  /** Every request nginx finished so far, in the order it finished them. */
  served(): Served[] {
    return readIf(join(this.dir, 'access.log')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as Served);
  }

  /**
   * The requests after the first `mark` that `which` picks, once there are `count` of them: nginx
   * logs a request after its answer went out, so a client can read the answer before the line is
   * there. Gives up after a safety deadline and returns what there is (the caller's count check fails).
   */
  async servedAfter(mark: number, count: number, which: (s: Served) => boolean = () => true): Promise<Served[]> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const got = this.served().slice(mark).filter(which);
      if (got.length >= count || Date.now() > deadline) return got;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  errors(): string {
    return readIf(join(this.dir, 'error.log'));
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill('SIGTERM');
    await this.exited;
  }
}

function readIf(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}
