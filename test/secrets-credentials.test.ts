import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { deriveServerName } from '../src/proxy/run.js';
import { Catalog } from '../src/risk/catalog.js';
import { originOf } from '../src/risk/source.js';
import { maskArgs, maskUrl, maskUrlsIn } from '../src/secrets/credentials.js';
import { tempDir } from './helpers/toolgate.js';

// Issue 23 item 1, second attack, F4: credentials in a server's args or URL never reach what is
// shown or stored (SPEC §3: upstream credentials never appear in logs, audit, records, dashboard).
describe('credentials in how a server is reached', () => {
  it('args: a URL password, --name=value, --name value, NAME=value, Name: value, secret-shaped tokens', () => {
    const gh = `ghp_${'a1'.repeat(18)}`;
    const { value, found } = maskArgs([
      '/srv/server.js', 'postgresql://app:PgS3cretPass99@127.0.0.1/db', '--api-key=k-123456789', '--token', 'tok-abcdef12',
      'API_KEY=zz-987654', 'X-Api-Key: hv-55555555', gh, '--port', '8080', '--key', 'file.pem',
    ]);
    assert.deepEqual(value, [
      '/srv/server.js', 'postgresql://app:[masked]@127.0.0.1/db', '--api-key=[masked]', '--token', '[masked]',
      'API_KEY=[masked]', 'X-Api-Key: [masked]', '[masked github_token]', '--port', '8080', '--key', 'file.pem',
    ]);
    for (const secret of ['PgS3cretPass99', 'k-123456789', 'tok-abcdef12', 'zz-987654', 'hv-55555555', gh]) assert.ok(found.includes(secret), secret);
    assert.deepEqual(maskArgs(['-y', '@modelcontextprotocol/server-filesystem', '/home/u/projects']).found, [], 'nothing to mask: nothing changes');
  });

  it('URL: userinfo (a password, or a token as the user), every query value, a Slack webhook path', () => {
    assert.deepEqual(maskUrl('http://app:p%40ss-word@h:8/mcp'), { value: 'http://app:[masked]@h:8/mcp', found: ['p%40ss-word', 'p@ss-word'] });
    assert.equal(maskUrl('https://ghtoken@h/mcp').value, 'https://[masked]@h/mcp');
    assert.equal(maskUrl('https://h/mcp?api_key=q-1&region=eu&flag').value, 'https://h/mcp?api_key=[masked]&region=[masked]&flag');
    assert.equal(maskUrl('https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdefghijklmnopqrstuvwx').value, 'https://hooks.slack.com/services/[masked slack_webhook]');
    assert.deepEqual(maskUrl('https://mcp.example.com/mcp'), { value: 'https://mcp.example.com/mcp', found: [] });
  });

  it('error text: every URL in it masked', () => {
    assert.equal(maskUrlsIn('Request cannot be constructed from a URL that includes credentials: http://app:pw@127.0.0.1:9/mcp?k=v'),
      'Request cannot be constructed from a URL that includes credentials: http://app:[masked]@127.0.0.1:9/mcp?k=[masked]');
  });

  it('a record\'s origin is masked and says so; a clean one is as it was', () => {
    const command = originOf({ kind: 'command', command: 'node', args: ['s.js', '--api-key=k-123456789'] });
    assert.equal(command.commandLine, 'node s.js --api-key=[masked]');
    assert.equal(command.masked, true);
    assert.equal(originOf({ kind: 'url', url: 'https://h/mcp?key=AIza-like' }).url, 'https://h/mcp?key=[masked]');
    assert.deepEqual(originOf({ kind: 'command', command: 'node', args: ['s.js'] }), { kind: 'command', commandLine: 'node s.js' });
  });

  it('the catalog masks records stored before masking, on read and on save', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'catalog'));
    const old = { identity: { serverInfo: { name: 'old' }, origin: { kind: 'command', commandLine: 'node s.js postgresql://u:OldPass-12345@h/db' } }, tools: [] };
    writeFileSync(join(dir, 'catalog', 'old.json'), JSON.stringify(old));
    const catalog = new Catalog(join(dir, 'catalog'));
    const [read] = catalog.all();
    assert.equal(read.identity.origin.commandLine, 'node s.js postgresql://u:[masked]@h/db');
    catalog.save(old as never);
    assert.ok(!readFileSync(join(dir, 'catalog', 'old.json'), 'utf8').includes('OldPass-12345'));
  });

  it('run --upstream: a key in the URL\'s path is not in the server\'s name (logged, audited, pins)', () => {
    const key = `sk-ak-${'Q7x'.repeat(10)}`;
    const name = deriveServerName({ url: `https://actions.example.com/mcp/${key}/sse`, headers: {} });
    assert.ok(!name.includes(key), name);
    assert.equal(deriveServerName({ url: 'https://mcp.example.com/mcp', headers: {} }), 'mcp.example.com/mcp');
  });
});
