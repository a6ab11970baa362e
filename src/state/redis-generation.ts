import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { RedisLink } from './redis.js';
import { primaries } from './redis-connect.js';

/**
 * The generation marker: one key (`PREFIX:generation`, no expiry) that says "this keyspace holds
 * toolgate's state since `at`". The first instance writes it into an empty keyspace; `toolgate
 * state reset-ack` rewrites it. An instance that finds it gone or replaced under it knows the
 * counters were lost (FLUSHALL, eviction, a restart without persistence) and refuses limited
 * calls until an operator acknowledges: a flood of held calls must not buy an agent its limits back.
 */
export interface Marker {
  id: string;
  /**
   * `start`: written by an instance that found no state; `reset-ack`: by an operator; `lost`: by
   * an instance that found state lost, so that every instance — one started later included — stays
   * lost until an operator acknowledges.
   */
  by: 'start' | 'reset-ack' | 'lost';
  at: string;
  who: string;
}

export type LogFn = (level: 'info' | 'warn' | 'error', message: string) => void;

/** Why a gateway refuses to start on this Redis: one line for the operator. */
export class RedisStartError extends Error {}

/** Marker times come from Redis's clock (TIME), so an operator's or another host's clock does not decide which marker is newer. */
async function redisNow(link: RedisLink): Promise<number> {
  // On a cluster TIME would go to any node: a script on the marker's key asks the node that holds toolgate's slot.
  const [sec, usec] = link.cluster ? await link.client.eval(`return redis.call('TIME')`, 1, link.generation.key) as [string, string] : await link.client.time();
  return Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
}

function newMarker(by: Marker['by'], who: string, at: number): string {
  return JSON.stringify({ id: randomBytes(8).toString('hex'), by, at: new Date(at).toISOString(), who } satisfies Marker);
}

/** Writes ARGV[2] only if the marker is still ARGV[1] ('' for none): a loss never overwrites an acknowledgement made meanwhile. */
const REPLACE_IF = `
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
`;

/** A marker's time in ms, or 0 when it has none readable. */
function timeOf(m: Marker | null): number {
  const t = m ? Date.parse(m.at) : NaN;
  return Number.isFinite(t) ? t : 0;
}

function parse(text: string): Marker | null {
  try {
    const m = JSON.parse(text) as Marker;
    return m && typeof m.id === 'string' && (m.by === 'start' || m.by === 'reset-ack' || m.by === 'lost') ? m : null;
  } catch {
    return null;
  }
}

const RESET_HINT = 'toolgate state reset-ack -c FILE (or --state DSN)';

/** This instance's view of the generation: which marker it works under, or that state was lost. */
export class Generation {
  readonly key: string;
  /** The reservation sequence, next to the marker: the reservation script increments it. */
  readonly seqKey: string;
  /** The marker text reservations expect; null while state is lost; undefined before joining. */
  private marker: string | null | undefined;
  /** The marker this instance lost: an acknowledgement is a newer one. */
  private lostFrom: string | undefined;
  private lostReason = '';
  /** The time of the newest marker (or loss) this instance knew: only a reset-ack newer than it is an acknowledgement; an older marker coming back is a rollback. */
  private floor = 0;
  /** The highest reservation sequence number seen under the current marker: a lower one means Redis went back to an older snapshot. */
  private seq = 0;
  private joining: Promise<void> | undefined;
  private checking: Promise<void> | undefined;
  private log: LogFn = () => {};

  constructor(private readonly link: RedisLink) {
    this.key = link.key('generation');
    this.seqKey = link.key('generation', 'seq');
  }

  /** The marker text a reservation must find in Redis, or null while state is lost. Joins first if needed (library use without `begin`). */
  expected(): string | null | Promise<string | null> {
    if (this.marker !== undefined) return this.marker;
    this.joining ??= this.join(async () => false).catch((err: unknown) => { this.joining = undefined; throw err; });
    return this.joining.then(() => this.marker ?? null);
  }

  get lost(): boolean {
    return this.marker === null;
  }

  /** For the fleet's announcements and /healthz: the marker id, or `lost`. */
  describe(): string | undefined {
    if (this.marker === undefined) return undefined;
    return this.marker === null ? 'lost' : parse(this.marker)?.id ?? '?';
  }

  lostDetail(): string {
    return `state lost (${this.lostReason}): limited calls are refused until ${RESET_HINT}`;
  }

  /**
   * At start: refuses a Redis that may evict keys (unless the DSN says eviction=warn), then joins
   * the generation in Redis: the marker there, or a new one written into an empty keyspace
   * (logged loudly), or — when no marker is left but instances that held one are still live —
   * lost from the start.
   */
  async begin(log: LogFn, othersLive: () => Promise<boolean>): Promise<void> {
    this.log = log;
    await this.checkEviction();
    this.joining = this.join(othersLive);
    await this.joining;
  }

  /** maxmemory_policy; on a cluster every primary's (the first that is not noeviction: any of them can come to hold toolgate's slot). */
  private async policy(): Promise<string> {
    try {
      const nodes = primaries(this.link);
      if (nodes.length === 0) return 'unknown (INFO memory failed: no primary is known yet)';
      const policies = await Promise.all(nodes.map(async (node) => /^maxmemory_policy:(\S+)/m.exec(await node.info('memory'))?.[1] ?? 'unknown (INFO memory does not say)'));
      return policies.find((p) => p !== 'noeviction') ?? 'noeviction';
    } catch (err) {
      return `unknown (INFO memory failed: ${(err as Error).message})`;
    }
  }

  /** Set while Redis's eviction policy has changed from noeviction since start: for /healthz and toolgate_state_up. */
  evicting: string | undefined;
  private policyLast = 'noeviction';

  /**
   * In the periodic check (never on a call's path): re-reads maxmemory_policy, since an operator
   * (or a managed Redis's defaults after a failover) can change it after start. A change to a
   * policy that may evict keys is logged as an error and shown as degraded health (a DSN with
   * eviction=warn accepted that risk at start: only a warning then). Connection errors change nothing.
   */
  async recheckEviction(): Promise<void> {
    if (this.marker === undefined) return;
    const policy = await this.policy();
    if (policy.startsWith('unknown (INFO memory failed')) return;
    const was = this.policyLast;
    this.policyLast = policy;
    if (policy === was) return;
    const where = `Redis at ${this.link.dsn.display}`;
    if (policy === 'noeviction') {
      this.evicting = undefined;
      this.log('warn', `${where}: maxmemory_policy is noeviction again`);
      return;
    }
    const risk = `${where}: maxmemory_policy changed from ${was} to ${policy}: under memory pressure it can drop toolgate's counters and approvals, and agents get their limits back. Set maxmemory-policy noeviction`;
    if (this.link.dsn.eviction === 'warn') { this.log('warn', risk); return; }
    this.evicting = `maxmemory_policy ${policy} may evict keys (it was ${was})`;
    this.log('error', risk);
  }

  private async checkEviction(): Promise<void> {
    const { display, eviction } = this.link.dsn;
    const policy = await this.policy();
    this.policyLast = policy;
    if (policy === 'noeviction') return;
    const risk = `Redis at ${display} may evict keys (maxmemory_policy ${policy}): under memory pressure it can drop toolgate's counters and approvals, and agents get their limits back`;
    if (eviction === 'warn') {
      this.log('warn', `${risk}; starting anyway because the state DSN says eviction=warn`);
      return;
    }
    throw new RedisStartError(`${risk}. Set maxmemory-policy noeviction on that Redis, or add eviction=warn to the state DSN to start anyway`);
  }

  private async join(othersLive: () => Promise<boolean>): Promise<void> {
    const client = this.link.client;
    const existing = await client.get(this.key);
    if (existing !== null) {
      const found = parse(existing);
      if (found?.by === 'lost') {
        // An instance found the state lost and nobody has acknowledged it since: a restart does not make it whole again.
        this.floor = timeOf(found);
        this.lose(null, `an instance (${found.who}) found the state lost at ${found.at} and no operator has acknowledged it since`, existing);
        return;
      }
      this.adopt(existing);
      return;
    }
    if (await othersLive()) {
      await this.loseAndMark(null, 'the generation marker is gone while other instances are live', null);
      return;
    }
    const mine = newMarker('start', `${hostname()}:${process.pid}`, await redisNow(this.link));
    if ((await client.set(this.key, mine, 'NX')) === 'OK') {
      this.adopt(mine);
      const where = `toolgate state in Redis at ${this.link.dsn.display} (prefix ${this.link.dsn.prefix})`;
      // Grants, kill switches or approvals without a marker: the first start of a version that keeps one (an upgrade), or a partial loss.
      const kept = await client.exists(this.link.key('grants'), this.link.key('kill'), this.link.key('approvals'));
      if (kept > 0) this.log('warn', `${where} had no state generation marker: one is written now and the state there is kept (expected once, on the first start of a toolgate that keeps the marker; otherwise part of the state was lost)`);
      else this.log('warn', `${where} starts EMPTY: no state generation was found, so every counter starts from zero. If this Redis held toolgate state before, it was lost (a flush, eviction, or a restart without persistence)`);
      return;
    }
    const now = await client.get(this.key);
    if (now === null) await this.loseAndMark(null, 'the generation marker vanished while starting', null);
    else if (parse(now)?.by === 'lost') this.lose(null, 'an instance found the state lost while this one started', now);
    else this.adopt(now);
  }

  private adopt(marker: string): void {
    this.marker = marker;
    this.lostFrom = undefined;
    this.floor = Math.max(this.floor, timeOf(parse(marker)));
    this.seq = 0;
  }

  /**
   * The sequence number a reservation returned (the reservation script increments it). Lower than
   * one seen before under the same marker: Redis went back to an older snapshot (a crash with RDB
   * persistence, a restored backup, a promoted replica that lagged), and the counters with it.
   */
  sequence(n: number): void {
    if (this.marker === null || this.marker === undefined) return;
    if (n > this.seq) { this.seq = n; return; }
    void this.loseAndMark(this.marker, `the state went back in time (reservation sequence ${n}, already saw ${this.seq}): Redis restarted from an older snapshot, a backup was restored, or a lagging replica took over`);
  }

  /** A reservation found the marker missing or changed: refuse at once, then see whether it was an acknowledgement. */
  stale(): Promise<void> {
    return this.check();
  }

  /** Reads the marker and the sequence (one MGET; concurrent checks share it) and applies what they say. Connection errors change nothing. */
  check(): Promise<void> {
    if (this.marker === undefined) return Promise.resolve();
    return (this.checking ??= this.link.client.mget(this.key, this.seqKey).then(async ([now, seq]) => {
      if (now === this.marker && this.marker !== null && this.seq > 0 && Number(seq ?? 0) < this.seq) this.sequence(Number(seq ?? 0));
      else await this.apply(now);
    }, () => {}).finally(() => { this.checking = undefined; }));
  }

  private async apply(now: string | null): Promise<void> {
    const mine = this.marker;
    if (mine === undefined || now === mine) return;
    const found = now === null ? null : parse(now);
    // At or after what this instance knew: marker times are whole milliseconds, and an operator can acknowledge within the millisecond of the loss.
    if (found?.by === 'reset-ack' && now !== this.lostFrom && timeOf(found) >= this.floor) {
      this.adopt(now!);
      this.log('warn', `state reset acknowledged by ${found.who} at ${found.at}: limited calls are counted again, from zero`);
      return;
    }
    if (mine === null) return;
    const reason = now === null ? 'the generation marker is gone'
      : found?.by === 'lost' ? `another instance (${found.who}) found the state lost at ${found.at}`
        : found?.by === 'reset-ack' ? `an acknowledgement older than the state this instance knew came back (${found.at}): Redis went back to an older snapshot`
          : 'the generation marker was replaced by an instance that started on an empty keyspace';
    await this.loseAndMark(mine, reason, now);
  }

  /**
   * Refuses at once, then leaves a lasting `lost` marker in Redis (unless the marker changed again
   * meanwhile), so that every instance of the fleet and every instance started later stays lost
   * until an operator acknowledges. Connection errors leave this instance lost all the same. The
   * promise (also `marked()`) settles once the marker is written or its write failed.
   */
  private loseAndMark(from: string | null, reason: string, seen?: string | null): Promise<void> {
    if (this.marker === null) return this.marking;
    this.lose(from, reason);
    if (seen !== undefined && parse(seen ?? '')?.by === 'lost') return this.marking;
    this.marking = this.mark(from, seen);
    return this.marking;
  }

  /**
   * Settles once the `lost` marker this instance found cause to write is in Redis (or its write
   * failed): a call refused as state lost is answered only then, so no other instance grants a
   * call that starts after this refusal (it finds the marker). Resolved when nothing is being written.
   */
  marked(): Promise<void> {
    return this.marking;
  }

  private marking: Promise<void> = Promise.resolve();

  private async mark(from: string | null, seen?: string | null): Promise<void> {
    try {
      const at = await redisNow(this.link);
      this.floor = Math.max(this.floor, at);
      const lost = newMarker('lost', `${hostname()}:${process.pid}`, at);
      const current = (seen === undefined ? from : seen) ?? '';
      await this.link.client.eval(REPLACE_IF, 1, this.key, current, lost);
    } catch { /* unreachable: this instance stays lost; the others find the marker gone or changed themselves */ }
  }

  private lose(from: string | null, reason: string, lostMarker?: string): void {
    this.marker = null;
    this.lostFrom = lostMarker ?? from ?? undefined;
    this.lostReason = `${reason}: FLUSHALL, eviction, or a Redis restart without persistence`;
    this.log('error', `toolgate state in Redis at ${this.link.dsn.display} (prefix ${this.link.dsn.prefix}) was LOST — ${this.lostDetail()}`);
  }
}

/** `toolgate state reset-ack`: a new marker by an operator, and a wake-up to every instance. */
export async function resetAck(link: RedisLink, who: string): Promise<Marker> {
  const text = newMarker('reset-ack', who, await redisNow(link).catch(link.failure));
  const results = await link.client.multi().set(link.generation.key, text).publish(link.channel, 'generation').exec().catch(link.failure);
  const failed = results?.find(([err]) => err)?.[0];
  if (failed) link.failure(failed);
  return JSON.parse(text) as Marker;
}
