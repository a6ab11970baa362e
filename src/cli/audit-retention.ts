import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { exportRows } from '../audit/export.js';
import { advanceCursor, convertToIncremental, cursors, dropCursor, incremental, openCursor, pruneAudit } from '../audit/retention.js';
import { jsonText } from '../display/index.js';
import { CliError, openAudit, parseSince, printJson, say, stateOptions, type StateFlags } from './common.js';

/** `--before`: an ISO time, or a duration ago (90d). */
export function parseBefore(text: string, now = Date.now()): string {
  if (/^\d+(s|m|h|d)$/.test(text)) return new Date(now - parseSince(text)).toISOString();
  const ms = Date.parse(text);
  if (!/^\d{4}-\d\d-\d\d/.test(text) || Number.isNaN(ms)) throw new CliError(`invalid --before "${text}": use a time like 2026-01-31 or 2026-01-31T12:00:00Z, or a duration ago like 90d`);
  return new Date(ms).toISOString();
}

/** A cursor argument naming a file (a path or a .json name) rather than a cursor registered by name. */
function cursorFile(arg: string): string | undefined {
  return /[/\\]/.test(arg) || arg.endsWith('.json') || existsSync(arg) ? resolve(arg) : undefined;
}

function readCursorFile(file: string): number | undefined {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch { return undefined; }
  const v = JSON.parse(text) as { id?: unknown };
  if (typeof v?.id !== 'number' || !Number.isInteger(v.id) || v.id < 0) throw new CliError(`${file} is not an export cursor (expected {"id": N})`);
  return v.id;
}

/** Written whole or not at all (a temporary file renamed over it). */
function writeCursorFile(file: string, id: number): void {
  writeFileSync(`${file}.tmp`, JSON.stringify({ id }) + '\n');
  renameSync(`${file}.tmp`, file);
}

/** Until SIGINT/SIGTERM, or `ms`. */
function pauseOrStop(ms: number, stopped: { now: boolean }): Promise<void> {
  return new Promise((done) => { const t = setTimeout(done, ms); if (stopped.now) { clearTimeout(t); done(); } });
}

/** Writes to stdout and resolves once it took the text; a closed pipe rejects. */
function writeOut(text: string): Promise<void> {
  return new Promise((ok, fail) => process.stdout.write(text, (err) => (err ? fail(err) : ok())));
}

interface ExportFlags extends StateFlags { format: string; after?: string; cursor?: string; follow?: boolean }

export function registerAuditRetention(audit: Command): void {
  const parentFlags = (cmd: Command) => cmd.parent?.opts() ?? {};
  stateOptions(audit
    .command('prune')
    .description('remove rows older than a time (not past any export cursor); verification starts from the checkpoint left'))
    .requiredOption('--before <time>', 'an ISO time (2026-01-31) or a duration ago (90d)')
    .option('--vacuum', 'first convert a file made before retention existed so that it gives space back (rewrites it once: stop the gateway first)')
    .option('--json', 'print JSON only')
    .action(async (flags: StateFlags & { before: string; vacuum?: boolean; json?: boolean }, cmd: Command) => {
      const before = parseBefore(flags.before);
      const log = openAudit({ ...parentFlags(cmd), ...flags });
      try {
        const db = log.database;
        if (flags.vacuum) convertToIncremental(db);
        const result = await pruneAudit(db, { before, by: 'toolgate audit prune' });
        if (flags.json) return printJson({ before, ...result });
        say(`pruned ${result.removed} rows written before ${before}${result.checkpoint ? `; verification starts after row ${result.checkpoint.id} (${result.checkpoint.pruned} rows pruned in all)` : ''}\n`);
        if (result.heldBy) say(`held back by export cursor "${result.heldBy.name}" at row ${result.heldBy.id} (toolgate audit cursors --delete NAME to drop it)\n`);
        if (!incremental(db)) say('this file does not give freed space back (it predates retention): freed pages are reused by new rows; run once with --vacuum, with the gateway stopped, to shrink it\n');
      } finally {
        log.close();
      }
    });

  stateOptions(audit
    .command('export')
    .description('print rows as JSON lines, oldest first, each with its hash and the previous row\'s, resumable'))
    .option('--format <format>', 'jsonl', 'jsonl')
    .option('--after <id>', 'rows after this row id')
    .option('--cursor <name|file>', 'resume where this cursor stopped and advance it as rows are written; a name is registered in the audit file, a path is a file (registered too); prune never removes rows a cursor has not passed')
    .option('--follow', 'keep exporting new rows until interrupted')
    .action(async (flags: ExportFlags, cmd: Command) => {
      if (flags.format !== 'jsonl') throw new CliError(`unknown --format "${flags.format}": only jsonl`);
      if (flags.after !== undefined && flags.cursor !== undefined) throw new CliError('give --after or --cursor, not both');
      if (flags.after !== undefined && !/^\d+$/.test(flags.after)) throw new CliError('--after takes a row id (a whole number)');
      if (flags.cursor !== undefined && !cursorFile(flags.cursor) && !/^[\w.:-]{1,200}$/.test(flags.cursor)) throw new CliError('a cursor name is letters, digits, _ . : - (or give a file path)');
      const log = openAudit({ ...parentFlags(cmd), ...flags });
      const db = log.database;
      const file = flags.cursor === undefined ? undefined : cursorFile(flags.cursor);
      const name = file ? `file:${file}` : flags.cursor;
      let after = flags.after !== undefined ? Number(flags.after) : 0;
      if (name !== undefined) {
        const registered = openCursor(db, name);
        // The file says what its receiver was given: if rows after it were pruned meanwhile
        // (its registration was deleted), the export says so rather than skipping them quietly.
        after = file ? readCursorFile(file) ?? registered : registered;
      }
      const written = name === undefined ? undefined : (id: number) => { if (file) writeCursorFile(file, id); advanceCursor(db, name, id); };
      const stopped = { now: false };
      const stop = () => { stopped.now = true; };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      // A reader that goes away ends the export; the cursor stays at the last page written.
      process.stdout.on('error', stop);
      try {
        do {
          const r = await exportRows(db, { after, write: (text) => writeOut(jsonText(text)), written });
          if (r.gap) process.stderr.write(`toolgate: rows after ${after} up to ${r.gap.id} were pruned before this export reached them; continuing from the checkpoint\n`);
          after = r.lastId;
          if (flags.follow) await pauseOrStop(500, stopped);
        } while (flags.follow && !stopped.now);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EPIPE') throw err;
      } finally {
        log.close();
      }
    });

  stateOptions(audit
    .command('cursors')
    .description('list export cursors (each holds prune back to the last row it exported)'))
    .option('--delete <name>', 'forget a cursor (a file cursor is named file:PATH)')
    .option('--json', 'print JSON only')
    .action((flags: StateFlags & { delete?: string; json?: boolean }, cmd: Command) => {
      const log = openAudit({ ...parentFlags(cmd), ...flags });
      try {
        const db = log.database;
        if (flags.delete !== undefined) {
          const name = cursorFile(flags.delete) && !flags.delete.startsWith('file:') ? `file:${resolve(flags.delete)}` : flags.delete;
          if (!dropCursor(db, name)) throw new CliError(`no export cursor named ${name}`, 1);
          if (!flags.json) say(`export cursor ${name} deleted\n`);
          else printJson({ deleted: name });
          return;
        }
        const list = cursors(db);
        if (flags.json) printJson(list);
        else for (const c of list) say(`${c.name}  row ${c.id}  (${c.at})\n`);
      } finally {
        log.close();
      }
    });
}
