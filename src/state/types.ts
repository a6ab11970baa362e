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
}

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

/** A labelled credential for one server. The token itself is never stored, only its SHA-256. */
export interface Grant {
  id: string;
  label: string;
  server: string;
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
  /** Replaces the token hash (rotation); false when there is no such live grant. */
  rotate(id: string, tokenHash: string): Awaitable<boolean>;
  revoke(id: string, at: string): Awaitable<boolean>;
}

/** What /healthz says about the store: memory and SQLite are always ok, Redis can be unreachable. */
export interface StateHealth {
  kind: StateStore['kind'];
  status: 'ok' | 'unavailable';
  detail?: string;
}

export interface StateStore {
  readonly kind: 'memory' | 'sqlite' | 'redis';
  readonly counters: CounterStore;
  readonly flags: FlagStore;
  readonly pins: PinStore;
  readonly grants: GrantStore;
  health?(): StateHealth;
  close(): Promise<void>;
}
