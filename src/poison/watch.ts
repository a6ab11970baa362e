import type { AuditLog } from '../audit/index.js';
import type { Engine } from '../engine/index.js';
import type { Logger } from '../log.js';
import { toolFingerprint } from '../risk/source.js';
import type { ToolDefinition } from '../risk/types.js';
import { hideLevel, scanTool, summarize } from './scan.js';
import type { Finding } from './types.js';

const MAX_REMEMBERED = 10_000;

/**
 * Findings by definition fingerprint, and the findings already reported, for the whole process:
 * the sessions of a gateway list the same definitions again and again, and a finding is about a
 * server's definition, not a session (one log line and audit row per definition and outcome).
 */
const scanned = new Map<string, Finding[]>();
const reported = new Set<string>();

/**
 * The poisoning check of one session's tools/list answers (SPEC 11): scans each listed tool
 * (once per definition in the process), remembers the hide-level findings of what is listed now,
 * and logs and audits each finding once per server and definition unless the policy says
 * `poisoned: allow` for the tool.
 */
export class PoisonWatch {
  /** Each listed tool's hide-level findings, summarised (undefined: none). */
  private readonly listed = new Map<string, string | undefined>();

  constructor(private readonly opts: { server: string; log: Logger; audit?: AuditLog; session?: string; grant?: string }) {}

  /** Findings of a definition (memoised by fingerprint: the same tool lists again and again). */
  private findings(tool: ToolDefinition, fp: string): Finding[] {
    let found = scanned.get(fp);
    if (!found) {
      found = scanTool(tool);
      if (scanned.size >= MAX_REMEMBERED) scanned.clear();
      scanned.set(fp, found);
    }
    return found;
  }

  /** Reviews a listing page; returns the names the policy hides for poisoning. */
  review(tools: readonly unknown[], engine: Engine): Set<string> {
    const hidden = new Set<string>();
    for (const tool of tools) {
      if (!tool || typeof tool !== 'object' || typeof (tool as { name?: unknown }).name !== 'string') continue;
      const t = tool as ToolDefinition;
      const fp = toolFingerprint(t);
      const found = this.findings(t, fp);
      if (this.listed.size >= MAX_REMEMBERED && !this.listed.has(t.name)) this.listed.clear();
      const hideFound = hideLevel(found);
      this.listed.set(t.name, hideFound.length ? summarize(hideFound) : undefined);
      if (found.length === 0) continue;
      const action = engine.current.poisonedFor(t.name);
      if (action === 'allow') continue;
      const hides = action === 'hide' && hideFound.length > 0;
      if (hides) hidden.add(t.name);
      const key = `${this.opts.server}\n${t.name}\n${fp}\n${hides}`;
      if (reported.has(key)) continue;
      if (reported.size >= MAX_REMEMBERED) reported.clear();
      reported.add(key);
      const summary = summarize(found);
      this.opts.log.warn({ server: this.opts.server, tool: t.name, findings: found.map(({ kind, level, field, evidence }) => ({ kind, level, field, evidence })) },
        hides ? 'tool hidden: its definition carries text aimed at the model' : 'tool definition carries text aimed at the model');
      this.opts.audit?.append({
        kind: 'poison', server: this.opts.server, grant: this.opts.grant, session: this.opts.session, tool: t.name,
        decision: hides ? 'deny' : undefined, rule: '(poisoned)', policyHash: engine.current.hash,
        message: `${hides ? 'hidden' : 'warned'}: ${found.length} finding${found.length === 1 ? '' : 's'} (${hideFound.length} hide-level): ${summary}`,
      });
    }
    return hidden;
  }

  /** The hide-level findings of a listed tool, summarised (for the engine's decision), or undefined. */
  hideLevelOf(name: string): string | undefined {
    return this.listed.get(name);
  }
}
