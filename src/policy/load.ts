import * as crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse as parseJsonc, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { isMap, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import type { z } from 'zod';
import { checkPolicy, pointerOf, type PolicyIssue } from './check.js';
import { PolicySchema, type Policy } from './schema.js';

export type LoadResult =
  | { ok: true; policy: Policy; hash: string }
  | { ok: false; issues: PolicyIssue[] };

/** Walks the YAML/JSON document to the node at `path` to give an issue its line and column. */
function locate(doc: Document, lines: LineCounter, path: readonly PropertyKey[], key?: string): { line: number; column: number } | undefined {
  let node: unknown = doc.contents;
  const steps = key === undefined ? path : [...path, key];
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(step));
      if (!pair) break;
      node = i === steps.length - 1 && key !== undefined ? pair.key : pair.value;
    } else if (node && typeof node === 'object' && 'items' in node && Array.isArray((node as { items: unknown[] }).items)) {
      const next = (node as { items: unknown[] }).items[Number(step)];
      if (next === undefined) break;
      node = next;
    } else break;
  }
  const range = (node as { range?: [number, number, number] } | null)?.range;
  if (!range) return undefined;
  const pos = lines.linePos(range[0]);
  return { line: pos.line, column: pos.col };
}

type Issue = z.ZodError['issues'][number];

/**
 * The issues worth showing. A union none of whose options matched says only its own message —
 * which hid a plain mistake inside the one option the value clearly is (a server with `command`
 * whose `call_timeout: 2` lacks its unit read "a server needs either command … or url …"). So
 * when exactly one option takes the value's shape (it neither rejects one of the value's keys
 * nor its type), that option's own issues are shown instead, at their full paths.
 */
function shownIssues(issues: readonly Issue[], prefix: PropertyKey[] = []): Issue[] {
  const out: Issue[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 1) {
      const fitting = issue.errors.filter((option) => !option.some((i) => i.path.length === 0 && (i.code === 'unrecognized_keys' || i.code === 'invalid_type')));
      if (fitting.length === 1) {
        out.push(...shownIssues(fitting[0], path));
        continue;
      }
    }
    out.push({ ...issue, path } as Issue);
  }
  return out;
}

function zodIssues(error: z.ZodError, doc: Document, lines: LineCounter): PolicyIssue[] {
  const out: PolicyIssue[] = [];
  for (const issue of shownIssues(error.issues)) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        out.push({ pointer: pointerOf([...issue.path, key]), message: `unknown field "${key}"`, ...locate(doc, lines, issue.path, key) });
      }
      continue;
    }
    let message = issue.message;
    if (issue.code === 'invalid_value' && 'values' in issue) message = `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    out.push({ pointer: pointerOf(issue.path), message, ...locate(doc, lines, issue.path) });
  }
  return out;
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return '[' + value.map(canonicalJson).join(',') + ']';
  if (value && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson((value as Record<string, unknown>)[k])).join(',') + '}';
  }
  return JSON.stringify(value) ?? 'null';
}

/** The one-shot `crypto.hash` (Node 20.12 on): no Hash object per call, which the audit chain makes several of per row. */
const oneShot: ((algorithm: string, data: string, encoding: 'hex') => string) | undefined = crypto.hash;

/** Hex SHA-256. */
export function sha256(text: string): string {
  return oneShot ? oneShot('sha256', text, 'hex') : crypto.createHash('sha256').update(text).digest('hex');
}

/** Validates an already-parsed policy object (no source positions). */
export function validatePolicyObject(value: unknown): LoadResult {
  return parsePolicyText(JSON.stringify(value ?? null));
}

export type SchemaResult<T> = { ok: true; value: T } | { ok: false; issues: PolicyIssue[] };

export interface ParseOptions {
  /** Strict JSON (a `.json` file): trailing commas, comments and other YAML-isms are errors. */
  json?: boolean;
  check?: (raw: unknown) => PolicyIssue[];
  prepare?: (raw: unknown, issues: PolicyIssue[]) => unknown;
}

/** The first syntax error of strict JSON, with its line:column (YAML would accept `{"a": {},}`); later ones follow from it. */
function jsonSyntaxIssues(text: string): PolicyIssue[] {
  const lines = new LineCounter();
  lines.addNewLine(0);
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lines.addNewLine(i + 1);
  const errors: ParseError[] = [];
  parseJsonc(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  return errors.slice(0, 1).map((e) => {
    const pos = lines.linePos(e.offset);
    const words = printParseErrorCode(e.error).replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
    return { pointer: '', message: `not valid JSON: ${words}`, line: pos.line, column: pos.col };
  });
}

/** Whether a file is read as strict JSON (by its name) rather than YAML. */
export function isJsonFile(file: string): boolean {
  return /\.json$/i.test(file);
}

/**
 * Parses JSON or YAML (JSON as YAML 1.2, for positions; duplicate keys are errors) and validates
 * it: every schema issue and every issue of `check` (which sees the raw document, possibly
 * rewritten by `prepare`) comes back with its JSON pointer and line:column.
 */
export function parseWithSchema<T>(text: string, schema: z.ZodType<T>, options: ParseOptions = {}): SchemaResult<T> {
  if (options.json) {
    const syntax = jsonSyntaxIssues(text);
    if (syntax.length > 0) return { ok: false, issues: syntax };
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      issues: doc.errors.map((e) => {
        const pos = lines.linePos(e.pos[0]);
        return { pointer: '', message: e.message.split('\n')[0], line: pos.line, column: pos.col };
      }),
    };
  }
  const extra: PolicyIssue[] = [];
  let raw: unknown = doc.toJS({ maxAliasCount: 100 });
  if (options.prepare) raw = options.prepare(raw, extra);
  const parsed = schema.safeParse(raw);
  const issues = parsed.success ? [] : zodIssues(parsed.error, doc, lines);
  for (const issue of [...extra, ...(options.check?.(raw) ?? [])]) {
    const path = issue.pointer.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
    issues.push({ ...issue, ...locate(doc, lines, path) });
  }
  if (!parsed.success || issues.length > 0) return { ok: false, issues };
  return { ok: true, value: parsed.data };
}

/** Parses and validates policy text (JSON or YAML). */
export function parsePolicyText(text: string, options: { json?: boolean } = {}): LoadResult {
  const r = parseWithSchema(text, PolicySchema, { check: checkPolicy, json: options.json });
  if (!r.ok) return r;
  return { ok: true, policy: r.value, hash: sha256(canonicalJson(r.value)).slice(0, 16) };
}

export function loadPolicyFile(file: string): LoadResult {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return { ok: false, issues: [{ pointer: '', message: `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` }] };
  }
  return parsePolicyText(text, { json: isJsonFile(file) });
}

export function formatIssue(file: string, issue: PolicyIssue): string {
  const where = issue.line !== undefined ? `${file}:${issue.line}:${issue.column}` : file;
  return `${where}: ${issue.pointer || '/'}: ${issue.message}`;
}
