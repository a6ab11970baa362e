import { SEVERITY, type Category, type ToolDefinition } from '../types.js';
import { baseForms, nameWords } from '../words.js';
import { DESTROY_CUES, PAY_CUES } from './cues.js';
import { topProperties } from './from-schema.js';
import { ALERTING, DESTROY_FLAG, SILENCING_WORDS } from './strict-broad.js';

/**
 * What the server's own text says about one value of a multi-action tool (issue 24, SPEC 5 "Safe
 * by default": text can make a call stricter, never laxer). A value the lexicon reads as safe is
 * taken out of the allowlist when
 *
 * - the same clause of the description (or of the action argument's description) names it beside
 *   a cost ("billed", 费用) or a destruction ("drop", 删除): it is Financial or Destructive;
 * - that clause says it needs confirmation ("requires confirmation", 需确认): the server itself
 *   wants a person, so it is held as the tool's category;
 * - its own words change access control (a permission, a policy, an ACL, visibility, a firewall):
 *   such a change can remove a protection, so it is Destructive.
 */
export interface Lift { category: Category; why: string }

/** Clause ends: sentence ends, semicolons, commas (Latin and CJK), line breaks. */
const CLAUSE = /[。；;！!？?\n，,]|\.\s/;
const CONFIRM = /需确认|需要确认|必须确认|须确认|二次确认|requires? (?:explicit |user )?confirmation|needs? (?:explicit |user )?confirmation|must be confirmed|confirm\s*=\s*["']?(?:yes|true)/i;
const NO_CONFIRM = /无需确认|不需要确认|无需 ?confirm|no confirmation|without confirmation/i;
const COST_CJK = /(?<![不无免])(?:费用|计费|付费|续费|扣费|收费)/;
const DESTROY_CJK = /删除|销毁|清空|移除|丢弃/;
const COST_WORDS = new Set(['billed', 'bills', 'billable', 'cost', 'costs', 'fee', 'fees', 'paid', 'charged', 'charges']);
/** "not billed", "no cost", "free of charge": the cue is denied. */
const NEGATED = /\b(?:not|never|no|without|free of)\s+$/i;
/** Values that empty what they name (`clear_layer`, `wipe_cache`), unless it is a view or an input. */
const CLEARING = new Set(['clear', 'wipe', 'empty', 'flush', 'purge']);
const LIGHT_CLEAR = new Set(['selection', 'filter', 'filters', 'form', 'field', 'fields', 'input', 'search', 'highlight', 'highlights', 'cache', 'focus', 'screen', 'console', 'text']);
/** Values that change a setting: where the text speaks of retention, one can shorten it. */
const CHANGING = new Set(['update', 'set', 'configure', 'modify', 'patch', 'change', 'edit']);
const ACCESS_WORDS = new Set(['permission', 'permissions', 'policy', 'policies', 'acl', 'acls', 'visibility', 'firewall', 'protection']);

/** Plain words of a clause: identifiers (`deleteRoute`, `DropIndexes`, `a_b`, `a.b`) and the action values themselves are names, not effects. */
function plainWords(clause: string, values: Set<string>): { word: string; before: string }[] {
  const out: { word: string; before: string }[] = [];
  const re = /[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)*/g;
  for (let m = re.exec(clause); m; m = re.exec(clause)) {
    const t = m[0];
    if (values.has(t) || /[_.]/.test(t) || /[a-z][A-Z]/.test(t)) continue;
    out.push({ word: t.toLowerCase(), before: clause.slice(Math.max(0, m.index - 12), m.index) });
  }
  return out;
}

function mentions(clause: string, value: string): boolean {
  let i = clause.indexOf(value);
  while (i >= 0) {
    const before = clause[i - 1] ?? ' ';
    const after = clause[i + value.length] ?? ' ';
    if (!/[A-Za-z0-9_]/.test(before) && !/[A-Za-z0-9_]/.test(after)) return true;
    i = clause.indexOf(value, i + 1);
  }
  return false;
}

/** What the text says of each value (only values it makes stricter than `values` says). */
export function liftsFromText(tool: ToolDefinition, param: string, values: Record<string, Category>, category: Category): Map<string, Lift> {
  const lifts = new Map<string, Lift>();
  const lift = (v: string, l: Lift) => { if (SEVERITY[l.category] > SEVERITY[values[v]] && !lifts.has(v)) lifts.set(v, l); };
  const schema = topProperties(tool).find(([n]) => n === param)?.[1];
  const text = `${tool.description ?? ''}\n${typeof schema?.description === 'string' ? schema.description : ''}`.slice(0, 4000);
  const names = new Set(Object.keys(values));
  const clauses = text.split(CLAUSE);
  // A flag that deletes as the call goes (`deleteImages`, `clear_pending`): any call that changes something can use it.
  // A list of what to delete (`deleteImages: [..]`) works the same way; where its description names the actions that use it, only those.
  const flag = topProperties(tool).find(([n, s]) => (s.type === 'boolean' || s.type === 'array') && DESTROY_FLAG.test(n) && !/^(?:should_?)?(?:remove|delete|drop|purge|wipe|clear)$/i.test(n));
  const flagText = typeof flag?.[1].description === 'string' ? flag[1].description : '';
  const flagged = [...names].filter((v) => mentions(flagText, v));
  const retention = /\bretention\b/.test(text.toLowerCase());
  const alerting = ALERTING.test(text.toLowerCase());
  for (const v of names) {
    if (SEVERITY[values[v]] < SEVERITY.Write) continue;
    const vw = nameWords(v);
    if (vw.some((w) => ACCESS_WORDS.has(w))) lift(v, { category: 'Destructive', why: 'it changes access control, which can remove a protection' });
    if (alerting && vw.some((w) => SILENCING_WORDS.has(w) || w === 'silence')) lift(v, { category: 'Destructive', why: 'it silences alerts, which removes a protection' });
    if (CLEARING.has(vw[0]) && vw.length > 1 && !vw.some((w) => LIGHT_CLEAR.has(w))) lift(v, { category: 'Destructive', why: `it empties what it names (${v}), which nothing brings back` });
    if (flag && (!flagged.length || flagged.includes(v))) lift(v, { category: 'Destructive', why: `its \`${flag[0]}\` argument deletes as the call goes` });
    if (retention && CHANGING.has(vw[0])) lift(v, { category: 'Destructive', why: 'it can shorten a retention, after which data is deleted for good' });
  }
  for (const clause of clauses) {
    const here = [...names].filter((v) => SEVERITY[values[v]] < SEVERITY.Destructive && mentions(clause, v));
    if (!here.length) continue;
    const words = plainWords(clause, names);
    const cost = COST_CJK.test(clause) || words.some((w) => (COST_WORDS.has(w.word) || baseForms(w.word).some((f) => PAY_CUES.has(f))) && !NEGATED.test(w.before));
    const destroys = DESTROY_CJK.test(clause) || words.some((w) => baseForms(w.word).some((f) => DESTROY_CUES.has(f)) && !NEGATED.test(w.before));
    const confirm = CONFIRM.test(clause) && !NO_CONFIRM.test(clause);
    for (const v of here) {
      if (cost) lift(v, { category: 'Financial', why: 'the description names it beside a cost' });
      else if (destroys) lift(v, { category: 'Destructive', why: 'the description names it beside a destruction' });
      else if (confirm) lift(v, { category, why: 'the description says it needs confirmation' });
    }
  }
  return lifts;
}
