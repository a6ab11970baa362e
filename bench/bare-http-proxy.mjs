#!/usr/bin/env node
// The floor for any Node HTTP-to-stdio MCP proxy: one session, each POST body parsed, forwarded as
// a line, the answer with the same id returned as JSON. No policy, no auth, no audit, no SSE.
// Usage: bare-http-proxy.mjs PORT COMMAND ARGS…
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';

const [port, command, ...args] = process.argv.slice(2);
const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
const waiting = new Map();
createInterface({ input: child.stdout }).on('line', (line) => {
  const m = JSON.parse(line);
  const res = waiting.get(m.id);
  if (!res) return;
  waiting.delete(m.id);
  res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'bare' }).end(JSON.stringify(m));
});
createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c) => { body += c; });
  req.on('end', () => {
    if (req.method !== 'POST') return res.writeHead(405).end();
    const m = JSON.parse(body);
    if (m.id === undefined) res.writeHead(202, { 'mcp-session-id': 'bare' }).end();
    else waiting.set(m.id, res);
    child.stdin.write(JSON.stringify(m) + '\n');
  });
}).listen(Number(port), '127.0.0.1');
