import type { Logger } from 'pino';
import { toolFingerprint } from '../risk/source.js';
import type { ToolDefinition } from '../risk/types.js';
import type { PinStore } from '../state/types.js';

/**
 * The rug-pull defence for one server: compares every tools/list answer with the pinned
 * fingerprints. A tool whose definition differs from its pin, or that was never pinned on a
 * server that has pins, is "changed" until an operator accepts it (toolgate pin --accept).
 * Pins are re-read on every tools/list, so an accept takes effect on the next listing.
 */
export class PinGuard {
  private pins: Record<string, string> | null = null;
  private readonly listed = new Map<string, string>();
  private readonly warned = new Set<string>();

  constructor(private readonly store: PinStore, private readonly server: string, private readonly log: Logger) {
    this.refresh();
  }

  private refresh(): void {
    const got = this.store.get(this.server);
    if (got instanceof Promise) void got.then((p) => { this.pins = p; }, () => {});
    else this.pins = got;
  }

  /** Reviews a listing; returns the names that differ from their pins. */
  review(tools: readonly unknown[]): string[] {
    this.refresh();
    const changed: string[] = [];
    for (const tool of tools) {
      if (!tool || typeof tool !== 'object' || typeof (tool as { name?: unknown }).name !== 'string') continue;
      const t = tool as ToolDefinition;
      const fp = toolFingerprint(t);
      this.listed.set(t.name, fp);
      if (!this.isChanged(t.name)) continue;
      changed.push(t.name);
      if (!this.warned.has(`${t.name}:${fp}`)) {
        this.warned.add(`${t.name}:${fp}`);
        this.log.warn({ server: this.server, tool: t.name }, this.pins && Object.hasOwn(this.pins, t.name) ? 'tool definition changed since it was pinned' : 'tool is new since the server was pinned');
      }
    }
    return changed;
  }

  isChanged(name: string): boolean {
    if (!this.pins) return false;
    const pinned = Object.hasOwn(this.pins, name) ? this.pins[name] : undefined;
    if (pinned === undefined) return true;
    const listed = this.listed.get(name);
    return listed !== undefined && listed !== pinned;
  }
}
