import type { Logger } from 'pino';
import { pinKey, serverIdentity, type ServerIdentity } from '../risk/identity.js';
import { toolFingerprint, type Source } from '../risk/source.js';
import type { ToolDefinition } from '../risk/types.js';
import type { PinStore } from '../state/types.js';
import { hideLevel, scanTool, summarize } from '../poison/scan.js';
import type { PinDrift, Seen } from './pin-drift.js';

/**
 * The rug-pull defence for one server: compares every tools/list answer with the pinned
 * fingerprints. A tool whose definition differs from its pin, or that was never pinned on a
 * server that has pins, is "changed" until an operator accepts it (toolgate pin --accept).
 * Pins are re-read on every tools/list, so an accept takes effect on the next listing. With a
 * PinDrift, what a listing shows of pinned tools is shared with every session and instance on the
 * state store, so a change any of them listed is refused by all (pin-drift.ts).
 */
export class PinGuard {
  private pins: Record<string, string> | null = null;
  private readonly listed = new Map<string, string>();
  private readonly warned = new Set<string>();
  private readonly identity: ServerIdentity;
  private readonly older: string[];
  private key: string;
  private readonly drift?: PinDrift;

  /**
   * `server`: the name in logs. Pins are kept under what the server is (its package or script, and
   * the name its initialize answer declares, see identify), and found under `older` keys too:
   * pins stored before they were keyed so (the gateway's server name, the name run derives).
   */
  constructor(private readonly store: PinStore, private readonly server: string, private readonly log: Logger, opts: { source: Source; older: string[]; drift?: PinDrift }) {
    this.identity = serverIdentity(opts.source);
    this.key = pinKey(this.identity, undefined);
    this.older = opts.older;
    this.drift = opts.drift;
    this.refresh();
  }

  /** The server's initialize answer named it: from now on its pins are those of this identity and name. */
  identify(serverInfoName: string | undefined): void {
    const key = pinKey(this.identity, serverInfoName);
    if (key === this.key) return;
    this.key = key;
    this.refresh();
  }

  /** The pins under the key, else under the first older key that has some; sync where the store is. */
  private refresh(): void {
    this.drift?.follow(this.key);
    // The identity alone after the full key: a server that declares a new name keeps its package's pins.
    const keys = [...new Set([this.key, this.identity.what, ...this.older])];
    const step = (i: number): void => {
      if (i >= keys.length) { this.pins = null; return; }
      const got = this.store.get(keys[i]);
      if (got instanceof Promise) void got.then((p) => { if (p) this.pins = p; else step(i + 1); }, () => {});
      else if (got) this.pins = got;
      else step(i + 1);
    };
    step(0);
  }

  /** Reviews a listing; returns the names that differ from their pins. */
  review(tools: readonly unknown[]): string[] {
    this.refresh();
    const changed: string[] = [];
    const seen = new Map<string, Seen>();
    for (const tool of tools) {
      if (!tool || typeof tool !== 'object' || typeof (tool as { name?: unknown }).name !== 'string') continue;
      const t = tool as ToolDefinition;
      const fp = toolFingerprint(t);
      this.listed.set(t.name, fp);
      const pinned = this.pinned(t.name);
      if (pinned !== undefined) seen.set(t.name, { fingerprint: fp, pinned });
    }
    // Shared before anything is judged: this listing is the newest word on these tools.
    if (this.drift && seen.size > 0) {
      this.drift.report(this.key, seen).catch((err: Error) => this.log.warn({ server: this.server, err: err.message }, 'could not share what the listing showed of pinned tools'));
    }
    for (const tool of tools) {
      if (!tool || typeof tool !== 'object' || typeof (tool as { name?: unknown }).name !== 'string') continue;
      const t = tool as ToolDefinition;
      const fp = this.listed.get(t.name)!;
      if (!this.isChanged(t.name)) continue;
      changed.push(t.name);
      if (!this.warned.has(`${t.name}:${fp}`)) {
        this.warned.add(`${t.name}:${fp}`);
        // A pinned definition that became poisoned is said to be (src/poison), not only "changed".
        const poisoned = hideLevel(scanTool(t));
        const what = this.pinned(t.name) !== undefined ? 'tool definition changed since it was pinned' : 'tool is new since the server was pinned';
        this.log.warn({ server: this.server, tool: t.name, ...(poisoned.length ? { poisoned: summarize(poisoned) } : {}) }, poisoned.length ? `${what}, and now carries text aimed at the model` : what);
      }
    }
    return changed;
  }

  /** Own properties only: a tool called "constructor" or "__proto__" is not pinned by Object.prototype. */
  private pinned(name: string): string | undefined {
    return this.pins && Object.hasOwn(this.pins, name) ? this.pins[name] : undefined;
  }

  isChanged(name: string): boolean {
    if (!this.pins) return false;
    const pinned = this.pinned(name);
    if (pinned === undefined) return true;
    const listed = this.listed.get(name);
    if (listed !== undefined && listed !== pinned) return true;
    // What another session or instance listed since (a definition changed silently).
    const seen = this.drift?.drifted(this.key, name);
    return seen !== undefined && seen !== pinned;
  }
}
