import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import { readLines } from './lines.js';
import type { Json } from './messages.js';
import { NotDelivered, type Upstream } from './upstream.js';

export interface StdioUpstreamOptions {
  command: string;
  args: string[];
  /** The child's whole environment. `toolgate run` passes its own, as the MCP client set it. */
  env: NodeJS.ProcessEnv;
  cwd?: string;
  log: Logger;
  /** Where the server's stderr goes: passed through raw (MCP clients expect that of a stdio server), or each line a log entry here. */
  stderr?: 'inherit' | Logger;
}

/** An MCP server as a child process speaking newline-delimited JSON; its stderr passes through or is logged. */
export class StdioUpstream implements Upstream {
  readonly child: ChildProcess;
  onmessage?: (message: unknown, raw?: string) => void;
  onclose?: (reason: string) => void;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private turn = false;

  constructor(opts: StdioUpstreamOptions) {
    const stderr = opts.stderr ?? 'inherit';
    this.child = spawn(opts.command, opts.args, { env: opts.env, cwd: opts.cwd, stdio: ['pipe', 'pipe', stderr === 'inherit' ? 'inherit' : 'pipe'] });
    if (stderr !== 'inherit') {
      const logLine = (line: string) => { if (line.trim()) stderr.info({ stream: 'stderr' }, line.replace(/\r$/, '')); };
      readLines(this.child.stderr!, logLine, () => stderr.warn('the server wrote a stderr line over 64 KiB; it was dropped'), 64 * 1024);
    }
    this.exited = new Promise((resolve) => {
      this.child.on('error', (err: NodeJS.ErrnoException) => {
        const reason = err.code === 'ENOENT' ? `command not found: ${opts.command}` : err.message;
        opts.log.error({ command: opts.command }, `cannot start the MCP server: ${reason}`);
        this.onclose?.(reason);
        resolve({ code: 127, signal: null });
      });
      this.child.on('exit', (code, signal) => {
        this.onclose?.(signal ? `the server process was killed by ${signal}` : `the server process exited with code ${code}`);
        resolve({ code, signal });
      });
    });
    this.child.stdin!.on('error', () => { /* the exit handler reports a dead child */ });
    readLines(
      this.child.stdout!,
      (line) => {
        let message: unknown;
        try {
          message = JSON.parse(line);
        } catch {
          opts.log.warn('the MCP server wrote a line that is not JSON to stdout; it was not passed on');
          return;
        }
        this.onmessage?.(message, line);
      },
      () => opts.log.warn('the MCP server sent a message over the size limit; it was dropped'),
    );
  }

  send(message: Json): Promise<void> {
    const stdin = this.child.stdin;
    if (!stdin?.writable) return Promise.reject(new NotDelivered('the server process is not running'));
    // The first message of an event-loop turn goes out at once; more in the same turn (a busy
    // gateway) are held to the turn's end and go out in one write, one wake-up of the server.
    if (!this.turn) {
      this.turn = true;
      setImmediate(() => {
        this.turn = false;
        if (stdin.writableCorked) stdin.uncork();
      });
    } else if (!stdin.writableCorked) {
      stdin.cork();
    }
    stdin.write(JSON.stringify(message) + '\n');
    return Promise.resolve();
  }

  /** MCP stdio shutdown: close stdin, wait, then SIGTERM, then SIGKILL. */
  async close(graceMs = 2000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.stdin?.end();
    const timeout = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());
    if (await Promise.race([this.exited.then(() => true), timeout(graceMs).then(() => false)])) return;
    this.child.kill('SIGTERM');
    if (await Promise.race([this.exited.then(() => true), timeout(graceMs).then(() => false)])) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }
}
