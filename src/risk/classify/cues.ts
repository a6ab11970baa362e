import { type ToolDefinition } from '../types.js';
import { baseForms, nameWords } from '../words.js';
import { firstSentence } from './context.js';
import { topProperties } from './from-schema.js';

/**
 * Recall-oriented cues of destruction and payment (issue 24, SPEC 5 "Safe by default"): a word that
 * says a call can destroy or pay, anywhere in the tool's name, its description's first sentence or
 * the values of an action-like argument, not clearly negated. Such a tool is held even where the
 * cue did not win its category: a stricter rule costs a click, a laxer one is a hole.
 */
export const DESTROY_CUES = new Set(['delete', 'remove', 'drop', 'destroy', 'purge', 'wipe', 'erase', 'truncate', 'uninstall', 'discard', 'prune', 'evict', 'obliterate', 'shred', 'nuke', 'rm', 'rmdir', 'del', 'unlink', 'overwrite', 'rollback', 'revert']);
export const PAY_CUES = new Set(['pay', 'expense', 'reimburse', 'reimbursement', 'frais', 'payment', 'payout', 'charge', 'refund', 'purchase', 'buy', 'billing', 'checkout', 'withdraw', 'withdrawal', 'deposit', 'transfer', 'donate', 'invoice', 'subscribe', 'subscription', 'trade', 'swap', 'stake', 'unstake', 'bid', 'sell', 'spend']);

/** Arguments that choose what a call does (not a kind or an HTTP method of something stored). */
const ACTION_LIKE = /^(?:action|actions|operation|operations|op|mode|command|subcommand|cmd|\w+_(?:action|operation|op|mode)|[a-z]+(?:Action|Operation|Mode))$/;
/** "does not delete", "never removes", "without deleting", "no deletion": the cue is denied. */
const NEGATED = /\b(?:not|never|no|without|cannot|can't|won't|doesn't|does not|do not|don't|nothing is)\s+(?:\w+\s+){0,2}$/;

export interface Cue { word: string; kind: 'destroys' | 'pays' | 'opens'; from: 'name' | 'description' | 'schema' }

/**
 * Opening access (SPEC 5: removing a protection is Destructive): the description says the call sets
 * something's access control to public, or an update takes a flag that makes an existing resource
 * (its source, its files) public. Creating something public, or a visibility filter, is not this.
 */
const OPENS_ACCESS = /\b(?:access control|acl|access level|permissions?)\b[^.\n]{0,60}\b(?:to|as) public\b|\bmakes? (?:it |them |the \w+ )?public\b|\bpublic (?:sharing|share) (?:link|url)\b|\b(?:creates?|generates?) (?:a |an )?public (?:link|url)\b/;
const PUBLIC_FLAG = /^(?:public_?source|public_?access|make_?public|is_?public|public)$/i;
const UPDATE_VERB = new Set(['update', 'set', 'patch', 'modify', 'edit', 'configure', 'change', 'make', 'toggle', 'switch']);
const VISIBILITY_PARAM = /^(?:visibility|privacy|access|access_?level|acl|acl_?mode|access_?mode|sharing|scope)$/i;

/** A call that opens something private to everyone, or undefined. */
function opensAccess(tool: ToolDefinition, description: string): Cue | undefined {
  const m = OPENS_ACCESS.exec(description.slice(0, 600).toLowerCase());
  if (m) return { word: m[0], kind: 'opens', from: 'description' };
  if (!UPDATE_VERB.has(nameWords(tool.name)[0] ?? '')) return undefined;
  for (const [name, schema] of topProperties(tool)) if (schema.type === 'boolean' && PUBLIC_FLAG.test(name)) return { word: name, kind: 'opens', from: 'schema' };
  // A visibility or access enum that offers "public" on an update: one call opens the resource to everyone.
  for (const [name, schema] of topProperties(tool)) if (VISIBILITY_PARAM.test(name) && Array.isArray(schema.enum) && schema.enum.some((v) => typeof v === 'string' && /^public$/i.test(v))) return { word: `${name}: public`, kind: 'opens', from: 'schema' };
  return undefined;
}

function cueOf(word: string): 'destroys' | 'pays' | undefined {
  for (const f of baseForms(word)) {
    if (DESTROY_CUES.has(f)) return 'destroys';
    if (PAY_CUES.has(f)) return 'pays';
  }
  return undefined;
}

// Starts only where a run of letters and digits starts: a match can begin inside a run only if one begins at its start
// (the run ends at the same place), so the result is the same, without retrying (and backtracking) from every letter.
const IDENTIFIER = /(?<![A-Za-z0-9])[A-Za-z0-9]+(?:[_.][A-Za-z0-9]+)+/g;
const IDENTIFIER_CHAR = /[A-Za-z0-9_.]/;

/**
 * The description with identifiers blanked, as far as `firstSentence` reads it (its first 600
 * characters): a long description is blanked only up to a cut that no identifier crosses (a
 * character outside identifiers), which gives exactly the full result's beginning.
 */
function blankIdentifiers(description: string): string {
  for (let n = 1200; n < description.length; n *= 2) {
    let cut = n;
    while (cut > 0 && IDENTIFIER_CHAR.test(description[cut - 1])) cut--;
    if (cut === 0) break;
    const blanked = description.slice(0, cut).replace(IDENTIFIER, ' ');
    if (blanked.length >= 600) return blanked;
  }
  return description.replace(IDENTIFIER, ' ');
}

/** The first destruction or payment cue of a tool, or undefined. */
export function dangerCue(tool: ToolDefinition, description: string): Cue | undefined {
  for (const w of nameWords(tool.name)) { const k = cueOf(w); if (k) return { word: w, kind: k, from: 'name' }; }
  // Identifiers in prose (another tool's name, `purge_notes`, a file like `drop.sql`) name something; they are not this call's effect.
  const first = firstSentence(blankIdentifiers(description)).lower;
  const re = /[a-z]+/g;
  for (let m = re.exec(first); m; m = re.exec(first)) {
    const k = cueOf(m[0]);
    if (k && !NEGATED.test(first.slice(Math.max(0, m.index - 40), m.index))) return { word: m[0], kind: k, from: 'description' };
  }
  const opens = opensAccess(tool, description);
  if (opens) return opens;
  for (const [name, schema] of topProperties(tool)) {
    if (!ACTION_LIKE.test(name)) continue;
    const values = Array.isArray(schema.enum) ? schema.enum : Array.isArray((schema.items as { enum?: unknown } | undefined)?.enum) ? (schema.items as { enum: unknown[] }).enum : [];
    for (const v of values) {
      if (typeof v !== 'string') continue;
      for (const w of nameWords(v)) { const k = cueOf(w); if (k) return { word: v, kind: k, from: 'schema' }; }
    }
  }
  return undefined;
}
