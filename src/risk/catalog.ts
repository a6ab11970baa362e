import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerRecord } from './record.js';

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
    writeFileSync(file, JSON.stringify(record, null, 2) + '\n');
    return file;
  }

  all(): ServerRecord[] {
    let files: string[];
    try { files = readdirSync(this.dir).filter((f) => f.endsWith('.json')).sort(); } catch { return []; }
    const out: ServerRecord[] = [];
    for (const f of files) {
      try { out.push(JSON.parse(readFileSync(join(this.dir, f), 'utf8')) as ServerRecord); } catch { /* not a record */ }
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

  find(name: string): ServerRecord | undefined {
    const lower = name.toLowerCase();
    return this.all().find((r) => Catalog.slug(r) === lower || r.identity.serverInfo.name.toLowerCase() === lower || r.identity.origin.package?.toLowerCase() === lower);
  }
}

/** One line of the catalog: what `toolgate records --json` and /api/records show. */
export function recordSummary(r: ServerRecord) {
  return {
    name: r.identity.serverInfo.name, version: r.identity.serverInfo.version ?? null, package: r.identity.origin.package ?? null,
    grade: r.grade.letter, tools: r.tools.length, counts: r.counts, verification: r.identity.verification, generatedAt: r.generatedAt,
  };
}
