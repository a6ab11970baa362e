import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisDsn } from './redis-dsn.js';

/**
 * The connections of one link: a single node's, or a Redis Cluster's (ioredis Cluster, typed as a
 * Redis: every command toolgate sends names keys of one slot, so both answer them alike).
 */
export interface RedisClients {
  client: Redis;
  subscriber: Redis;
  /** Set on a cluster: for what must reach every primary (INFO, SCAN) and to open more connections. */
  cluster?: Cluster;
  /** A new connection like `client` but for blocking reads (no command timeout, no auto-pipelining). */
  duplicate(): Redis;
}

/** Options for a cluster from the single-node ones: each node's connection gets them, the cluster its own. */
function clusterOptions(dsn: RedisDsn, node: RedisOptions, enableAutoPipelining: boolean): ClusterOptions {
  const c = dsn.cluster!;
  const { retryStrategy: _r, enableAutoPipelining: _p, ...perNode } = node;
  return {
    redisOptions: {
      ...perNode,
      ...(c.username ? { username: c.username } : {}),
      ...(c.password ? { password: c.password } : {}),
      ...(c.tls ? { tls: {} } : {}),
    },
    enableAutoPipelining,
    clusterRetryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
    // A command whose connection closed may have run: it is not sent again (a reservation is counted
    // at most once). MOVED, ASK, TRYAGAIN and CLUSTERDOWN answers mean it did not run: those are retried.
    retryDelayOnFailover: 0,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: Math.max(dsn.timeoutMs, 1000),
    // No periodic refresh: ioredis (6.0) re-arms its timer when a refresh ends after quit(), which keeps
    // a closed link (and the process) alive. The slot map is refreshed on MOVED and when a node goes.
    slotsRefreshInterval: 0,
  };
}

export function connectRedis(dsn: RedisDsn, options: RedisOptions & { enableAutoPipelining: boolean }, subscriberOptions: RedisOptions): RedisClients {
  const blocking: RedisOptions = { ...options, commandTimeout: undefined, enableAutoPipelining: false };
  if (!dsn.cluster) {
    const client = new Redis(dsn.url, options);
    return { client, subscriber: new Redis(dsn.url, subscriberOptions), duplicate: () => client.duplicate(blocking) };
  }
  const nodes = dsn.cluster.nodes;
  const cluster = new Cluster(nodes, clusterOptions(dsn, options, true));
  // Subscriptions on a cluster use one connection to one node (messages reach every node); ioredis moves it when that node goes.
  const subscriber = new Cluster(nodes, clusterOptions(dsn, subscriberOptions, false));
  return {
    client: cluster as unknown as Redis,
    subscriber: subscriber as unknown as Redis,
    cluster,
    duplicate: () => new Cluster(nodes, clusterOptions(dsn, blocking, false)) as unknown as Redis,
  };
}

/** Every primary's connection (one, on a single node): for what a cluster answers per node, such as INFO and SCAN. */
export function primaries(clients: Pick<RedisClients, 'client' | 'cluster'>): Redis[] {
  return clients.cluster ? clients.cluster.nodes('master') : [clients.client];
}

/**
 * Sends a write again when a Redis Cluster answered READONLY: the node was a primary until a
 * failover and a script its write pause held ran there after it became a replica, so the write did
 * not run (a replica refuses the first write of a script, before anything is changed). After a short
 * wait it is sent again: the node now answers MOVED, which ioredis follows to the new primary (a
 * forced slot-map refresh here, mid-failover, could drop a node other commands are in flight on).
 * For up to `withinMs`; any other answer, and READONLY after that, is the caller's.
 */
export function againAfterFailover<T>(cluster: Cluster | undefined, send: () => Promise<T>, withinMs = 3000): Promise<T> {
  if (!cluster) return send();
  const deadline = Date.now() + withinMs;
  const attempt = (): Promise<T> => send().catch((err: unknown) => {
    if (!/^READONLY\b/.test((err as Error)?.message ?? '') || Date.now() >= deadline) throw err;
    return new Promise<void>((resolve) => { setTimeout(resolve, 100); }).then(attempt);
  });
  return attempt();
}
