import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readPins } from './identity.js';
import { reverified, type ServerRecord } from './record.js';
import { maskOrigin, type Source } from './source.js';

/** A record as the catalog keeps and shows it: no credential in its origin (records stored before masking included). */
function masked(record: ServerRecord): ServerRecord {
  const origin = maskOrigin(record.identity.origin);
  return origin === record.identity.origin ? record : { ...record, identity: { ...record.identity, origin } };
}

/** The local catalog: one JSON record per server under TOOLGATE_HOME/catalog. */
export class Catalog {
  constructor(private readonly dir: string) {}

  static slug(record: ServerRecord): string {
    const id = record.identity;
    return (id.origin.package ?? id.serverInfo.name).toLowerCase().replace(/[^a-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '') || 'server';
  }

  save(record: ServerRecord): string {
    mkdirSync(this.dir, { recursive: true });
    const file = join(this.dir, `${Catalog.slug(record)}.json`);
    writeFileSync(file, JSON.stringify(masked(record), null, 2) + '\n');
    return file;
  }

  all(): ServerRecord[] {
    let files: string[];
    try { files = readdirSync(this.dir).filter((f) => f.endsWith('.json')).sort(); } catch { return []; }
    const out: ServerRecord[] = [];
    for (const f of files) {
      try { out.push(masked(JSON.parse(readFileSync(join(this.dir, f), 'utf8')) as ServerRecord)); } catch { /* not a record */ }
    }
    return out;
  }

  /** Records whose server name, title, package or tool names contain the text (case-insensitive). */
  search(text = ''): ServerRecord[] {
    const needle = text.toLowerCase();
    return this.all().filter((r) => {
      const id = r.identity;
      const hay = [id.serverInfo.name, id.serverInfo.title ?? '', id.origin.package ?? '', id.origin.url ?? '', Catalog.slug(r), ...r.tools.map((t) => t.name)].join('\n').toLowerCase();
      return hay.includes(needle);
    });
  }

  /** `search`, each record checked against the pins as they are now (see `reverified`). */
  async searchVerified(text: string, pins: { get(key: string): Promise<Record<string, string> | null> | Record<string, string> | null }): Promise<ServerRecord[]> {
    const out: ServerRecord[] = [];
    for (const r of this.search(text)) {
      const keys = pinKeysOf(r);
      out.push(keys.length ? reverified(r, (await readPins(pins, keys[0], keys.slice(1))).pins) : r);
    }
    return out;
  }

  find(name: string): ServerRecord | undefined {
    const lower = name.toLowerCase();
    return this.all().find((r) => Catalog.slug(r) === lower || r.identity.serverInfo.name.toLowerCase() === lower || r.identity.origin.package?.toLowerCase() === lower);
  }
}

/**
 * Where a record's server keeps its pins: as recorded, or for a record stored before that was
 * kept, under its package and declared name (src/risk/identity.ts pinKey); none known: [].
 */
export function pinKeysOf(r: ServerRecord): string[] {
  if (r.identity.pinKeys?.length) return r.identity.pinKeys;
  const pkg = r.identity.origin.package;
  return pkg ? [`${pkg} (${r.identity.serverInfo.name})`, pkg] : [];
}

/**
 * The pin keys a record may keep: only when the server is known by its package or script (a raw
 * command line or a URL may hold a credential, and the catalog is shown on the dashboard).
 */
export function storablePinKeys(source: Source, what: string, keys: string[]): string[] | undefined {
  if (source.kind === 'url' || what === [source.command, ...source.args].join(' ')) return undefined;
  return keys;
}

/** One line of the catalog: what `toolgate records --json` and /api/records show. */
export function recordSummary(r: ServerRecord) {
  return {
    name: r.identity.serverInfo.name, version: r.identity.serverInfo.version ?? null, package: r.identity.origin.package ?? null,
    grade: r.grade.letter, tools: r.tools.length, counts: r.counts, verification: r.identity.verification, generatedAt: r.generatedAt,
  };
}
