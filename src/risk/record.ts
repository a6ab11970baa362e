import type { PolicyInput } from '../policy/schema.js';
import { hideLevel, scanTool } from '../poison/scan.js';
import type { Finding } from '../poison/types.js';
import { ATTACKS, attacksFor } from './attacks.js';
import { serverFlows, type ServerFlows } from '../flows/record.js';
import { refinementsFor, type Refinement } from './leaks.js';
import { classifyTools } from './classify.js';
import { recommendedEntry, recommendPolicy, verdictOf, type Verdict } from './recommend.js';
import { serverFingerprint, toolFingerprint, type AuthPosture, type Listing, type Origin } from './source.js';
import { CATEGORIES, RISKS, type Category, type Classification, type Risk, type ToolDefinition } from './types.js';

export type Verification = 'pinned' | 'changed' | 'unpinned';

export interface ToolRecord {
  name: string;
  title?: string;
  description: string;
  fingerprint: string;
  classification: Classification;
  attacks: { id: string; title: string; description: string; mitigation: string }[];
  verdict: Verdict;
  /** How the rule was tightened beyond the category's, each naming the attack pattern it blunts. */
  refinements: Omit<Refinement, 'paths'>[];
  /**
   * Text in the definition aimed at the model rather than the user (src/poison): each finding
   * with its field and evidence. A hide-level one makes the verdict Hidden (the recommended policy
   * says poisoned: hide) and lowers the grade. Absent in older records.
   */
  poisoning?: Finding[];
  /** The recommended rule for this tool alone, as the seeds show it. */
  policy: PolicyInput;
  faq: { q: string; a: string }[];
}

export interface ServerRecord {
  kind: 'toolgate.server-record';
  format: 1;
  generatedAt: string;
  identity: {
    serverInfo: Listing['serverInfo'];
    protocolVersion: string | null;
    origin: Origin;
    fingerprint: string;
    verification: Verification;
    changedTools: string[];
    instructions: string | null;
    /** Where this server's pins are looked up, first to last (src/risk/identity.ts); absent in older records. */
    pinKeys?: string[];
  };
  auth: AuthPosture;
  capabilities: {
    tools: { count: number; listChanged: boolean };
    resources: { count: number; templates: number; subscribe: boolean; listChanged: boolean };
    prompts: { count: number; listChanged: boolean };
    logging: boolean;
    completions: boolean;
  };
  grade: { letter: 'A' | 'B' | 'C' | 'D' | 'F'; points: number; reasons: string[] };
  counts: Record<Category, number>;
  riskiest: { name: string; category: Category; risk: Risk; confidence: number }[];
  tools: ToolRecord[];
  /** The tools by flow role, and whether the server completes the trifecta alone (absent in older records). */
  flows?: ServerFlows;
  recommendedPolicy: PolicyInput;
}

const LETTERS = ['A', 'B', 'C', 'D', 'F'] as const;

/**
 * The risk grade (docs/risk.md): points from the riskiest tool (low 0 … critical 3), one more
 * when three or more tools are high or critical, one for a URL that answers without credentials,
 * one for a URL without TLS, one when pinned definitions changed, two when any tool's definition
 * has a hide-level poisoning finding (src/poison). A 0, B 1, C 2, D 3, F 4+.
 * Adding a tool, raising a risk or weakening the posture never improves the grade.
 */
export function gradeOf(classifications: readonly Classification[], auth: AuthPosture, verification: Verification, poisoned: readonly string[] = []): ServerRecord['grade'] {
  const reasons: string[] = [];
  let points = 0;
  const worst = classifications.reduce((m, c) => Math.max(m, RISKS.indexOf(c.risk)), 0);
  if (classifications.length > 0) {
    points += worst;
    reasons.push(`riskiest tool is ${RISKS[worst]} (+${worst})`);
  }
  const severe = classifications.filter((c) => c.risk === 'high' || c.risk === 'critical').length;
  if (severe >= 3) { points++; reasons.push(`${severe} tools are high or critical (+1)`); }
  if (auth.kind === 'open') { points++; reasons.push('answers without credentials (+1)'); }
  if (auth.tls === false) { points++; reasons.push('no TLS (+1)'); }
  if (verification === 'changed') { points++; reasons.push('tool definitions changed since they were pinned (+1)'); }
  if (poisoned.length > 0) { points += 2; reasons.push(`${poisoned.length === 1 ? `${poisoned[0]}'s definition carries` : `${poisoned.length} tools' definitions carry`} text aimed at the model (+2)`); }
  return { letter: LETTERS[Math.min(points, 4)], points, reasons };
}

function faq(tool: ToolDefinition, c: Classification, serverName: string, rule: PolicyInput): ToolRecord['faq'] {
  const entry = JSON.stringify(rule.tools && Object.hasOwn(rule.tools, c.name) ? rule.tools[c.name] : {});
  return [
    { q: `What does ${c.name} do?`, a: tool.description?.trim() || `${c.name} has no description. ${c.rationale}` },
    { q: `What risk level is ${c.name}?`, a: `${c.name} is a ${c.category} tool with ${c.risk} risk (confidence ${c.confidence}). ${c.rationale}` },
    { q: `How do I enforce a policy on ${c.name}?`, a: `Run ${serverName} through toolgate — \`toolgate run -p policy.json -- <server command>\`, or as a server of \`toolgate serve\` — with an entry for ${c.name} under "tools". Toolgate checks every call before it reaches the server. The recommended entry is ${entry}.` },
    { q: `Can I rate-limit ${c.name}?`, a: `Yes: give its entry a limit, e.g. {"limits": [{"counter": "${c.name}_rate", "window": "minute", "max": 10, "scope": "grant"}]}. Windows are aligned to UTC; a denied call tells the agent when the window resets.` },
    { q: `How do I block ${c.name} completely?`, a: `Set {"action": "deny", "on_deny": "…"} on its entry — the agent gets the message as a tool error — or add "${c.name}" to "hide" to remove it from tools/list as well.` },
    { q: `Which MCP server provides ${c.name}?`, a: `${serverName}.` },
  ];
}

/** The tools whose definitions differ from the pins, and what that makes the server (null: never pinned). */
function verify(names: readonly string[], fingerprints: readonly string[], pins: Record<string, string> | null): { verification: Verification; changedTools: string[] } {
  const changedTools = pins ? names.filter((n, i) => !Object.hasOwn(pins, n) || pins[n] !== fingerprints[i]) : [];
  return { verification: !pins ? 'unpinned' : changedTools.length > 0 ? 'changed' : 'pinned', changedTools };
}

/**
 * A stored record checked against the pins as they are now (the catalog keeps the state of the
 * day it was recorded): its verification, changed tools and grade follow.
 */
export function reverified(record: ServerRecord, pins: Record<string, string> | null): ServerRecord {
  const { verification, changedTools } = verify(record.tools.map((t) => t.name), record.tools.map((t) => t.fingerprint), pins);
  if (verification === record.identity.verification && changedTools.join('\n') === record.identity.changedTools.join('\n')) return record;
  return {
    ...record,
    identity: { ...record.identity, verification, changedTools },
    grade: gradeOf(record.tools.map((t) => t.classification), record.auth, verification, poisonedTools(record.tools)),
  };
}

/** The tools with hide-level poisoning findings. */
function poisonedTools(tools: readonly Pick<ToolRecord, 'name' | 'poisoning'>[]): string[] {
  return tools.filter((t) => hideLevel(t.poisoning ?? []).length > 0).map((t) => t.name);
}

/** Builds the record of a server from what it listed, against its pins (null: never pinned). */
export function buildRecord(listing: Listing, pins: Record<string, string> | null): ServerRecord {
  const serverName = listing.serverInfo.title || listing.serverInfo.name;
  const classifications = classifyTools(listing.tools, { name: listing.serverInfo.name, instructions: listing.instructions ?? undefined });
  const fingerprints = listing.tools.map((t) => toolFingerprint(t));
  const { verification, changedTools } = verify(listing.tools.map((t) => t.name), fingerprints, pins);
  const tools: ToolRecord[] = listing.tools.map((tool, i) => {
    const c = classifications[i];
    const poisoning = scanTool(tool);
    const poisoned = hideLevel(poisoning).length > 0;
    const policy: PolicyInput = { version: '1', default: 'deny', ...(poisoned ? { poisoned: 'hide' as const } : {}), tools: { [c.name]: recommendedEntry(c, tool) } };
    const refinements = refinementsFor(c, tool);
    return {
      name: tool.name,
      title: tool.title ?? tool.annotations?.title,
      description: tool.description ?? '',
      fingerprint: fingerprints[i],
      classification: c,
      attacks: [...new Set([...attacksFor(c), ...refinements.map((r) => ATTACKS.find((a) => a.id === r.attack)!), ...(poisoning.length ? ATTACKS.filter((a) => a.id === 'tool-poisoning') : [])])].map(({ id, title, description, mitigation }) => ({ id, title, description, mitigation })),
      verdict: verdictOf(c, poisoned, tool),
      poisoning,
      refinements: refinements.map(({ id, attack, says }) => ({ id, attack, says })),
      policy,
      faq: faq(tool, c, serverName, policy),
    };
  });
  const counts = Object.fromEntries(CATEGORIES.map((cat) => [cat, classifications.filter((c) => c.category === cat).length])) as Record<Category, number>;
  const riskiest = [...classifications]
    .sort((a, b) => RISKS.indexOf(b.risk) - RISKS.indexOf(a.risk) || b.confidence - a.confidence)
    .slice(0, 5)
    .map(({ name, category, risk, confidence }) => ({ name, category, risk, confidence }));
  const caps = listing.capabilities as Record<string, Record<string, unknown> | undefined>;
  return {
    kind: 'toolgate.server-record',
    format: 1,
    generatedAt: new Date().toISOString(),
    identity: {
      serverInfo: listing.serverInfo,
      protocolVersion: listing.protocolVersion,
      origin: listing.origin,
      fingerprint: serverFingerprint(listing.tools, listing.instructions),
      verification,
      changedTools,
      instructions: listing.instructions,
    },
    auth: listing.auth,
    capabilities: {
      tools: { count: listing.tools.length, listChanged: caps.tools?.listChanged === true },
      resources: { count: listing.resources.length, templates: listing.resourceTemplates.length, subscribe: caps.resources?.subscribe === true, listChanged: caps.resources?.listChanged === true },
      prompts: { count: listing.prompts.length, listChanged: caps.prompts?.listChanged === true },
      logging: caps.logging !== undefined,
      completions: caps.completions !== undefined,
    },
    grade: gradeOf(classifications, listing.auth, verification, poisonedTools(tools)),
    counts,
    riskiest,
    tools,
    flows: serverFlows(classifications),
    recommendedPolicy: recommendPolicy(classifications, listing.tools, serverName),
  };
}
