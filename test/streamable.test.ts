import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { checkPostHeaders, StreamableSession } from '../src/gateway/streamable.js';
import type { Json } from '../src/proxy/messages.js';

describe('Streamable HTTP session: slow answers', () => {
  let server: Server;
  let url: string;
  const received: Json[] = [];
  const session = new StreamableSession({
    sessionId: 'sid-1', retryMs: 500, maxEvents: 50, holdMs: 100, keepAliveMs: 200,
    onMessage: (m) => {
      received.push(m);
      if (m.method === 'initialize') queueMicrotask(() => session.send({ jsonrpc: '2.0', id: 0, result: {} }, undefined, undefined));
    },
    onClientGone: () => {}, onEnded: () => {},
  });

  before(async () => {
    server = createServer((req, res) => {
      checkPostHeaders(req);
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => session.post(req, res, JSON.parse(body)));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const init = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25' } }) });
    assert.equal((await init.json()).id, 0);
  });

  after(() => {
    session.close();
    server.close();
  });

  it('a held answer becomes a stream with a priming event, kept alive with comments until the answer ends it', async () => {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' }, body: JSON.stringify({ jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: { name: 'x' } }) });
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(res.headers.get('mcp-session-id'), 'sid-1');
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!text.includes(': keep-alive')) text += (await reader.read()).value ?? '';
    assert.match(text, /^id: \S+\nretry: 500\ndata: \n\n/);
    session.send({ jsonrpc: '2.0', id: 'slow', result: { done: true } }, undefined, undefined);
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
    assert.match(text, /event: message\nid: \S+\ndata: \{"jsonrpc":"2.0","id":"slow","result":\{"done":true\}\}\n\n$/);
    assert.equal(received.at(-1)?.id, 'slow');
  });
});
