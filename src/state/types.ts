/** One counter increment that a call needs. Keys are opaque to a store. */
export interface Charge {
  key: string;
  amount: number;
  max: number;
  /** When the counter's window ends (ms since epoch): after that the key is dead. */
  expiresAt: number;
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
  /** Replaces the token hash (rotation), and the expiry when one is given; false when there is no such live grant. */
  rotate(id: string, tokenHash: string, expiresAt?: string): Awaitable<boolean>;
  revoke(id: string, at: string): Awaitable<boolean>;
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
}

export interface StateStore {
  readonly kind: 'memory' | 'sqlite';
  readonly counters: CounterStore;
  readonly flags: FlagStore;
  readonly pins: PinStore;
  readonly grants: GrantStore;
  readonly oauth: OAuthStore;
  close(): Promise<void>;
}
