import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SignJWT } from 'jose';
import { pino } from 'pino';
import { ExternalIssuer, type ExternalConfig } from '../src/auth/external.js';
import { OAuthSchema } from '../src/config/gateway.js';
import { newSigningKey, TestIdentityProvider, type SigningKey } from './helpers/oidc.js';

/**
 * Issue 23 item 10: per-grant limits and approvals are keyed by grant id. A JWT grant's id is
 * `jwt:<sub>`, but a token without `sub` falls back to its label claim: a token whose label
 * (say `team` or `email`) equals another principal's subject gets that principal's id, and so
 * its limits and its approvals (an approval is bound to the grant id). The two must differ.
 */
describe('JWT grant ids: a label never stands in for a subject', () => {
  const idp = new TestIdentityProvider();
  let key: SigningKey;
  let issuer: ExternalIssuer;
  const audience = 'http://127.0.0.1/mcp/limited';

  before(async () => {
    key = await newSigningKey('k1');
    await idp.start([key]);
    const config = OAuthSchema.parse({ issuer: idp.issuer, audience: 'http://127.0.0.1/mcp/{server}', label_claim: 'team', jwks_cooldown: '0s' }) as ExternalConfig;
    issuer = new ExternalIssuer(() => config, pino({ level: 'silent' }));
  });
  after(() => idp.stop());

  const sign = (claims: Record<string, unknown>) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: key.jwk.kid, typ: 'at+jwt' })
    .setIssuer(idp.issuer).setAudience(audience).setIssuedAt().setExpirationTime('5m').sign(key.privateKey);

  it('a token without sub whose label equals another subject does not get that subject\'s grant id', async () => {
    const alice = await issuer.verify(await sign({ sub: 'alice', team: 'payments' }), 'limited');
    const other = await issuer.verify(await sign({ team: 'alice' }), 'limited');
    assert.ok(alice.ok, JSON.stringify(alice));
    // Either refused (no subject to key it by) or given an id of its own.
    if (other.ok) assert.notEqual(other.grant.id, alice.grant.id, 'a label claim took over alice\'s limits and approvals');
  });

  it('a token without sub is refused with 401 and says why', async () => {
    const result = await issuer.verify(await sign({ team: 'alice' }), 'limited');
    assert.equal(result.ok, false);
    if (!result.ok) {
      assert.equal(result.status, 401);
      assert.match(result.reason, /no sub claim/);
    }
  });
});
