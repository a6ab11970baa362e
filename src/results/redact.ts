import { findSecrets, type SecretKind } from '../secrets/index.js';

/**
 * Redaction of secrets in what comes back from a server: each span the secret detector finds
 * (one linear pass per string) is replaced by `[REDACTED <kind>]`. Values are walked at any
 * depth and rebuilt only where something changed, so JSON stays JSON and an answer without a
 * secret is the same object it was.
 */

/** How a kind reads in a marker, the audit and metrics: `aws-access-key`, `github-token`. */
export function kindLabel(kind: SecretKind): string {
  return LABELS[kind] ?? kind.replace(/_/g, '-');
}

const LABELS: Partial<Record<SecretKind, string>> = {
  aws_access_key_id: 'aws-access-key',
  env_secret: 'secret-assignment',
  quoted_secret: 'secret-field',
};

export const marker = (label: string): string => `[REDACTED ${label}]`;

/** Kinds found and how often, by label. */
export type Tally = Map<string, number>;

/** Nesting deeper than this is not walked: the value is withheld whole (it could hide anything). */
const MAX_DEPTH = 200;
const TOO_DEEP = 'nested-too-deep';

export function redactText(text: string, tally: Tally): string {
  const spans = findSecrets(text);
  if (spans.length === 0) return text;
  let out = '';
  let at = 0;
  for (const s of spans) {
    const label = kindLabel(s.kind);
    tally.set(label, (tally.get(label) ?? 0) + 1);
    out += text.slice(at, s.start) + marker(label);
    at = s.end;
  }
  return out + text.slice(at);
}

/**
 * Whether `obj[key]` is binary, not text: `data` of an image or audio content block (`type` and
 * `mimeType` beside it), or `blob` of resource contents (`uri` and `mimeType` beside it, as in an
 * embedded resource or resources/read). Nothing under structuredContent is: there a `blob` or
 * `data` is the tool's own JSON, and is read like any other value.
 */
function isBinary(obj: Record<string, unknown>, key: string, structured: boolean): boolean {
  if (structured || typeof obj[key] !== 'string' || typeof obj.mimeType !== 'string') return false;
  if (key === 'data') return obj.type === 'image' || obj.type === 'audio';
  return key === 'blob' && typeof obj.uri === 'string';
}

/**
 * `value` with every secret in its strings and object keys redacted, or `value` itself when none
 * was found. A key that held a secret becomes its marker; two keys of one object that become the
 * same marker are told apart by a suffix (` 2`, ` 3`, …) so neither value is lost. Binary payloads
 * of content blocks (see `isBinary`) are not text and are left alone.
 */
export function redactValue(value: unknown, tally: Tally, depth = 0, structured = false): unknown {
  if (typeof value === 'string') return redactText(value, tally);
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) {
    tally.set(TOO_DEEP, (tally.get(TOO_DEEP) ?? 0) + 1);
    return marker(TOO_DEEP);
  }
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v = redactValue(value[i], tally, depth + 1, structured);
      if (v !== value[i]) (out ??= value.slice())[i] = v;
    }
    return out ?? value;
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  const values: unknown[] = [];
  const names: string[] = [];
  let changed = false;
  for (const key of keys) {
    const v = isBinary(obj, key, structured) ? obj[key] : redactValue(obj[key], tally, depth + 1, structured || key === 'structuredContent');
    const name = redactText(key, tally);
    changed ||= v !== obj[key] || name !== key;
    values.push(v);
    names.push(name);
  }
  if (!changed) return value;
  // A renamed key must not take the place of another: suffix it until it is free (the next suffix
  // to try is remembered per name, so many keys with one marker cost linear time).
  const out: Record<string, unknown> = {};
  const taken = new Set(keys.filter((k, i) => names[i] === k));
  const nextSuffix = new Map<string, number>();
  for (let i = 0; i < keys.length; i++) {
    let name = names[i];
    if (name !== keys[i]) {
      let n = nextSuffix.get(name) ?? 1;
      let candidate = n === 1 ? name : `${name} ${n}`;
      while (taken.has(candidate)) candidate = `${name} ${++n}`;
      nextSuffix.set(name, n + 1);
      taken.add(candidate);
      name = candidate;
    }
    // defineProperty, not assignment: a key `__proto__` from JSON.parse stays a plain key.
    Object.defineProperty(out, name, { value: values[i], enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** `3 aws-access-key, 1 jwt` */
export function tallyText(tally: Tally): string {
  return [...tally].map(([label, n]) => `${n} ${label}`).join(', ');
}
