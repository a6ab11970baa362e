import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { HttpUpstream } from '../src/proxy/upstream-http.js';

describe('HTTP upstream', () => {
  it('sends MCP-Protocol-Version with the negotiated version on every request after initialize', async () => {
    const seen: { method: string; headers: IncomingHttpHeaders }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        if (req.method !== 'POST') return res.writeHead(405).end();
        const m = JSON.parse(body);
        seen.push({ method: m.method, headers: req.headers });
        if (m.id === undefined) return res.writeHead(202).end();
        const result = m.method === 'initialize' ? { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'x', version: '1' } } : { tools: [] };
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'up-1' }).end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const upstream = new HttpUpstream({ url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), headers: {}, log: pino({ level: 'silent' }) });
    const answers: unknown[] = [];
    const answered = (n: number) => new Promise<void>((resolve) => { upstream.onmessage = (m) => { answers.push(m); if (answers.length === n) resolve(); }; });
    try {
      let next = answered(1);
      await upstream.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } } });
      await next;
      next = answered(2);
      await upstream.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      await upstream.send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
      await next;
      assert.deepEqual(seen.map((s) => [s.method, s.headers['mcp-protocol-version']]), [
        ['initialize', undefined],
        ['notifications/initialized', '2025-06-18'],
        ['tools/list', '2025-06-18'],
      ]);
    } finally {
      await upstream.close();
      server.close();
    }
  });
});
