import type { Logger } from 'pino';
import type { Engine } from '../engine/index.js';
import { classifyTool, type ToolDefinition } from '../risk/index.js';
import type { FlowStore, FlowTouch } from '../state/types.js';
import { flowsMatter, type FlowHint } from './rule.js';

/** How long a touch is kept when no rule asks for longer (SPEC 11: the default window). */
export const DEFAULT_FLOW_WINDOW_MS = 3_600_000;

/** The tag an operator sets on grants that are one agent: `agent:<name>`. */
export const AGENT_TAG = 'agent:';

/**
 * Who an agent is (SPEC 11): the grants that share an operator-set `agent:<name>` tag are one
 * agent; otherwise the grant (across all its sessions and servers). Tags come from the operator
 * (grant creation, consent) or, for JWT grants, from the claims the operator maps (tags_claims);
 * never from a name the client chose. Under `run`, the process (`fixed`).
 */
export function agentOf(grant: { id?: string; label: string; tags: readonly string[] }): string {
  const tag = grant.tags.find((t) => t.startsWith(AGENT_TAG) && t.length > AGENT_TAG.length);
  return tag ? `tag:${tag.slice(AGENT_TAG.length)}` : `grant:${grant.id ?? grant.label}`;
}

/**
 * The flows part of a gateway: each tool's roles (the policy's `flow:` for it, else the
 * classifier's on the definition the server listed), what an agent touched (the state store, so a
 * fleet shares it), and a touch recorded when a call of a tool with roles was answered without error.
 */
export class FlowTracker {
  private readonly roles = new WeakMap<object, readonly string[]>();
  /** Roles of tools called without a listed definition, from their names alone. */
  private readonly byName = new Map<string, readonly string[]>();

  constructor(private readonly store: FlowStore, private readonly log: Logger, private readonly fixedAgent?: string) {}

  agent(grant: { id?: string; label: string; tags: readonly string[] }): string {
    return this.fixedAgent ?? agentOf(grant);
  }

  /** The tool's flow roles under the current policy: its entry's `flow:`, else the classifier's (on its name alone when the server never listed it). */
  rolesOf(engine: Engine, tool: string, definition: ToolDefinition | undefined): readonly string[] {
    const override = engine.current.lookup(tool).entry?.flow;
    if (override) return override;
    if (!definition) {
      let named = this.byName.get(tool);
      if (!named) {
        if (this.byName.size >= 10_000) this.byName.clear();
        this.byName.set(tool, (named = classifyTool({ name: tool }).flows?.roles ?? []));
      }
      return named;
    }
    let found = this.roles.get(definition);
    if (!found) this.roles.set(definition, (found = classifyTool(definition).flows?.roles ?? []));
    return found;
  }

  /**
   * What the engine needs to apply the policy's flow rules to this call, or undefined when no rule
   * acts on the tool's roles (then nothing is read). A store that cannot answer fails closed: every
   * role counts as touched, so the rule holds (or denies) and says why.
   */
  hint(engine: Engine, agent: string, roles: readonly string[], now: number): FlowHint | Promise<FlowHint> | undefined {
    const rules = engine.current.flows;
    if (!rules.length || !flowsMatter(rules, roles)) return undefined;
    const unknown = (err: Error): FlowHint => {
      this.log.error({ err: err.message }, 'flows: cannot read what the agent touched; applying the flow rules as if every role was touched');
      const roleNames = [...new Set(rules.flatMap((r) => r.after))];
      return { roles, touched: roleNames.map((role) => ({ role, tool: '(unknown: the state store did not answer)', server: '-', at: now })) };
    };
    try {
      const touched = this.store.touched(agent, now);
      return touched instanceof Promise ? touched.then((t) => ({ roles, touched: t }), unknown) : { roles, touched };
    } catch (err) {
      return unknown(err as Error);
    }
  }

  /**
   * A call of a tool with these roles was answered without error: the agent touched them. Recorded
   * whether or not this server's policy has flow rules: another server's may (one agent, many servers).
   */
  touch(engine: Engine, agent: string, roles: readonly string[], tool: string, server: string, at: number): void {
    const rules = engine.current.flows;
    if (!roles.length) return;
    const keepMs = Math.max(DEFAULT_FLOW_WINDOW_MS, ...rules.map((r) => r.windowMs));
    const touches: FlowTouch[] = roles.map((role) => ({ role, tool, server, at }));
    try {
      const done = this.store.touch(agent, touches, at + keepMs);
      if (done instanceof Promise) done.catch((err: Error) => this.log.error({ err: err.message, tool }, 'flows: could not record a touched role'));
    } catch (err) {
      this.log.error({ err: (err as Error).message, tool }, 'flows: could not record a touched role');
    }
  }
}
