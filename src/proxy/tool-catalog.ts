import { skeleton, type Engine } from '../engine/index.js';
import type { PoisonWatch } from '../poison/watch.js';
import type { PinGuard } from './pins.js';
import { isObject } from './messages.js';
import type { ToolDefinition } from '../risk/types.js';

/** The server's advertised tool names, for look-alike checks, and the filter of what the agent may see. */
export class ToolCatalog {
  private readonly knownTools = new Map<string, string[]>();
  private readonly skeletons = new Map<string, string>();
  /** The definitions the server listed, by name (their flow roles, src/flows; their inputSchema's `x-mcp-header` declarations, checked for modern clients). */
  private readonly definitions = new Map<string, ToolDefinition>();

  definition(name: string): ToolDefinition | undefined {
    return this.definitions.get(name);
  }

  inputSchema(name: string): unknown {
    return this.definitions.get(name)?.inputSchema;
  }

  /** Advertised tool names that look like `name` (memoised: names repeat). */
  aliases(name: string): readonly string[] {
    if (this.knownTools.size === 0) return [];
    let sk = this.skeletons.get(name);
    if (sk === undefined) {
      sk = skeleton(name);
      if (this.skeletons.size > 10_000) this.skeletons.clear();
      this.skeletons.set(name, sk);
    }
    return this.knownTools.get(sk) ?? [];
  }

  /**
   * Remembers every listed tool for look-alike checks, then removes the ones the agent could
   * never call: hidden, denied outright or without an entry under default deny (Engine.listable),
   * and, when pins block, those whose definitions changed, and those the policy hides for
   * poisoned definitions (src/poison).
   */
  filter(tools: unknown[], engine: Engine, pins?: PinGuard, poison?: PoisonWatch): unknown[] {
    const changed = new Set(pins?.review(tools) ?? []);
    const poisoned = poison?.review(tools, engine) ?? new Set<string>();
    const blockChanged = engine.current.pinsOnChange === 'block';
    return tools.filter((tool) => {
      if (!isObject(tool) || typeof tool.name !== 'string') return true;
      const name = tool.name;
      this.definitions.set(name, tool as unknown as ToolDefinition);
      const sk = skeleton(name);
      const names = this.knownTools.get(sk) ?? [];
      if (!names.includes(name)) this.knownTools.set(sk, [...names, name]);
      return engine.listable(name) && !(blockChanged && changed.has(name)) && !poisoned.has(name);
    });
  }
}
