import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { passEscaped } from '../src/proxy/upstream-stdio.js';
import { LENIENT, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/**
 * Issue 23 item 8 ("run stderr"): in `toolgate run` the server's stderr reaches the same terminal
 * as toolgate's own held-for-approval notices, and it passes raw. An untrusted server can then
 * move the cursor, erase toolgate's lines and print lines that look like toolgate's. Its text
 * may pass, but not terminal control: ESC, C1 controls and a bare CR must arrive escaped.
 */
describe('toolgate run: the server\'s stderr cannot drive the terminal', () => {
  it('ESC, CSI (U+009B) and CR in a server\'s stderr line arrive escaped', async () => {
    const dir = tempDir();
    const forged = '\u001b[1A\u001b[2K\rtoolgate: "echo" on fs is held for approval abc \u009b2K';
    const raw = new RawSession(['-p', writePolicy(dir, { version: '1', default: 'allow' }), '--state', 'memory:', '--', process.execPath, LENIENT], testEnv(dir, { LENIENT_STDERR: forged }));
    await raw.initialize();
    await raw.waitFor(() => raw.stderr.includes('held for approval abc'));
    await raw.close();
    assert.ok(!raw.stderr.includes('\u001b') && !raw.stderr.includes('\u009b'), 'a control sequence from the server reached the terminal');
    assert.doesNotMatch(raw.stderr, /\r(?!\n)/, 'a bare CR from the server reached the terminal');
  });
});

describe("passEscaped (the server stderr that toolgate run passes on)", () => {
  it('ESC, C1 and a carriage return that ends no line are escaped; text, tabs, LF and CRLF stay', async () => {
    const from = new PassThrough();
    let out = '';
    const to = new PassThrough();
    to.on('data', (d: Buffer) => { out += d.toString(); });
    passEscaped(from, to);
    from.write('plain\tline\n\u001b[1A\u001b[2K\rfake \u009b2K\r');
    from.write('\nwindows\r\n');
    from.write('split\r');
    from.end('over');
    await new Promise((r) => from.on('end', r));
    await new Promise((r) => setImmediate(r));
    assert.equal(out, 'plain\tline\n\\u{1B}[1A\\u{1B}[2K\\rfake \\u{9B}2K\r\nwindows\r\nsplit\\rover');
  });
});
