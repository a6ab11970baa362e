import type { RedisLink } from './redis.js';
import type { Approval, ApprovalDecision, ApprovalStatus, ApprovalStore } from './types.js';

/*
 * One approval is a hash: `json` (the approval as created, never rewritten) and the fields that
 * transitions set (status, decidedBy, decidedAt, decisionReason, validUntil, usedAt), so the
 * scripts never parse JSON. Sorted sets index them: all by request time, per binding, pending by
 * expiry, approved by end of validity. Every approval (and its binding's index) expires
 * KEEP_MS after it could last act (its timeout plus valid_for), so nothing in Redis lives
 * forever. Every transition publishes `approval-id ID` as a wake-up: anyone who can PUBLISH can
 * send one, so watchers are told what the store says, never what a message says. (Versions that
 * published the whole record used `approval RECORD`: the new name keeps them from parsing an id.)
 * KEYS (all scripts): the approval, all, pending, approved, channel.
 * CREATE: KEYS also the binding index; ARGV id, json, requestedAt, expiresAt, validForMs, keep
 * until, then optionally max, now, approval key prefix, grant: refused (0) when the grant already
 * has max pending approvals live at now — counted and created in one step, so concurrent held
 * calls on any instance cannot all pass on the same count.
 */
const CREATE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('approval-id ' .. ARGV[1] .. ' already exists') end
if ARGV[7] then
  local n, max = 0, tonumber(ARGV[7])
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ARGV[8], '+inf')) do
    local h = redis.call('HMGET', ARGV[9] .. id, 'status', 'json')
    if h[1] == 'pending' and h[2] then local a = cjson.decode(h[2]); if (a.grantId or a.grant) == ARGV[10] then n = n + 1 end end
    if n >= max then return 0 end
  end
end
redis.call('HSET', KEYS[1], 'json', ARGV[2], 'status', 'pending', 'expiresAt', ARGV[4], 'validForMs', ARGV[5])
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[6], ARGV[3], ARGV[1])
redis.call('PEXPIREAT', KEYS[6], ARGV[6], 'GT')
if redis.call('PTTL', KEYS[6]) < 0 then redis.call('PEXPIREAT', KEYS[6], ARGV[6]) end
redis.call('PUBLISH', KEYS[5], 'approval-id ' .. ARGV[1])
return 1
`;

/** How long an approval record stays after it could last act (pending until its timeout, then approved for valid_for): listable as a recent decision. */
export const KEEP_MS = 24 * 3_600_000;

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
redis.call('PUBLISH', KEYS[5], 'approval-id ' .. ARGV[1])
return redis.call('HGETALL', KEYS[1])
`;

/** ARGV: id, at. */
const CONSUME = `
local h = redis.call('HMGET', KEYS[1], 'status', 'validUntil')
if h[1] ~= 'approved' or tonumber(ARGV[2]) >= tonumber(h[2]) then return 0 end
redis.call('HSET', KEYS[1], 'status', 'used', 'usedAt', ARGV[2])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('PUBLISH', KEYS[5], 'approval-id ' .. ARGV[1])
return 1
`;

/**
 * KEYS: pending, approved, channel, all. ARGV: now, the approval key prefix. Returns the ids
 * changed. Also drops from `all` the oldest ids whose record has expired, a few per sweep.
 */
const EXPIRE = `
local out = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[4], 0, 99)) do
  if redis.call('EXISTS', ARGV[2] .. id) == 0 then redis.call('ZREM', KEYS[4], id) end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])) do
  local k = ARGV[2] .. id
  redis.call('ZREM', KEYS[1], id)
  if redis.call('HGET', k, 'status') == 'pending' then
    redis.call('HSET', k, 'status', 'timeout', 'decidedBy', 'toolgate', 'decidedAt', ARGV[1])
    redis.call('PUBLISH', KEYS[3], 'approval-id ' .. id)
    table.insert(out, id)
  end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])) do
  local k = ARGV[2] .. id
  redis.call('ZREM', KEYS[2], id)
  if redis.call('HGET', k, 'status') == 'approved' then
    redis.call('HSET', k, 'status', 'unused')
    redis.call('PUBLISH', KEYS[3], 'approval-id ' .. id)
    table.insert(out, id)
  end
end
return out
`;

/** KEYS: pending. ARGV: now, the approval key prefix, grant. Pending approvals of the grant not yet expired. */
const COUNT_PENDING = `
local n = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf')) do
  local h = redis.call('HMGET', ARGV[2] .. id, 'status', 'json')
  if h[1] == 'pending' and h[2] then local a = cjson.decode(h[2]); if (a.grantId or a.grant) == ARGV[3] then n = n + 1 end end
end
return n
`;

/**
 * KEYS: all. ARGV: before, the approval key prefix, the binding index prefix, limit. Deletes the
 * oldest ended approvals whose last change was before ARGV[1] (and index entries whose hash is gone).
 */
const PURGE = `
local n = 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[4]))) do
  local k = ARGV[2] .. id
  local h = redis.call('HMGET', k, 'status', 'decidedAt', 'usedAt', 'validUntil', 'json')
  if not h[1] then
    redis.call('ZREM', KEYS[1], id)
  elseif (h[1] == 'denied' or h[1] == 'timeout' or h[1] == 'used' or h[1] == 'unused')
    and math.max(tonumber(h[2] or 0), tonumber(h[3] or 0), tonumber(h[4] or 0)) < tonumber(ARGV[1]) then
    redis.call('DEL', k)
    redis.call('ZREM', KEYS[1], id)
    if h[5] then redis.call('ZREM', ARGV[3] .. cjson.decode(h[5]).binding, id) end
    n = n + 1
  end
end
return n
`;

interface ApprovalScripts {
  tgApprovalCreate(...args: (string | number)[]): Promise<number>;
  tgApprovalDecide(...args: (string | number)[]): Promise<string[] | null>;
  tgApprovalConsume(...args: (string | number)[]): Promise<number>;
  tgApprovalExpire(...args: (string | number)[]): Promise<string[]>;
  tgApprovalCountPending(...args: (string | number)[]): Promise<number>;
  tgApprovalPurge(...args: (string | number)[]): Promise<number>;
}

const NUMBERS = new Set(['decidedAt', 'validUntil', 'usedAt']);

/** How many approvals' last heard status is remembered. */
const TOLD_MAX = 10_000;

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
  /** The status each recently heard approval had when watchers were last told (oldest first). */
  private readonly told = new Map<string, ApprovalStatus>();
  private readonly index: { all: string; pending: string; approved: string };

  constructor(private readonly link: RedisLink) {
    const client = link.client;
    client.defineCommand('tgApprovalCreate', { lua: CREATE, numberOfKeys: 6 });
    client.defineCommand('tgApprovalDecide', { lua: DECIDE, numberOfKeys: 5 });
    client.defineCommand('tgApprovalConsume', { lua: CONSUME, numberOfKeys: 5 });
    client.defineCommand('tgApprovalExpire', { lua: EXPIRE, numberOfKeys: 4 });
    client.defineCommand('tgApprovalCountPending', { lua: COUNT_PENDING, numberOfKeys: 1 });
    client.defineCommand('tgApprovalPurge', { lua: PURGE, numberOfKeys: 1 });
    this.scripts = client as unknown as ApprovalScripts;
    this.index = { all: link.key('approvals'), pending: link.key('approvals', 'pending'), approved: link.key('approvals', 'approved') };
  }

  /**
   * A wake-up from the change channel about an approval (from this instance, another, or anyone
   * who can PUBLISH): the approval is read from the store, and watchers hear it only when its
   * status there differs from the last one they heard. A forged message changes nothing they
   * see; two transitions in quick succession may be heard as the later one only.
   */
  heard(id: string): void {
    if (this.listeners.size === 0 || !/^[a-z0-9]{1,40}$/.test(id)) return;
    this.link.client.hgetall(this.link.key('approval', id)).then((fields) => {
      const a = approvalOf(fields);
      if (!a || this.told.get(id) === a.status) return;
      this.told.delete(id);
      this.told.set(id, a.status);
      if (this.told.size > TOLD_MAX) this.told.delete(this.told.keys().next().value!);
      for (const l of this.listeners) l({ ...a });
    }, () => { /* unreachable: the periodic sweep and the holder's own timer still settle it */ });
  }

  /**
   * After a gap in the change messages (a reconnect, or on a cluster the subscription moving to
   * another node): the approvals watchers last heard as pending (the newest 1,000) are read again,
   * so a decision made in the gap still releases its held call now rather than at its timeout.
   */
  recheck(): void {
    if (this.listeners.size === 0) return;
    const pending = [...this.told].filter(([, status]) => status === 'pending').slice(-1000);
    for (const [id] of pending) this.heard(id);
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
      a.id, JSON.stringify({ ...a, status: 'pending' }), a.requestedAt, a.expiresAt, a.validForMs, a.expiresAt + a.validForMs + KEEP_MS));
  }

  async createIfUnder(a: Approval, max: number, now: number): Promise<boolean> {
    return (await this.run(() => this.scripts.tgApprovalCreate(...this.keys(a.id), this.link.key('approvals', 'binding', a.binding),
      a.id, JSON.stringify({ ...a, status: 'pending' }), a.requestedAt, a.expiresAt, a.validForMs, a.expiresAt + a.validForMs + KEEP_MS,
      max, now, this.link.key('approval', ''), a.grantId ?? a.grant))) === 1;
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
    const ids = await this.run(() => this.scripts.tgApprovalExpire(this.index.pending, this.index.approved, this.link.channel, this.index.all, now, this.link.key('approval', '')));
    return this.many(ids);
  }

  async countPending(grant: string, now: number): Promise<number> {
    return this.run(() => this.scripts.tgApprovalCountPending(this.index.pending, now, this.link.key('approval', ''), grant));
  }

  async purge(before: number, limit: number): Promise<number> {
    return this.run(() => this.scripts.tgApprovalPurge(this.index.all, before, this.link.key('approval', ''), this.link.key('approvals', 'binding', ''), limit));
  }

  /** Changes are heard once the subscription stands: a watcher added now hears every transition made after it. */
  watch(listener: (a: Approval) => void): () => void {
    this.listeners.add(listener);
    return () => { this.listeners.delete(listener); };
  }
}
