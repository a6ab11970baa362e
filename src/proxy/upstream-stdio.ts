import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import { escapeControls } from '../display/index.js';
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
  /**
   * Where the server's stderr goes: passed through to toolgate's own (MCP clients expect that of a
   * stdio server) with terminal controls escaped, or each line a log entry here.
   */
  stderr?: 'inherit' | Logger;
}

/** Why a child could not be started, in words an operator can act on. */
function startFailure(err: NodeJS.ErrnoException, command: string): string {
  switch (err.code) {
    case 'ENOENT': return `command not found: ${command}`;
    case 'EACCES': return `permission denied: ${command} is not executable`;
    case 'EMFILE': case 'ENFILE': return `too many open files (${err.code}): end idle sessions, lower sessions.max, or raise the file limit (ulimit -n)`;
    case 'EAGAIN': return 'the system refused a new process (EAGAIN): too many processes';
    default: return err.message;
  }
}

/**
 * A server's stderr on toolgate's own, which the user's terminal may show beside toolgate's
 * notices: text and line breaks pass as they are, but escape sequences, C0 and C1 controls, a
 * carriage return not ending a line, bidi and invisible characters are written as escapes, so a
 * server cannot erase or rewrite toolgate's lines.
 */
export function passEscaped(from: Readable, to: Writable): void {
  from.setEncoding('utf8');
  let cr = false;
  from.on('data', (chunk: string) => {
    // A CR at the end of a chunk is written with the next one: only then is it known to end a line (CRLF).
    let text = cr ? `\r${chunk}` : chunk;
    cr = text.endsWith('\r');
    if (cr) text = text.slice(0, -1);
    to.write(text.split('\n').map((line) => (line.endsWith('\r') ? `${escapeControls(line.slice(0, -1), true)}\r` : escapeControls(line, true))).join('\n'));
  });
  from.on('end', () => { if (cr) to.write('\\r'); });
}

/** Process groups of children still running, killed if this process exits before closing them. */
const groups = new Set<number>();
process.on('exit', () => { for (const pgid of groups) killGroup(pgid, 'SIGKILL'); });

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try { process.kill(-pgid, signal); } catch { /* already gone */ }
}

/**
 * An MCP server as a child process speaking newline-delimited JSON; its stderr passes through or is logged.
 * The child leads its own process group, so that closing it also ends what it started (an `npx`
 * wrapper's server, a shell's pipeline) and a child that ignores EOF and SIGTERM is not orphaned.
 */
export class StdioUpstream implements Upstream {
  readonly child: ChildProcess;
  onmessage?: (message: unknown, raw?: string) => void;
  onclose?: (reason: string) => void;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves when the process runs; rejects with the reason it could not be started. */
  readonly started: Promise<void>;
  private turn = false;
  private readonly ownGroup = process.platform !== 'win32';

  constructor(opts: StdioUpstreamOptions) {
    const stderr = opts.stderr ?? 'inherit';
    this.child = spawn(opts.command, opts.args, { env: opts.env, cwd: opts.cwd, stdio: ['pipe', 'pipe', 'pipe'], detached: this.ownGroup });
    const pid = this.child.pid;
    if (this.ownGroup && pid !== undefined) groups.add(pid);
    let failed: (err: Error) => void = () => {};
    this.started = new Promise((resolve, reject) => { this.child.once('spawn', resolve); failed = reject; });
    this.started.catch(() => { /* the exit promise and onclose report it too */ });
    this.exited = new Promise((resolve) => {
      this.child.on('error', (err: NodeJS.ErrnoException) => {
        // After a successful start, 'error' means a signal could not be sent: 'exit' reports the end.
        if (this.child.pid !== undefined) return;
        const reason = startFailure(err, opts.command);
        opts.log.error({ command: opts.command }, `cannot start the MCP server: ${reason}`);
        failed(new Error(reason));
        this.onclose?.(reason);
        resolve({ code: 127, signal: null });
      });
      this.child.on('exit', (code, signal) => {
        if (pid !== undefined) groups.delete(pid);
        this.onclose?.(signal ? `the server process was killed by ${signal}` : `the server process exited with code ${code}`);
        resolve({ code, signal });
      });
    });
    // Without file descriptors (EMFILE) the pipes were never made: the 'error' event says why.
    if (!this.child.stdin || !this.child.stdout) return;
    this.child.stdin.on('error', () => { /* the exit handler reports a dead child */ });
    if (stderr === 'inherit') {
      if (this.child.stderr) passEscaped(this.child.stderr, process.stderr);
    } else if (this.child.stderr) {
      const logLine = (line: string) => { if (line.trim()) stderr.info({ stream: 'stderr' }, line.replace(/\r$/, '')); };
      readLines(this.child.stderr, logLine, () => stderr.warn('the server wrote a stderr line over 64 KiB; it was dropped'), 64 * 1024);
    }
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
    // The first message of a callback goes out at once; more from the same callback (a chunk of
    // several lines, a busy gateway) are held to its end and go out in one write, one wake-up of
    // the server. The end is a nextTick, not a setImmediate: no extra turn of the event loop per call.
    if (!this.turn) {
      this.turn = true;
      process.nextTick(() => {
        this.turn = false;
        if (stdin.writableCorked) stdin.uncork();
      });
    } else if (!stdin.writableCorked) {
      stdin.cork();
    }
    stdin.write(JSON.stringify(message) + '\n');
    return Promise.resolve();
  }

  /** Sends a signal to the child and everything in its process group. */
  kill(signal: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined || this.child.exitCode !== null || this.child.signalCode !== null) return;
    if (this.ownGroup) killGroup(pid, signal);
    else this.child.kill(signal);
  }

  /**
   * MCP stdio shutdown: close stdin, wait, then SIGTERM, then SIGKILL — to the whole process
   * group, which is also killed once the child has exited, so nothing it started outlives it.
   */
  async close(graceMs = 2000): Promise<void> {
    const pid = this.child.pid;
    if (pid === undefined) return;
    const gone = () => { if (this.ownGroup) killGroup(pid, 'SIGKILL'); };
    if (this.child.exitCode !== null || this.child.signalCode !== null) return gone();
    this.child.stdin?.end();
    const timeout = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());
    if (await Promise.race([this.exited.then(() => true), timeout(graceMs).then(() => false)])) return gone();
    this.kill('SIGTERM');
    if (await Promise.race([this.exited.then(() => true), timeout(graceMs).then(() => false)])) return gone();
    this.kill('SIGKILL');
    await this.exited;
    gone();
  }
}
