import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { ModernHttpUpstream } from '../src/proxy/upstream-modern-http.js';
import { NotDelivered } from '../src/proxy/upstream.js';

/** A hostile or broken 2026-07-28 HTTP server, one behaviour per tool name, and what the transport makes of it. */
const log = pino({ level: 'silent' });
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const call = (id: number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, _meta: META } });

describe('ModernHttpUpstream against a server that misbehaves', () => {
  let http: Server;
  let url: URL;
  const seen: { headers: IncomingMessage['headers']; body: any }[] = [];

  before(async () => {
    http = createServer((req, res: ServerResponse) => {
      let text = '';
      req.on('data', (d) => { text += d; });
      req.on('end', () => {
        const body = JSON.parse(text);
        seen.push({ headers: req.headers, body });
        const name = body.params?.name;
        if (name === 'other-id') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: 999, result: { content: [] } }));
        if (name === 'bare-400') return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32020, message: 'headers and body disagree' } }));
        if (name === 'html-500') return void res.writeHead(500, { 'content-type': 'text/html' }).end('<h1>oops</h1>');
        if (name === 'sse') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(': keep-alive\n\n');
          res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })}\r\n\r\n`);
          res.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 555, result: {} })}\n\n`);
          return void res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { content: [{ type: 'text', text: 'ok' }] } })}\n\n`);
        }
        if (name === 'huge') return void res.writeHead(200, { 'content-type': 'application/json' }).end('x'.repeat(5000));
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
    url = new URL(`http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`);
  });
  after(() => { http.closeAllConnections(); http.close(); });

  const open = () => {
    const up = new ModernHttpUpstream({ url, headers: { Authorization: 'Bearer k', 'Mcp-Method': 'tools/list' }, log, maxBytes: 4096 });
    const got: any[] = [];
    up.onmessage = (m) => got.push(m);
    const next = async (n: number) => { for (let i = 0; i < 200 && got.length < n; i++) await new Promise((r) => setTimeout(r, 10)); return got; };
    return { up, got, next };
  };

  it('an answer for another request id is dropped; the configured credentials go, a configured Mcp-Method does not', async () => {
    const { up, got } = open();
    await up.send(call(1, 'other-id'));
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(got, []);
    const h = seen.at(-1)!.headers;
    assert.equal(h.authorization, 'Bearer k');
    assert.equal(h['mcp-method'], 'tools/call');
  });

  it('an HTTP error without the request id becomes that request\'s error, with the server\'s code', async () => {
    const { up, next } = open();
    await up.send(call(2, 'bare-400'));
    const [m] = await next(1);
    assert.equal(m.id, 2);
    assert.equal(m.error.code, -32020);
    assert.match(m.error.message, /HTTP 400: headers and body disagree/);
  });

  it('a 500 with a page is the request\'s -32603 error', async () => {
    const { up, next } = open();
    await up.send(call(3, 'html-500'));
    const [m] = await next(1);
    assert.deepEqual([m.id, m.error.code], [3, -32603]);
  });

  it('an SSE answer: comments skipped, CRLF framing read, progress passed, a stray answer dropped, then the answer', async () => {
    const { up, next } = open();
    await up.send(call(4, 'sse'));
    const got = await next(2);
    assert.deepEqual(got.map((m) => m.method ?? m.id), ['notifications/progress', 4]);
  });

  it('an answer over the size limit is not read: the request gets an error', async () => {
    const { up, next } = open();
    await up.send(call(5, 'huge'));
    const [m] = await next(1);
    assert.equal(m.id, 5);
    assert.match(m.error.message, /could not be read.*over 4096 bytes/);
  });

  it('a server that cannot be reached: NotDelivered (the call never ran)', async () => {
    const spare = createServer();
    await new Promise<void>((r) => spare.listen(0, '127.0.0.1', () => r()));
    const port = (spare.address() as AddressInfo).port;
    await new Promise((r) => spare.close(r));
    const up = new ModernHttpUpstream({ url: new URL(`http://127.0.0.1:${port}/mcp`), headers: {}, log });
    await assert.rejects(up.send(call(6, 'x')), NotDelivered);
  });
});
