import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { BIN, testEnv } from './toolgate.js';

/** `toolgate serve` through the built CLI, as a person starts it. */
export class Serve {
  readonly child: ChildProcessWithoutNullStreams;
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;

  constructor(args: string[], env: Record<string, string>) {
    this.child = spawn(process.execPath, [BIN, 'serve', ...args], { env });
    this.child.stdout.on('data', (d: Buffer) => { this.stdout += d.toString(); });
    this.child.stderr.on('data', (d: Buffer) => { this.stderr += d.toString(); });
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  /** Resolves once stdout holds what `done` looks for; throws if serve exits first. */
  async until(done: (stdout: string) => boolean): Promise<void> {
    while (!done(this.stdout)) {
      const ended = await Promise.race([this.exited.then(() => true), new Promise<false>((r) => this.child.stdout.once('data', () => r(false)))]);
      if (ended && !done(this.stdout)) throw new Error(`serve exited: ${this.stderr}`);
    }
  }

  /** The --json start object, once printed. */
  async started(): Promise<{ listen: string; servers: { name: string; mcp: string[] }[] }> {
    await this.until((out) => { try { JSON.parse(out); return true; } catch { return false; } });
    return JSON.parse(this.stdout);
  }

  /** SIGTERM (unless it already ended); its exit code. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    return this.exited;
  }
}

/** A `toolgate serve -c CONFIG` process that has started listening (its log's `listen` line). */
export interface Listening { base: string; proc: ChildProcessWithoutNullStreams; home: string; stderr(): string; stop(): Promise<void> }

/** Starts `toolgate serve -c CONFIG` in `home` (logging at info) and resolves once it listens; rejects if it exits first. */
export async function serveListening(config: string, home: string, env: Record<string, string> = {}): Promise<Listening> {
  const proc = spawn(process.execPath, [BIN, 'serve', '-c', config], { env: testEnv(home, { TOOLGATE_LOG_LEVEL: 'info', ...env }) });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  let err = '';
  const base = await new Promise<string>((resolve, reject) => {
    proc.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /"listen":"(http:\/\/[^"]+)"/.exec(err);
      if (m) resolve(m[1]);
    });
    proc.on('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
    await exited;
  };
  return { base, proc, home, stderr: () => err, stop };
}
