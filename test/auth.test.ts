import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { looksLikeJwt } from '../src/auth/external.js';
import { bearerChallenge, metadataUrl, serverOfPath } from '../src/auth/resource.js';

describe('auth: resources and challenges', () => {
  it('finds the server in every URL form of the gateway, and nothing else', () => {
    for (const p of ['/mcp/github', '/mcp/github/', '/github/mcp', '/sse/github', '/github/sse']) assert.equal(serverOfPath(p), 'github', p);
    assert.equal(serverOfPath('/mcp/a%20b'), 'a b');
    for (const p of ['/', '/mcp', '/mcp/', '/sse/github/messages', '/api/grants', '/mcp/a/b', '/mcp/%E0%A4%A']) assert.equal(serverOfPath(p), undefined, p);
  });

  it('puts metadata where RFC 9728 §3.1 says: the well-known prefix before the resource path', () => {
    assert.equal(metadataUrl('https://gw.example', '/mcp/github/'), 'https://gw.example/.well-known/oauth-protected-resource/mcp/github');
  });

  it('quotes challenge parameters so a reason cannot break out of its quoted string', () => {
    assert.equal(bearerChallenge({ realm: 'toolgate', error: 'invalid_token', error_description: 'a "quoted" \\ reason\r\nX-Injected: 1', scope: undefined }),
      'Bearer realm="toolgate", error="invalid_token", error_description="a \\"quoted\\" \\\\ reason X-Injected: 1"');
  });

  it('tells a JWT from a grant token by shape', () => {
    assert.equal(looksLikeJwt('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln'), true);
    assert.equal(looksLikeJwt('eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.'), true, 'an unsigned JWT still goes to the verifier, which refuses it');
    assert.equal(looksLikeJwt('tg_abcDEF123-_'), false);
    assert.equal(looksLikeJwt('a.b.c.d'), false);
  });
});
