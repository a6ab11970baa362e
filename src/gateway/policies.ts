import { statSync } from 'node:fs';
import type { AuditLog } from '../audit/index.js';
import { CompiledPolicy, type Engine } from '../engine/index.js';
import type { Logger } from '../log.js';
import { formatIssue, loadPolicyFile, watchPolicyFile, type LoadResult } from '../policy/index.js';
import type { Grant } from '../state/types.js';
import type { GatewayConfig, ServerConfig } from '../config/gateway.js';
import { HttpError } from '../http/errors.js';
import type { GatewayMetrics } from './metrics.js';

export interface PolicyFilesOptions {
  config: () => GatewayConfig;
  /** The gateway's live sessions: a reloaded policy reaches those using its file. */
  sessions: ReadonlyMap<string, { policyFile?: string; engine: Engine }>;
  metrics: GatewayMetrics;
  audit: AuditLog;
  log: Logger;
}

/** The gateway's policy files: loaded, cached per version, watched and hot-reloaded into live sessions. */
export class PolicyFiles {
  /**
   * The last good version of each policy file; `rejected`: the mtime of a version that failed to
   * load, `problem` why and `since` when (shown on /healthz and the dashboard until a good version loads).
   */
  private readonly policies = new Map<string, { mtime: number; policy: CompiledPolicy; rejected?: number; problem?: string; since?: string }>();
  private readonly watchers = new Map<string, () => void>();

  constructor(private readonly opts: PolicyFilesOptions) {}

  private get config(): GatewayConfig {
    return this.opts.config();
  }

  private get sessions(): PolicyFilesOptions['sessions'] {
    return this.opts.sessions;
  }

  private get metrics(): GatewayMetrics {
    return this.opts.metrics;
  }

  /** The policy version in force for this file, if one was loaded. */
  inForce(file: string): CompiledPolicy | undefined {
    return this.policies.get(file)?.policy;
  }

  /** Stops watching every file. */
  stop(): void {
    for (const stop of this.watchers.values()) stop();
  }

  /**
   * The compiled policy for a new session: the grant's, else the server's, else null (the
   * recommended policy). Compiled policies are immutable, so sessions share one per file version.
   * A version that does not load leaves the last good one in use (logged and counted once).
   */
  policyFor(server: ServerConfig, grant: Grant): CompiledPolicy | null {
    const file = grant.policy ?? server.policy;
    if (!file) return null;
    let mtime = 0;
    try { mtime = statSync(file).mtimeMs; } catch { /* loadPolicyFile reports it */ }
    const cached = this.policies.get(file);
    if (cached && (cached.mtime === mtime || cached.rejected === mtime)) return cached.policy;
    const loaded = loadPolicyFile(file);
    if (!loaded.ok) {
      const problem = formatIssue(file, loaded.issues[0]);
      if (!cached) throw new HttpError(503, `the policy is invalid and no earlier version of it was loaded: ${problem}`);
      cached.rejected = mtime;
      this.policyRejected(file, cached, problem);
      return cached.policy;
    }
    const policy = new CompiledPolicy(loaded.policy, loaded.hash);
    this.policies.set(file, { mtime, policy });
    this.watch(file);
    return policy;
  }

  private policyRejected(file: string, cached: { problem?: string; since?: string }, problem: string): void {
    cached.problem = problem;
    cached.since = new Date().toISOString();
    this.metrics.policyRejected.inc({ policy: file });
    this.opts.log.error({ policy: file }, `policy reload rejected, keeping the previous policy (it decides every call until the file is fixed): ${problem}`);
  }

  /**
   * Every configured server's policy file, loaded before the gateway takes a request: a file that
   * is missing or invalid (and was never loaded) refuses the start, or the configuration reload,
   * naming the file, line and column. A file with a good version loaded already keeps it.
   */
  loadPolicies(config: GatewayConfig): void {
    for (const [name, server] of Object.entries(config.servers)) {
      const file = server.policy;
      if (!file || this.policies.has(file)) continue;
      let mtime = 0;
      try { mtime = statSync(file).mtimeMs; } catch { /* loadPolicyFile reports it */ }
      const loaded = loadPolicyFile(file);
      if (!loaded.ok) throw new Error(`server "${name}" has an invalid policy: ${formatIssue(file, loaded.issues[0])}`);
      this.policies.set(file, { mtime, policy: new CompiledPolicy(loaded.policy, loaded.hash) });
      this.watch(file);
    }
  }

  /** Why the policy file's latest version was refused (the previous one still decides), when it was. */
  policyProblem(file: string): { problem: string; since: string } | undefined {
    const cached = this.policies.get(file);
    return cached?.problem ? { problem: cached.problem, since: cached.since! } : undefined;
  }

  /** For /healthz (no credentials): which servers run on a previous policy version; not the file's path or problem. */
  policyWarnings(): string[] {
    return Object.entries(this.config.servers).filter(([, s]) => s.policy && this.policyProblem(s.policy))
      .map(([name]) => `server "${name}": the last edit of its policy file was rejected; the previous version still decides its calls (see the log or the dashboard)`);
  }

  /** Hot reload: a changed policy file reaches every live session using it; an invalid one is refused. */
  private watch(file: string): void {
    if (this.watchers.has(file)) return;
    this.watchers.set(file, watchPolicyFile(file, (result) => {
      let mtime = 0;
      try { mtime = statSync(file).mtimeMs; } catch { /* gone again */ }
      const cached = this.policies.get(file);
      if (!result.ok) {
        // A new session may have met this version first; it is counted once.
        if (cached && cached.rejected !== mtime) {
          cached.rejected = mtime;
          this.policyRejected(file, cached, formatIssue(file, result.issues[0]));
        }
        return;
      }
      this.applyPolicy(file, result);
    }));
  }

  /** A valid policy file's new content reaches every live session using it (once per content: the watcher may see a save the dashboard applied). */
  applyPolicy(file: string, result: Extract<LoadResult, { ok: true }>): void {
    let mtime = 0;
    try { mtime = statSync(file).mtimeMs; } catch { /* gone again */ }
    const current = this.policies.get(file);
    // After a rejected edit, the person who fixed it sees that it took.
    if (current?.problem) this.opts.log.info({ policy: file, policyHash: result.hash }, `policy ${file} loads again`);
    if (current?.policy.hash === result.hash) {
      current.mtime = mtime;
      delete current.problem;
      delete current.rejected;
      return;
    }
    const policy = new CompiledPolicy(result.policy, result.hash);
    this.policies.set(file, { mtime, policy });
    for (const live of this.sessions.values()) if (live.policyFile === file) live.engine.setPolicy(policy);
    this.opts.audit.append({ kind: 'policy_reload', policyHash: result.hash, message: file });
    this.opts.log.info({ policy: file, policyHash: result.hash }, 'policy reloaded');
  }
}
