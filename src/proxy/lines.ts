import type { Readable } from 'node:stream';

/**
 * Newline-delimited JSON framing (the MCP stdio transport). A line longer than `maxBytes` is
 * discarded whole and reported, so one huge message cannot exhaust memory.
 */
export function readLines(stream: Readable, onLine: (line: string) => void, onOversize: () => void, maxBytes = 64 * 1024 * 1024): void {
  let buffered: Buffer[] = [];
  let size = 0;
  let skipping = false;
  const emit = (line: string) => {
    const trimmed = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (trimmed.trim() !== '') onLine(trimmed);
  };
  stream.on('data', (chunk: Buffer) => {
    // The usual chunk: whole lines (one message, or a few). Decoded once and split as text; a
    // newline byte is never part of a multi-byte UTF-8 character, so this splits where bytes would.
    if (buffered.length === 0 && !skipping && chunk.length > 0 && chunk[chunk.length - 1] === 10) {
      const text = chunk.toString('utf8');
      for (let start = 0, nl = text.indexOf('\n'); nl !== -1; start = nl + 1, nl = text.indexOf('\n', start)) emit(text.slice(start, nl));
      return;
    }
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
        emit(buffered.length === 0 ? part.toString('utf8') : Buffer.concat([...buffered, part]).toString('utf8'));
        buffered = [];
        size = 0;
      }
      start = nl + 1;
    }
  });
}
