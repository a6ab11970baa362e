// Issue 23 #21: the test identity provider starts without oidc-provider's warnings in the test output.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ROOT } from './helpers/toolgate.js';

const exec = promisify(execFile);

describe('test identity provider', () => {
  it('starts, issues a token and stops with nothing printed', async () => {
    const script = `
      const { TestIdentityProvider, newSigningKey } = await import('./test/helpers/oidc.ts');
      const idp = new TestIdentityProvider();
      await idp.start([await newSigningKey('k1')]);
      const token = await idp.token('http://127.0.0.1:1/mcp/x');
      if (token.split('.').length !== 3) throw new Error('no JWT');
      await idp.stop();`;
    const { stdout, stderr } = await exec(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT });
    assert.equal(stdout + stderr, '');
  });
});
