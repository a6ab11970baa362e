import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { connectFailed } from '../src/proxy/upstream-http.js';

// A fleet run under load answered calls with "could not be reached: code.startsWith is not a function":
// an error with a numeric code (the SDK's request timeout, an McpError, an HTTP status) reached a check
// that assumed every code is a string, and the TypeError replaced the real error.
describe('whether an upstream HTTP error says no connection was made', () => {
  it('a system or TLS code, on the error or its cause, says so', () => {
    assert.equal(connectFailed(Object.assign(new Error('x'), { code: 'ECONNREFUSED' })), true);
    assert.equal(connectFailed(new Error('fetch failed', { cause: Object.assign(new Error('c'), { code: 'UND_ERR_CONNECT_TIMEOUT' }) })), true);
    assert.equal(connectFailed(new Error('fetch failed', { cause: { code: 'ERR_TLS_CERT_ALTNAME_INVALID' } })), true);
    assert.equal(connectFailed(Object.assign(new Error('x'), { code: 'ECONNRESET' })), false, 'a reset may come after the request left');
  });

  it('a numeric code (a JSON-RPC error, an HTTP status) or none says nothing and throws nothing', () => {
    assert.equal(connectFailed(Object.assign(new Error('MCP error -32001: Request timed out'), { code: -32001 })), false);
    assert.equal(connectFailed(new Error('x', { cause: { code: 503 } })), false);
    assert.equal(connectFailed(new Error('plain')), false);
  });
});
