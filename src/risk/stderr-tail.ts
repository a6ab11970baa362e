import type { ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { escapeControls } from '../display/index.js';
import { maskUrlsIn } from '../secrets/credentials.js';
import { maskSecretSpans } from '../secrets/index.js';

const KEEP_BYTES = 8192;
const LINES = 3;
const LINE_MAX = 200;

/**
 * The end of what a server wrote on stderr, kept bounded, for the one line that says why it did
 * not start: its last lines, each cut to 200 characters, control characters escaped, URL
 * credentials, secret-looking spans and the given values (its environment's secrets) masked.
 */
export class StderrTail {
  private text = '';

  constructor(stream: Readable | null, private readonly hidden: readonly string[] = []) {
    stream?.on('data', (d: Buffer) => {
      this.text = (this.text + d.toString('utf8')).slice(-KEEP_BYTES);
    });
  }

  lines(): string[] {
    return this.text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean).slice(-LINES).map((line) => {
      for (const value of this.hidden) if (value.length >= 4) line = line.split(value).join('***');
      line = escapeControls(maskSecretSpans(maskUrlsIn(line)).text);
      return line.length > LINE_MAX ? `${line.slice(0, LINE_MAX)}…` : line;
    });
  }
}

/** The process's exit code or signal once it has exited, waiting at most `ms` for it. */
export async function exitOf(child: ChildProcess | undefined, ms = 1000): Promise<string | undefined> {
  if (!child) return undefined;
  if (child.exitCode === null && child.signalCode === null) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      child.once('exit', () => { clearTimeout(timer); resolve(); });
    });
  }
  if (child.exitCode !== null) return `exit code ${child.exitCode}`;
  return child.signalCode ? `killed by ${child.signalCode}` : undefined;
}

/** " (exit code 1; stderr: …)" for the failure line, or "" when nothing is known. */
export function startFailureDetail(exit: string | undefined, tail: StderrTail): string {
  const lines = tail.lines();
  const parts = [exit, lines.length ? `stderr: ${lines.join(' | ')}` : undefined].filter(Boolean);
  return parts.length ? ` (${parts.join('; ')})` : '';
}
