import { escapeControls } from '../display/index.js';
import { isSecretField, maskSecretSpans } from '../secrets/index.js';

/** What a value under a secret field reads as. */
export const MASKED_FIELD = '***';

const MAX_DEPTH = 64;

/**
 * The arguments as an approver sees them (SPEC section 4): every value in full, except the value
 * of an unambiguous secret field (see `isSecretField`), which is `***`, and inside any other
 * string (keys too) the spans that look like secrets by their shape (see `findSecrets`), each
 * replaced by `[masked KIND]`; a masked key that would read like another key of the same object
 * gets ` #2`, ` #3`, … so no argument hides another. `masked` says where and why, for the approver to see that
 * something was masked: `path (secret field)` or `path (KIND, …)`.
 */
export function maskForApprover(args: unknown): { args: unknown; masked: string[] } {
  const masked: string[] = [];
  const walk = (value: unknown, path: string, depth: number): unknown => {
    if (typeof value === 'string') {
      const m = maskSecretSpans(value);
      if (m.kinds.length > 0) masked.push(`${path} (${m.kinds.join(', ')})`);
      return m.text;
    }
    if (value === null || typeof value !== 'object') return value;
    if (depth >= MAX_DEPTH) return '…';
    if (Array.isArray(value)) return value.map((v, i) => walk(v, `${path}[${i}]`, depth + 1));
    const out: Record<string, unknown> = {};
    const entries = Object.entries(value);
    // Keys as written are kept as they are; a masked key that reads like another key gets " #2", " #3", …
    const taken = new Set(entries.map(([k]) => k));
    for (const [k, v] of entries) {
      const key = maskSecretSpans(k);
      let name = key.text;
      if (name !== k) {
        for (let n = 2; taken.has(name) || Object.hasOwn(out, name); n++) name = `${key.text} #${n}`;
        taken.add(name);
      }
      const at = `${path}.${name}`;
      if (key.kinds.length > 0) masked.push(`${at} (key: ${key.kinds.join(', ')})`);
      if (isSecretField(k)) {
        masked.push(`${at} (secret field)`);
        Object.defineProperty(out, name, { value: MASKED_FIELD, enumerable: true, writable: true, configurable: true });
      } else {
        Object.defineProperty(out, name, { value: walk(v, at, depth + 1), enumerable: true, writable: true, configurable: true });
      }
    }
    return out;
  };
  return { args: walk(args, 'args', 0), masked };
}

/**
 * The (already masked) arguments as text for a person: indented JSON, every character that does
 * not show as itself escaped. Nothing is cut; wrap it where it is shown.
 */
export function argsText(args: unknown): string {
  return escapeControls(JSON.stringify(args ?? {}, null, 2) ?? 'null', true);
}
