import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { modernResult } from '../src/era/results.js';

describe('what a 2026-07-28 client sees on a result', () => {
  it('a cacheable answer is private even when the upstream said public: result policies differ per grant', () => {
    for (const method of ['resources/read', 'prompts/list', 'resources/list', 'tools/list', 'server/discover']) {
      const out = modernResult(method, { contents: [], cacheScope: 'public', ttlMs: 60_000 });
      assert.equal(out.cacheScope, 'private', method);
      assert.equal(out.ttlMs, 60_000, `${method}: the upstream's ttl stays`);
      assert.equal(out.resultType, 'complete');
    }
  });

  it('a result without resultType gets complete; an invalid ttl becomes 0; a tool call keeps input_required', () => {
    assert.equal(modernResult('tools/call', { content: [] }).resultType, 'complete');
    assert.equal(modernResult('resources/read', { contents: [], ttlMs: -5 }).ttlMs, 0);
    assert.equal(modernResult('tools/call', { resultType: 'input_required', inputRequests: {} }).resultType, 'input_required');
    assert.equal(modernResult('tools/list', { resultType: 'input_required', tools: [] }).resultType, 'complete', 'a list cannot ask for input');
  });
});
