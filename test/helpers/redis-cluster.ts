import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from './redis.js';
import { tempDir } from './toolgate.js';

/** One redis-server of a test cluster: its client port, its cluster bus port, and (once joined) its node id. */
export interface ClusterNode {
  port: number;
  busPort: number;
  id: string;
  proc?: ChildProcess;
  /** A plain connection to this node alone (not cluster-aware), for CLUSTER and INFO commands. */
  admin: Redis;
  /** Stopped with SIGSTOP (cutReplica): it answers nothing, so it is never asked about the cluster. */
  paused?: boolean;
}

/** A command to a node that stopped answering fails after this, so every wait below tries again instead of hanging. */
const ADMIN = { host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: 2000 } as const;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, check: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const got = await check().catch(() => undefined);
    if (got) return got;
    if (Date.now() > end) throw new Error(`test cluster: timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * A Redis Cluster of Debian's redis-server on loopback ports of its own: `primaries` primaries
 * holding the 16384 slots in equal ranges, each with `replicas` replicas, without persistence, a
 * node timeout of 1 s (an automatic failover takes a few seconds). Built by hand (CLUSTER
 * ADDSLOTSRANGE, MEET, REPLICATE) so the bus ports are free ports too; start() resolves once every
 * node says cluster_state:ok and every replica's link to its primary is up. stop() ends them all.
 */
export class TestRedisCluster {
  private constructor(readonly nodes: ClusterNode[], private readonly dir: string) {}

  static async start(opts: { primaries?: number; replicas?: number } = {}): Promise<TestRedisCluster> {
    const primaries = opts.primaries ?? 3;
    const replicas = opts.replicas ?? 1;
    const dir = tempDir('toolgate-cluster-');
    const nodes: ClusterNode[] = [];
    for (let i = 0; i < primaries * (1 + replicas); i++) {
      const port = await freePort();
      let busPort = await freePort();
      while (busPort === port) busPort = await freePort();
      nodes.push({ port, busPort, id: '', admin: new Redis({ port, ...ADMIN }) });
    }
    const cluster = new TestRedisCluster(nodes, dir);
    try {
      await Promise.all(nodes.map((n) => cluster.spawn(n)));
      for (const [i, n] of nodes.entries()) {
        n.id = await n.admin.call('CLUSTER', 'MYID') as string;
        await n.admin.call('CLUSTER', 'SET-CONFIG-EPOCH', String(i + 1));
      }
      const per = Math.floor(16384 / primaries);
      for (let i = 0; i < primaries; i++) {
        await nodes[i].admin.call('CLUSTER', 'ADDSLOTSRANGE', String(i * per), String(i === primaries - 1 ? 16383 : (i + 1) * per - 1));
      }
      for (const n of nodes.slice(1)) await nodes[0].admin.call('CLUSTER', 'MEET', '127.0.0.1', String(n.port), String(n.busPort));
      await until('every node to know every other', async () => {
        for (const n of nodes) {
          const lines = (await n.admin.call('CLUSTER', 'NODES') as string).trim().split('\n');
          if (lines.length < nodes.length || lines.some((l) => /handshake|noaddr/.test(l))) return false;
        }
        return true;
      });
      for (let r = 0; r < primaries * replicas; r++) {
        await nodes[primaries + r].admin.call('CLUSTER', 'REPLICATE', nodes[r % primaries].id);
      }
      await cluster.settled();
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  private async spawn(n: ClusterNode): Promise<void> {
    const proc = spawn('redis-server', [
      '--port', String(n.port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-port', String(n.busPort),
      '--cluster-config-file', `${this.dir}/nodes-${n.port}.conf`, '--cluster-node-timeout', '1000', '--dir', this.dir,
      '--save', '', '--appendonly', 'no',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    n.proc = proc;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      proc.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Ready to accept connections')) resolve();
      });
      proc.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${out.slice(-500)}`)));
      proc.once('error', reject);
    });
  }

  /** Resolves once every live node says cluster_state:ok and every live replica is in sync with its primary. */
  async settled(): Promise<void> {
    const live = this.nodes.filter((n) => n.proc);
    await until('cluster_state:ok on every node, replicas in sync and known as such everywhere', async () => {
      let replicas = 0;
      for (const n of live) {
        if (!/cluster_state:ok/.test(await n.admin.call('CLUSTER', 'INFO') as string)) return false;
        const repl = await n.admin.info('replication');
        if (/role:slave/.test(repl) && !/master_link_status:up/.test(repl)) return false;
        if (/role:slave/.test(repl)) replicas++;
      }
      for (const n of live) {
        const lines = (await n.admin.call('CLUSTER', 'NODES') as string).trim().split('\n');
        if (lines.filter((l) => / (myself,)?slave /.test(l) && !/fail/.test(l)).length !== replicas) return false;
      }
      return true;
    }, 30_000);
  }

  /** Seed nodes for a DSN: the first two primaries (the client finds the rest). */
  dsn(query: string): string {
    return `redis+cluster://${this.nodes.slice(0, 2).map((n) => `127.0.0.1:${n.port}`).join(',')}${query ? `?${query}` : ''}`;
  }

  /** The node that is now primary for `key`'s slot, and its replicas (from CLUSTER NODES: CLUSTER SLOTS leaves out replicas of an empty primary). */
  async holder(key: string): Promise<{ primary: ClusterNode; replicas: ClusterNode[] }> {
    // Never a stopped node: a question to it would wait for ever (a full run hung here for 600 s when the slot's replica came first).
    const asker = this.nodes.find((n) => n.proc && !n.paused)!;
    const slot = await asker.admin.call('CLUSTER', 'KEYSLOT', key) as number;
    const lines = (await asker.admin.call('CLUSTER', 'NODES') as string).trim().split('\n').map((l) => l.split(' '));
    const serves = (ranges: string[]) => ranges.some((r) => { const [a, b = a] = r.split('-').map(Number); return slot >= a && slot <= b; });
    const master = lines.find((f) => /master/.test(f[2]) && !/fail/.test(f[2]) && serves(f.slice(8)))!;
    const byId = (id: string) => this.nodes.find((n) => n.id === id)!;
    const replicas = lines.filter((f) => /slave/.test(f[2]) && !/fail/.test(f[2]) && f[3] === master[0]).map((f) => byId(f[0]));
    return { primary: byId(master[0]), replicas };
  }

  /**
   * The replica of `key`'s primary takes over. `manual`: CLUSTER FAILOVER on the replica (the
   * primary stops writes, the replica catches up, then swaps: nothing acknowledged is lost).
   * `kill`: the primary is killed (SIGKILL) and the cluster promotes its replica on its own after
   * the node timeout (writes the replica had not received are lost). Resolves with the new
   * primary and the old one, once the cluster serves the slot again.
   */
  async failover(key: string, how: 'manual' | 'kill'): Promise<{ primary: ClusterNode; old: ClusterNode }> {
    const { primary, replicas } = await this.holder(key);
    const next = replicas[0];
    if (how === 'manual') await next.admin.call('CLUSTER', 'FAILOVER');
    else {
      await this.kill(primary);
      this.pause(next, false);
    }
    await until('the replica to become primary', async () => /role:master/.test(await next.admin.info('replication')));
    await until('the cluster to serve the slot from the new primary', async () => (await this.holder(key)).primary === next, 30_000);
    await this.settled();
    return { primary: next, old: primary };
  }

  /**
   * Cuts `key`'s primary off from its replica without either side noticing for a while: the
   * replica is stopped (SIGSTOP) and the primary drops its connection, so writes from now on reach
   * the primary only. A `kill` failover after it loses them for certain.
   */
  async cutReplica(key: string): Promise<void> {
    const { primary, replicas } = await this.holder(key);
    this.pause(replicas[0], true);
    await primary.admin.call('CLIENT', 'KILL', 'TYPE', 'replica');
  }

  async kill(n: ClusterNode): Promise<void> {
    const proc = n.proc;
    if (!proc || proc.exitCode !== null) return;
    n.proc = undefined;
    n.admin.disconnect();
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  }

  /** Starts a killed node again on its port and cluster config: a primary that failed over rejoins as a replica of its successor. */
  async restart(n: ClusterNode): Promise<void> {
    n.admin = new Redis({ port: n.port, ...ADMIN });
    await this.spawn(n);
    await until('the node to rejoin as a replica', async () => /role:slave/.test(await n.admin.info('replication')));
    await this.settled();
  }

  /** SIGSTOP / SIGCONT: a node that neither answers nor drops its connections (a replica that lags). */
  pause(n: ClusterNode, paused: boolean): void {
    n.paused = paused;
    n.proc?.kill(paused ? 'SIGSTOP' : 'SIGCONT');
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map(async (n) => {
      if (n.proc) this.pause(n, false);
      await this.kill(n);
      n.admin.disconnect();
    }));
  }
}
