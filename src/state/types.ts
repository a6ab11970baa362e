/** One counter increment that a call needs. Keys are opaque to a store. */
export interface Charge {
  key: string;
  amount: number;
  max: number;
  /** When the counter's window ends (ms since epoch): after that the key is dead. */
  expiresAt: number;
  /**
   * The counter without its window start, and the window's length in ms. A store with its own
   * clock (Redis) places the charge in the window of that clock and writes the window's end back
   * to `expiresAt`, so that a release finds the same window.
   */
  window?: { name: string; ms: number };
  /**
   * Only this process can ever charge this counter (a session's: no other process serves the
   * session), so a shared store may keep it in this process's memory.
   */
  local?: boolean;
}

/** A value now, or later: stores in this process answer synchronously, remote ones (Redis) do not. */
export type Awaitable<T> = T | Promise<T>;

/**
 * Counters for limits. `reserve` takes every charge or none, atomically with respect to every
 * other caller of the same store (threads, processes or instances, depending on the store).
 */
export interface CounterStore {
  /** Returns -1 when every charge was taken, else the index of the first charge that would pass its max (nothing taken). */
  reserve(charges: readonly Charge[], now: number): Awaitable<number>;
  /** Gives back charges taken by reserve (the upstream answered with an error or was unreachable). */
  release(charges: readonly Charge[]): Promise<void>;
  value(key: string, now: number): Promise<number>;
  /** The kill switch that `reserveUnlessKilled` reads: its state store's. */
  readonly flags?: FlagStore;
  /**
   * `reserve`, unless the kill switch of `flags` is on for `server` (or gateway-wide): then
   * nothing is taken and the answer is `KILLED`. One step instead of two on the path of every
   * limited call: SQLite reads the switch inside the reservation's write transaction, memory
   * and Redis (from its mirror, as `killedFor` does) just before it.
   */
  reserveUnlessKilled?(server: string, charges: readonly Charge[], now: number): Awaitable<number>;
}

/** What `reserveUnlessKilled` answers when the kill switch is on. */
export const KILLED = -2;

/**
 * What a reservation answers when the shared store has lost its state (Redis flushed or evicted
 * the counters): nothing is taken, and limited calls are refused until an operator acknowledges.
 */
export const STATE_LOST = -3;

export type KillScope = '*' | string;

export interface KillSwitchState {
  scope: KillScope;
  on: boolean;
  reason?: string;
  at: string;
}

/** The kill switch: gateway-wide (`*`) or per server. Read on every call. */
export interface FlagStore {
  /** The scope that is on for this server (`*` wins), or null when calls may pass. */
  killedFor(server: string): Awaitable<KillScope | null>;
  setKillSwitch(scope: KillScope, on: boolean, reason?: string): Promise<void>;
  listKillSwitches(): Promise<KillSwitchState[]>;
}

/** Pinned tool fingerprints per server (rug-pull defence): tool name → SHA-256 of its definition. */
export interface PinStore {
  get(server: string): Awaitable<Record<string, string> | null>;
  /** Replaces the server's pins. */
  set(server: string, pins: Record<string, string>): Awaitable<void>;
}

/** A labelled credential for one or more servers. The token itself is never stored, only its SHA-256. */
export interface Grant {
  id: string;
  label: string;
  /** Its (first) server. */
  server: string;
  /** Every server it opens, `server` first, when more than one; absent: only `server`. */
  servers?: string[];
  tags: string[];
  /** A policy file that replaces the server's for this grant. */
  policy?: string;
  createdAt: string;
  expiresAt?: string;
  revokedAt?: string;
}

export interface GrantStore {
  /** Stores a new grant under the hash of its token. */
  create(grant: Grant, tokenHash: string): Awaitable<void>;
  byTokenHash(tokenHash: string): Awaitable<Grant | null>;
  list(): Awaitable<Grant[]>;
  /** Replaces the token hash (rotation), and the expiry when one is given; false when there is no such live grant. */
  rotate(id: string, tokenHash: string, expiresAt?: string): Awaitable<boolean>;
  revoke(id: string, at: string): Awaitable<boolean>;
}

/** Where a held call stands. Only `pending` and `approved` ever change again. */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'timeout' | 'used' | 'unused';

/**
 * A call held for a human (SPEC section 4). Times are milliseconds since the epoch. `args` are
 * already masked as the approver sees them (approvals/mask.ts); `binding` is the SHA-256 that ties an approval
 * to the exact grant, server, tool and arguments, so it can only release that call.
 */
export interface Approval {
  id: string;
  server: string;
  /** The grant's label, for people to read. */
  grant: string;
  /** The grant's id: what the approval is bound to (labels are not unique). Absent on approvals made before ids were recorded. */
  grantId?: string;
  session: string;
  client?: string;
  tool: string;
  args: unknown;
  /** Where masking changed the arguments, e.g. `args.api_token (secret field)`, `args.cmd (aws_access_key_id)`. */
  masked?: string[];
  binding: string;
  /** JSON pointer of the rule that held the call, and why. */
  rule: string;
  reason: string;
  /** Channels that may decide it: dashboard, cli, api, webhook, client. */
  via: string[];
  requestedAt: number;
  /** A pending approval times out here. */
  expiresAt: number;
  /** How long an approval waits, once approved, for its call to be made again. */
  validForMs: number;
  status: ApprovalStatus;
  decidedBy?: string;
  decidedAt?: number;
  decisionReason?: string;
  /** Approved: the call is allowed once until then. */
  validUntil?: number;
  usedAt?: number;
}

/** A decision on a pending approval. `timeout` is the holder's (or a sweep's) decision. */
export interface ApprovalDecision {
  status: 'approved' | 'denied' | 'timeout';
  by: string;
  reason?: string;
  at: number;
}

/**
 * Pending and decided approvals, shared by every process (and, with Redis, every instance) on the
 * same state. Transitions are compare-and-set: whoever wins a transition is told so, and only the
 * winner acts on it (audits it, forwards the call), so no approval is decided or used twice.
 */
export interface ApprovalStore {
  /** Stores a new approval (status pending). Ids are unique; a duplicate id is an error. */
  create(approval: Approval): Awaitable<void>;
  /**
   * Stores a new pending approval unless its grant (by `grantId`, else `grant`) already has `max`
   * pending approvals live at `now` — counted and created in one atomic step (across the fleet on
   * Redis), so concurrent held calls cannot all read the old count. False when full.
   */
  createIfUnder(approval: Approval, max: number, now: number): Awaitable<boolean>;
  /** The approval with this id, or null. */
  get(id: string): Awaitable<Approval | null>;
  /** Newest first. `status` filters; `limit` caps (default 100). */
  list(opts?: { status?: ApprovalStatus; limit?: number }): Awaitable<Approval[]>;
  /**
   * pending → approved / denied / timeout, exactly once across processes. Returns the approval as
   * decided by this call, or null when it is unknown or no longer pending (someone else decided,
   * or it expired: approved/denied at or after `expiresAt` is refused). An approval gets
   * `validUntil = at + validForMs`.
   */
  decide(id: string, decision: ApprovalDecision): Awaitable<Approval | null>;
  /**
   * approved → used, exactly once across processes, and only while `at < validUntil`. True when
   * this call took it: the caller may then forward the call it is bound to, once.
   */
  consume(id: string, at: number): Awaitable<boolean>;
  /**
   * The newest approval for this binding that can still act at `now`: pending before its
   * `expiresAt`, or approved and unused before its `validUntil`. Null otherwise.
   */
  findLive(binding: string, now: number): Awaitable<Approval | null>;
  /**
   * Ends what ran out by `now`: pending past `expiresAt` → timeout (by "toolgate"), approved past
   * `validUntil` → unused. Returns only those this call changed (exactly once across processes),
   * so the caller can audit them.
   */
  expire(now: number): Awaitable<Approval[]>;
  /** Pending approvals of this grant (by its `grantId`; by `grant` for approvals stored before ids) that have not expired at `now`. */
  countPending(grantId: string, now: number): Awaitable<number>;
  /**
   * Deletes ended approvals (denied, timed out, used, unused) whose last change was before
   * `before`, at most `limit` of them; returns how many went. Pending and approved ones stay.
   */
  purge(before: number, limit: number): Awaitable<number>;
  /**
   * Calls `listener` with the approval after every create and every transition, made by this or
   * any other process, within about a second (SQLite polls while someone watches; Redis uses
   * pub/sub). Returns the function that stops watching.
   */
  watch(listener: (approval: Approval) => void): () => void;
}

/** One live `toolgate serve` of a fleet, as it last announced itself. */
export interface FleetInstance {
  instance: string;
  listen: string;
  servers: string[];
  sessions: number;
  startedAt: string;
  lastSeen: string;
  /** Redis: the id of the state generation the instance works under, or `lost` while it refuses limited calls. */
  generation?: string;
}

/** A fleet of gateways on one shared store (Redis): who is alive, and every instance's audit events. */
export interface FleetView {
  /** Says this instance is alive; it drops out of `instances` 15 s after its last announcement. */
  announce(instance: Omit<FleetInstance, 'lastSeen' | 'generation'>): Promise<void>;
  instances(): Promise<FleetInstance[]>;
  /** Adds an audit event to the fleet's capped stream. Never throws: the instance's own audit log has the event. */
  publish(event: Record<string, unknown>): void;
  /** Calls `onEvent` with each event published from now on, until the returned function is called. */
  follow(onEvent: (event: Record<string, unknown>) => void): () => void;
}

/** What /healthz says about the store: memory and SQLite are always ok, Redis can be unreachable. */
export interface StateHealth {
  kind: StateStore['kind'];
  /** degraded: answers, but something puts its state at risk (Redis: an eviction policy set after start). */
  status: 'ok' | 'degraded' | 'unavailable';
  detail?: string;
}

/**
 * Short-lived records of the built-in OAuth authorization server (registered clients,
 * authorization codes, refresh tokens), as opaque strings under opaque keys, each with an expiry.
 */
export interface OAuthStore {
  put(key: string, value: string, expiresAt: number): Awaitable<void>;
  get(key: string, now: number): Awaitable<string | null>;
  /** Returns the value and deletes it in one step, so a code or refresh token is used once even under races. */
  take(key: string, now: number): Awaitable<string | null>;
  delete(key: string): Awaitable<void>;
  /** Live keys that start with `prefix`. */
  count(prefix: string, now: number): Awaitable<number>;
  /**
   * Stores every record unless a cap is full: for each cap, the live records (at `now`) whose key
   * starts with its prefix are counted, and if one has `max` already, nothing is stored and its
   * index is returned; otherwise -1. One atomic step (across the fleet on Redis), so concurrent
   * registrations cannot all pass on the same count.
   */
  putIfUnder(records: readonly OAuthRecord[], caps: readonly { prefix: string; max: number }[], now: number): Awaitable<number>;
}

export interface OAuthRecord { key: string; value: string; expiresAt: number }

/**
 * What binds a multi round-trip retry (MCP 2026-07-28 `requestState`) to the call it continues:
 * the key toolgate signs those states with, and the states already used. Shared by every process
 * (and, with Redis, every instance) on the same state, so any of them can check a retry, and a
 * state is used once across all of them.
 */
export interface RequestStateStore {
  /** The signing key (base64url of 32 random bytes): created by the first caller, the same for every process on this store afterwards. */
  signingKey(): Awaitable<string>;
  /**
   * Records a state's nonce as used until `expiresAt` (after which the state itself is refused as
   * expired). True only for the first caller, exactly once across processes.
   */
  spend(nonce: string, expiresAt: number, now: number): Awaitable<boolean>;
}

/** A flow role an agent touched with one call (SPEC 11): which tool, on which server, when (ms). */
export interface FlowTouch { role: string; tool: string; server: string; at: number }

/**
 * The flow roles each agent touched, shared by every process (and, with Redis, every instance) on
 * the same state, so a fleet sees one agent's calls wherever they ran. Per agent, role, server and
 * tool the latest touch is kept, until its expiry.
 */
export interface FlowStore {
  /** Records touches by `agent`, each remembered until `expiresAt`. */
  touch(agent: string, touches: readonly FlowTouch[], expiresAt: number): Awaitable<void>;
  /** The agent's touches still remembered at `now`, oldest first (ties by role, server, tool). */
  touched(agent: string, now: number): Awaitable<FlowTouch[]>;
}

export interface StateStore {
  readonly kind: 'memory' | 'sqlite' | 'redis';
  readonly approvals: ApprovalStore;
  readonly counters: CounterStore;
  readonly flags: FlagStore;
  readonly pins: PinStore;
  readonly grants: GrantStore;
  readonly oauth: OAuthStore;
  readonly requestStates: RequestStateStore;
  readonly flows: FlowStore;
  readonly fleet?: FleetView;
  health?(): StateHealth;
  /**
   * For a gateway (serve, run), once at start: checks that the store can keep limits (Redis:
   * reachable, an eviction policy that keeps keys, its state generation — see
   * redis-generation.ts) and logs what an operator must know. Throws a one-line error when the
   * gateway must not start.
   */
  /** For commands run once (the CLI): resolves once the store answers, or rejects with one line naming it (Redis: at the first connection error, within its timeout). */
  connect?(): Promise<void>;
  /** Redis: `toolgate state reset-ack` — a new state generation, so instances that lost state count again (from zero). */
  resetGeneration?(who: string): Promise<{ id: string; at: string; where: string }>;
  begin?(log: (level: 'info' | 'warn' | 'error', message: string) => void): Promise<void>;
  close(): Promise<void>;
}
