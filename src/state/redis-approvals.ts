import type { RedisLink } from './redis.js';
import type { Approval, ApprovalDecision, ApprovalStatus, ApprovalStore } from './types.js';

/*
 * One approval is a hash: `json` (the approval as created, never rewritten) and the fields that
 * transitions set (status, decidedBy, decidedAt, decisionReason, validUntil, usedAt), so the
 * scripts never parse JSON. Sorted sets index them: all by request time, per binding, pending by
 * expiry, approved by end of validity. Every transition publishes the hash as it left the script,
 * so watchers on every instance see each state exactly as it was.
 * KEYS (all scripts): the approval, all, pending, approved, channel.
 */
const CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('approval ' .. ARGV[1] .. ' already exists') end
redis.call('HSET', KEYS[1], 'json', ARGV[2], 'status', 'pending', 'expiresAt', ARGV[4], 'validForMs', ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[6], ARGV[3], ARGV[1])
redis.call('PUBLISH', KEYS[5], 'approval ' .. cjson.encode(redis.call('HGETALL', KEYS[1])))
return 1
`;

/** ARGV: id, status, by, reason ('' for none), at. */
const DECIDE = `
local h = redis.call('HMGET', KEYS[1], 'status', 'expiresAt', 'validForMs')
if h[1] ~= 'pending' then return false end
local at = tonumber(ARGV[5])
if ARGV[2] ~= 'timeout' and at >= tonumber(h[2]) then return false end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'decidedBy', ARGV[3], 'decidedAt', ARGV[5])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'decisionReason', ARGV[4]) end
redis.call('ZREM', KEYS[3], ARGV[1])
if ARGV[2] == 'approved' then
  local valid = at + tonumber(h[3])
  redis.call('HSET', KEYS[1], 'validUntil', valid)
  redis.call('ZADD', KEYS[4], valid, ARGV[1])
end
local all = redis.call('HGETALL', KEYS[1])
redis.call('PUBLISH', KEYS[5], 'approval ' .. cjson.encode(all))
return all
`;

/** ARGV: id, at. */
const CONSUME = `
local h = redis.call('HMGET', KEYS[1], 'status', 'validUntil')
if h[1] ~= 'approved' or tonumber(ARGV[2]) >= tonumber(h[2]) then return 0 end
redis.call('HSET', KEYS[1], 'status', 'used', 'usedAt', ARGV[2])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('PUBLISH', KEYS[5], 'approval ' .. cjson.encode(redis.call('HGETALL', KEYS[1])))
return 1
`;

/** KEYS: pending, approved, channel. ARGV: now, the approval key prefix. Returns the ids changed. */
const EXPIRE = `
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])) do
  local k = ARGV[2] .. id
  redis.call('ZREM', KEYS[1], id)
  if redis.call('HGET', k, 'status') == 'pending' then
    redis.call('HSET', k, 'status', 'timeout', 'decidedBy', 'toolgate', 'decidedAt', ARGV[1])
    redis.call('PUBLISH', KEYS[3], 'approval ' .. cjson.encode(redis.call('HGETALL', k)))
    table.insert(out, id)
  end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])) do
  local k = ARGV[2] .. id
  redis.call('ZREM', KEYS[2], id)
  if redis.call('HGET', k, 'status') == 'approved' then
    redis.call('HSET', k, 'status', 'unused')
    redis.call('PUBLISH', KEYS[3], 'approval ' .. cjson.encode(redis.call('HGETALL', k)))
    table.insert(out, id)
  end
end
return out
`;

interface ApprovalScripts {
  tgApprovalCreate(...args: (string | number)[]): Promise<number>;
  tgApprovalDecide(...args: (string | number)[]): Promise<string[] | null>;
  tgApprovalConsume(...args: (string | number)[]): Promise<number>;
  tgApprovalExpire(...args: (string | number)[]): Promise<string[]>;
}

const NUMBERS = new Set(['decidedAt', 'validUntil', 'usedAt']);

/** An approval from its hash, as HGETALL's flat [field, value, …] list or an object. */
function approvalOf(flat: string[] | Record<string, string>): Approval | null {
  const fields = Array.isArray(flat) ? Object.fromEntries(Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i], flat[2 * i + 1]])) : flat;
  if (!fields.json) return null;
  const a = JSON.parse(fields.json) as Approval;
  a.status = fields.status as ApprovalStatus;
  for (const f of ['decidedBy', 'decisionReason'] as const) if (fields[f] !== undefined) a[f] = fields[f];
  for (const f of NUMBERS) if (fields[f] !== undefined) (a as unknown as Record<string, number>)[f] = Number(fields[f]);
  return a;
}

/** Approvals in Redis: every transition is one script (exactly once across the fleet) and is published to every instance. */
export class RedisApprovalStore implements ApprovalStore {
  private readonly scripts: ApprovalScripts;
  private readonly listeners = new Set<(a: Approval) => void>();
  private readonly index: { all: string; pending: string; approved: string };

  constructor(private readonly link: RedisLink) {
    const client = link.client;
    client.defineCommand('tgApprovalCreate', { lua: CREATE, numberOfKeys: 6 });
    client.defineCommand('tgApprovalDecide', { lua: DECIDE, numberOfKeys: 5 });
    client.defineCommand('tgApprovalConsume', { lua: CONSUME, numberOfKeys: 5 });
    client.defineCommand('tgApprovalExpire', { lua: EXPIRE, numberOfKeys: 3 });
    this.scripts = client as unknown as ApprovalScripts;
    this.index = { all: link.key('approvals'), pending: link.key('approvals', 'pending'), approved: link.key('approvals', 'approved') };
  }

  /** A message from the change channel about an approval (from this instance or another). */
  heard(message: string): void {
    const a = approvalOf(JSON.parse(message) as string[]);
    if (a) for (const l of this.listeners) l({ ...a });
  }

  /** A transition, once this instance hears changes (so its own watchers hear this one), failing with a clear message. */
  private run<T>(script: () => Promise<T>): Promise<T> {
    return this.link.subscribed.then(script).catch(this.link.failure);
  }

  private keys(id: string): string[] {
    return [this.link.key('approval', id), this.index.all, this.index.pending, this.index.approved, this.link.channel];
  }

  async create(a: Approval): Promise<void> {
    await this.run(() => this.scripts.tgApprovalCreate(...this.keys(a.id), this.link.key('approvals', 'binding', a.binding),
      a.id, JSON.stringify({ ...a, status: 'pending' }), a.requestedAt, a.expiresAt, a.validForMs));
  }

  async get(id: string): Promise<Approval | null> {
    return approvalOf(await this.link.client.hgetall(this.link.key('approval', id)));
  }

  private async many(ids: string[]): Promise<Approval[]> {
    const hashes = await Promise.all(ids.map((id) => this.link.client.hgetall(this.link.key('approval', id))));
    return hashes.map(approvalOf).filter((a): a is Approval => a !== null);
  }

  async list(opts: { status?: ApprovalStatus; limit?: number } = {}): Promise<Approval[]> {
    const limit = opts.limit ?? 100;
    // A status filter reads further back, up to the newest 10,000.
    const ids = await this.link.client.zrevrange(this.index.all, 0, (opts.status ? 10_000 : limit) - 1);
    return (await this.many(ids)).filter((a) => !opts.status || a.status === opts.status).slice(0, limit);
  }

  async decide(id: string, d: ApprovalDecision): Promise<Approval | null> {
    const flat = await this.run(() => this.scripts.tgApprovalDecide(...this.keys(id), id, d.status, d.by, d.reason ?? '', d.at));
    return flat ? approvalOf(flat) : null;
  }

  async consume(id: string, at: number): Promise<boolean> {
    return (await this.run(() => this.scripts.tgApprovalConsume(...this.keys(id), id, at))) === 1;
  }

  async findLive(binding: string, now: number): Promise<Approval | null> {
    const ids = await this.link.client.zrevrange(this.link.key('approvals', 'binding', binding), 0, 49);
    for (const a of await this.many(ids)) {
      if ((a.status === 'pending' && now < a.expiresAt) || (a.status === 'approved' && now < (a.validUntil ?? 0))) return a;
    }
    return null;
  }

  async expire(now: number): Promise<Approval[]> {
    const ids = await this.run(() => this.scripts.tgApprovalExpire(this.index.pending, this.index.approved, this.link.channel, now, this.link.key('approval', '')));
    return this.many(ids);
  }

  /** Changes are heard once the subscription stands: a watcher added now hears every transition made after it. */
  watch(listener: (a: Approval) => void): () => void {
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }
}
