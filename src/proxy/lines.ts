import type { Readable } from 'node:stream';

/**
 * Newline-delimited JSON framing (the MCP stdio transport). A line longer than `maxBytes` is
 * discarded whole and reported, so one huge message cannot exhaust memory.
 */
export function readLines(stream: Readable, onLine: (line: string) => void, onOversize: () => void, maxBytes = 64 * 1024 * 1024): void {
  let buffered: Buffer[] = [];
  let size = 0;
  let skipping = false;
  stream.on('data', (chunk: Buffer) => {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl === -1) {
        if (!skipping) {
          buffered.push(chunk.subarray(start));
          size += chunk.length - start;
          if (size > maxBytes) {
            skipping = true;
            buffered = [];
            size = 0;
            onOversize();
          }
        }
        return;
      }
      if (skipping) {
        skipping = false;
      } else {
        const part = chunk.subarray(start, nl);
        const line = buffered.length === 0 ? part.toString('utf8') : Buffer.concat([...buffered, part]).toString('utf8');
        buffered = [];
        size = 0;
        const trimmed = line.endsWith('\r') ? line.slice(0, -1) : line;
        if (trimmed.trim() !== '') onLine(trimmed);
      }
      start = nl + 1;
    }
  });
}
