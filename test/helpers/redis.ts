import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** A free loopback port: bound and released, so a server started right after can take it. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * A real redis-server of the test's own on a loopback port, without persistence (a restart
 * starts empty) and with Redis's default maxmemory-policy, noeviction, unless `args` say
 * otherwise (e.g. ['--maxmemory-policy', 'volatile-lru']); stop() ends it, start() brings it
 * back on the same port.
 */
export class TestRedis {
  private proc?: ChildProcess;

  private constructor(readonly port: number, private readonly extraArgs: string[] = []) {}

  /** `extraArgs` go to redis-server as they are, e.g. ['--requirepass', PASSWORD]. */
  static async start(extraArgs: string[] = []): Promise<TestRedis> {
    const r = new TestRedis(await freePort(), extraArgs);
    await r.start();
    return r;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const proc = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...this.extraArgs], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = proc;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      proc.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Ready to accept connections')) resolve();
      });
      proc.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out.slice(-500)}`)));
      proc.once('error', reject);
    });
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null) return;
    this.proc = undefined;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  }
}
