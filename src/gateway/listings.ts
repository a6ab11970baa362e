import { fetchListing, type Listing, type Source } from '../risk/source.js';
import { serveEnv } from '../upstream-env/index.js';
import type { ServerConfig } from '../config/gateway.js';

const FRESH_MS = 10 * 60_000;

/** How the gateway reaches a configured server to list it: its own command and environment (as its sessions get it), or its URL and headers. */
export function sourceOf(server: ServerConfig): Source {
  return 'command' in server
    ? { kind: 'command', command: server.command, args: server.args, env: serveEnv(server), cwd: server.cwd }
    : { kind: 'url', url: server.url, headers: server.headers };
}

/**
 * What each configured server lists (tools, resources, prompts, identity), fetched on demand the
 * way `toolgate record` does and kept for ten minutes, for records, pin reviews and verdicts.
 * Concurrent askers share one fetch.
 */
export class Listings {
  private readonly cache = new Map<string, { at: number; listing: Promise<Listing> }>();

  get(name: string, server: ServerConfig, refresh = false, now = Date.now()): Promise<Listing> {
    // Keyed by the server's configuration too: a reloaded configuration that changes it lists anew.
    const key = `${name}\n${JSON.stringify(server)}`;
    const hit = this.cache.get(key);
    if (hit && !refresh && now - hit.at < FRESH_MS) return hit.listing;
    const listing = fetchListing(sourceOf(server));
    this.cache.set(key, { at: now, listing });
    listing.catch(() => { if (this.cache.get(key)?.listing === listing) this.cache.delete(key); });
    return listing;
  }
}
