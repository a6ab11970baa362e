import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { deriveServerName } from '../proxy/run.js';
import {
  buildRecord, classifyTools, recordSummary, fetchListing, serverHtml, serverMarkdown, SourceError, toolFingerprint, toolHtml,
  toolMarkdown, toolSlug, type Listing, type Source, type ToolDefinition,
} from '../risk/index.js';
import { pinKey, readPins, serverIdentity } from '../risk/identity.js';
import type { StateStore } from '../state/index.js';
import { jsonText, oneLine } from '../display/index.js';
import { hideLevel, scanTool, summarize } from '../poison/scan.js';
import { CliError, openStateOrFail, printJson, stateDsn, stateOptions, type StateFlags, say } from './common.js';
import { storablePinKeys } from '../risk/catalog.js';
import { catalog, resolveSource, sourceOptions, type SourceFlags } from './source.js';

/** Reads FILE or stdin as a tools/list result, an array of tools, or JSON Lines of tools. */
export function readTools(file: string | undefined): { tools: ToolDefinition[]; server: { name?: string; instructions?: string } } {
  let text: string;
  try {
    text = !file || file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file ?? 'stdin'}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  let parsed: unknown;
  let tools: unknown[];
  let server: { name?: string; instructions?: string } = {};
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (parsed !== undefined && Array.isArray(parsed)) tools = parsed;
  else if (parsed && typeof parsed === 'object' && Array.isArray((parsed as { tools?: unknown }).tools)) {
    tools = (parsed as { tools: unknown[] }).tools;
    const s = (parsed as { server?: { name?: unknown; instructions?: unknown } }).server;
    if (s && typeof s === 'object') server = { name: typeof s.name === 'string' ? s.name : undefined, instructions: typeof s.instructions === 'string' ? s.instructions : undefined };
  } else if (parsed && typeof parsed === 'object') tools = [parsed];
  else {
    tools = [];
    text.split('\n').forEach((line, i) => {
      if (!line.trim()) return;
      try { tools.push(JSON.parse(line)); } catch { throw new CliError(`${!file || file === '-' ? 'stdin' : file}:${i + 1}: not JSON: expected a tools/list result, an array of tools or one tool per line`); }
    });
  }
  tools.forEach((t, i) => {
    if (!t || typeof t !== 'object' || typeof (t as { name?: unknown }).name !== 'string') throw new CliError(`tool #${i + 1} has no "name" string`);
  });
  return { tools: tools as ToolDefinition[], server };
}

async function withState<T>(flags: StateFlags, fn: (state: StateStore) => Promise<T>, opts: { memoryOk?: boolean } = {}): Promise<T> {
  const state: StateStore = await openStateOrFail(stateDsn(flags), opts);
  try { return await fn(state); } finally { await state.close(); }
}

async function listing(source: Source): Promise<Listing> {
  try { return await fetchListing(source); } catch (err) { if (err instanceof SourceError) throw new CliError(err.message); throw err; }
}

/**
 * Where a server's pins are: under --name when given; else under what the server is (its package
 * or script, and the name it declares), found under the name run or the gateway used before too.
 */
function pinKeys(source: Source, list: Listing, flags: { name?: string; server?: string; config?: string }): { name: string; key: string; also: string[]; older: string[]; version: string | null } {
  const name = pinName(source, flags);
  const id = serverIdentity(source);
  const version = id.version ?? list.serverInfo.version ?? null;
  if (flags.name) return { name, key: flags.name, also: [], older: [], version };
  // Also kept under the identity alone: a server that declares another name is still checked against them.
  return { name, key: pinKey(id, list.serverInfo.name), also: [id.what], older: [id.what, name], version };
}

/** The name toolgate run (or the gateway, for a configured server) gives the server: pins were kept under it before they were keyed by identity. */
export function pinName(source: Source, flags: { name?: string; server?: string; config?: string }): string {
  const explicit = flags.name ?? (flags.config ? flags.server : undefined);
  if (explicit) return explicit;
  return source.kind === 'url' ? deriveServerName({ url: source.url, headers: {} }) : deriveServerName({ command: source.command, args: source.args });
}

export function registerRisk(program: Command): void {
  program
    .command('classify')
    .description('classify tools: JSON Lines of {name, category, risk, confidence, signals, rationale, evidence}, in input order')
    .argument('[file]', 'a tools/list result, a JSON array of tools, or JSON Lines of tools; - or nothing for stdin')
    .option('--json', 'JSON Lines (the only output format)')
    .action((file: string | undefined) => {
      const { tools, server } = readTools(file);
      const out = classifyTools(tools, server).map((c) => JSON.stringify(c)).join('\n');
      if (out) process.stdout.write(jsonText(out) + '\n');
    });

  sourceOptions(stateOptions(program
    .command('record')
    .description('the server record: identity, auth posture, capabilities, risk grade, every tool classified, the recommended policy')
    .option('--format <format>', 'json, md or html', 'json')
    .option('-o, --output <path>', 'json: a file; md and html: a folder for the server page and one page per tool, or a file ending in .md or .html for the server page alone')
    .option('--name <server>', 'name the pins are kept under (default: the configured server\'s, or as toolgate run names it)')
    .option('--no-catalog', 'do not store the record in the local catalog')
    .option('--json', 'same as --format json')))
    .action(async (command: string[], flags: SourceFlags & { format: string; output?: string; name?: string; catalog: boolean; json?: boolean }) => {
      const format = flags.json ? 'json' : flags.format;
      if (!['json', 'md', 'html'].includes(format)) throw new CliError('--format takes json, md or html');
      const source = resolveSource(command, flags);
      const list = await listing(source);
      const keys = pinKeys(source, list, flags);
      // record only reads pins: with --state memory: it reads none (every tool unpinned), changing nothing.
      const record = await withState(flags, async (state) => buildRecord(list, (await readPins(state.pins, keys.key, keys.older)).pins), { memoryOk: true });
      record.identity.pinKeys = flags.name ? [flags.name] : storablePinKeys(source, serverIdentity(source).what, [keys.key, ...keys.older]);
      if (flags.catalog) catalog().save(record);
      if (format === 'json') {
        if (flags.output) writeFileSync(flags.output, JSON.stringify(record, null, 2) + '\n');
        else printJson(record);
        return;
      }
      const ext = format === 'md' ? 'md' : 'html';
      // Standing alone (stdout, -o fs.md) the page has no tool pages beside it to link to.
      const alone = format === 'md' ? serverMarkdown(record, null) : serverHtml(record, null);
      if (!flags.output) {
        say(alone);
        return;
      }
      if (flags.output.endsWith(`.${ext}`)) {
        // -o fs.md: one file, the server page (a folder gets a page per tool too).
        writeFileSync(flags.output, alone);
        process.stderr.write(`wrote ${flags.output} (grade ${record.grade.letter}); -o FOLDER writes one page per tool too\n`);
        return;
      }
      const server = format === 'md' ? serverMarkdown(record) : serverHtml(record);
      mkdirSync(join(flags.output, 'tools'), { recursive: true });
      writeFileSync(join(flags.output, `index.${ext}`), server);
      for (const t of record.tools) {
        const page = format === 'md' ? toolMarkdown(record, t) : toolHtml(record, t);
        writeFileSync(join(flags.output, 'tools', `${toolSlug(t.name)}.${ext}`), page);
      }
      process.stderr.write(`wrote ${join(flags.output, `index.${ext}`)} and ${record.tools.length} tool pages (grade ${record.grade.letter})\n`);
    });

  stateOptions(program
    .command('records')
    .description('list the local catalog of server records (kept under TOOLGATE_HOME), or search it by server or tool name'))
    .argument('[search]', '"search" followed by text, or the text itself')
    .argument('[text]')
    .option('--json', 'print JSON only')
    .action(async (a: string | undefined, b: string | undefined, flags: StateFlags & { json?: boolean }) => {
      const text = a === 'search' ? (b ?? '') : (a ?? '');
      // Pinned, changed or unpinned as the pins are now, not as they were when recorded.
      const found = await withState(flags, (state) => catalog().searchVerified(text, state.pins));
      if (flags.json) {
        printJson(found.map(recordSummary));
        return;
      }
      if (found.length === 0) say(text ? `no records match "${text}"\n` : 'the catalog is empty: toolgate record -- COMMAND adds a server\n');
      for (const r of found) {
        const id = r.identity;
        say(oneLine`${r.grade.letter}  ${id.serverInfo.name}${id.serverInfo.version ? ` ${id.serverInfo.version}` : ''}  ${r.tools.length} tools (${Object.entries(r.counts).filter(([, n]) => n > 0).map(([c, n]) => `${n} ${c}`).join(', ')})  ${id.verification}  ${id.origin.package ?? id.origin.url ?? ''}` + '\n');
      }
    });

  sourceOptions(stateOptions(program
    .command('pin')
    .description("record each tool's fingerprint; later changes are warned about or blocked (pins.on_change)")
    .option('--accept', 'accept the current definitions, replacing pins that changed')
    .option('--name <server>', 'name the pins are kept under (default: the configured server\'s, or as toolgate run names it)')
    .option('--json', 'print JSON only')))
    .action(async (command: string[], flags: SourceFlags & { accept?: boolean; name?: string; json?: boolean }) => {
      const source = resolveSource(command, flags);
      const list = await listing(source);
      const { name, key, also, older, version } = pinKeys(source, list, flags);
      const current = Object.fromEntries(list.tools.map((t) => [t.name, toolFingerprint(t)]));
      // A definition that carries text aimed at the model is reported as such, changed or not (src/poison).
      const poisoned = Object.fromEntries(list.tools.map((t) => [t.name, hideLevel(scanTool(t))] as const).filter(([, f]) => f.length > 0).map(([n, f]) => [n, summarize(f)]));
      const result = await withState(flags, async (state) => {
        const before = (await readPins(state.pins, key, older)).pins;
        const changed = before ? Object.keys(current).filter((t) => before[t] !== undefined && before[t] !== current[t]) : [];
        const added = before ? Object.keys(current).filter((t) => before[t] === undefined) : [];
        const removed = before ? Object.keys(before).filter((t) => current[t] === undefined) : [];
        const differs = changed.length + added.length + removed.length > 0;
        if (before && differs && !flags.accept) return { server: name, key, version, pinned: false, changed, added, removed, poisoned };
        for (const k of [key, ...also]) await state.pins.set(k, current);
        return { server: name, key, version, pinned: true, tools: Object.keys(current).length, changed, added, removed, poisoned };
      });
      if (flags.json) printJson(result);
      else if (!result.pinned) {
        say(oneLine`${name}: definitions differ from the pins — changed: ${result.changed.join(', ') || 'none'}; new: ${result.added.join(', ') || 'none'}; gone: ${result.removed.join(', ') || 'none'}.` + `\nReview them (toolgate record), then run again with --accept.\n`);
      } else say(oneLine`${name}: pinned ${(result as { tools: number }).tools} tools of ${key}${version ? ` ${version}` : ''}${result.changed.length + result.added.length ? ` (accepted ${[...result.changed, ...result.added].join(', ')})` : ''}` + '\n');
      if (!flags.json) for (const [tool, summary] of Object.entries(poisoned)) say(oneLine`${name}: ${tool}${result.changed.includes(tool) ? ' changed and' : result.added.includes(tool) ? ' is new and' : ''} carries text aimed at the model (poisoned: hide hides it): ${summary}` + '\n');
      if (!result.pinned) process.exitCode = 1;
    });
}
