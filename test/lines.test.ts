import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { readLines } from '../src/proxy/lines.js';

/** Feeds the chunks to readLines, returns what it heard. */
function framed(chunks: (string | Buffer)[], maxBytes?: number): { lines: string[]; oversize: number } {
  const stream = new PassThrough();
  const out = { lines: [] as string[], oversize: 0 };
  readLines(stream, (l) => out.lines.push(l), () => out.oversize++, maxBytes);
  for (const c of chunks) stream.emit('data', Buffer.isBuffer(c) ? c : Buffer.from(c));
  return out;
}

describe('stdio framing', () => {
  it('splits whole chunks, chunks of several lines, and lines cut across chunks', () => {
    assert.deepEqual(framed(['{"a":1}\n', '{"b":2}\n{"c":3}\n', '{"d"', ':4}\n{"e"', ':5}\n']).lines, ['{"a":1}', '{"b":2}', '{"c":3}', '{"d":4}', '{"e":5}']);
  });

  it('drops CR before LF and blank lines', () => {
    assert.deepEqual(framed(['{"a":1}\r\n\n  \n', '{"b":2}\r', '\n']).lines, ['{"a":1}', '{"b":2}']);
  });

  it('keeps a multi-byte character cut between chunks, and one in a whole chunk', () => {
    const bytes = Buffer.from('{"m":"Grüße ✓"}\n');
    const cut = bytes.indexOf(Buffer.from('✓')) + 1;
    assert.deepEqual(framed([bytes.subarray(0, cut), bytes.subarray(cut), Buffer.from('{"n":"é"}\n')]).lines, ['{"m":"Grüße ✓"}', '{"n":"é"}']);
  });

  it('drops a line over the limit whole, and reads the next one', () => {
    const out = framed(['{"big":"', 'x'.repeat(40), 'x'.repeat(40), '"}\n{"ok":1}\n'], 64);
    assert.equal(out.oversize, 1);
    assert.deepEqual(out.lines, ['{"ok":1}']);
  });
});
