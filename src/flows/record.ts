import type { Classification } from '../risk/types.js';
import { FLOW_ROLES, type FlowRole } from './roles.js';

/** A server's tools by flow role, and whether it completes the lethal trifecta on its own (SPEC 11, issue 27 item 4). */
export interface ServerFlows {
  roles: Record<FlowRole, string[]>;
  /** Every role is played by some tool of this one server: it can read, be injected and send out alone. */
  trifecta: boolean;
}

export function serverFlows(classifications: readonly Classification[]): ServerFlows {
  const roles = Object.fromEntries(FLOW_ROLES.map((r) => [r, classifications.filter((c) => c.flows?.roles.includes(r)).map((c) => c.name)])) as Record<FlowRole, string[]>;
  return { roles, trifecta: FLOW_ROLES.every((r) => roles[r].length > 0) };
}

/** Markdown lines of a tool's flow roles with evidence. */
export function toolFlowLines(c: Classification): string[] {
  const f = c.flows;
  if (!f || f.roles.length === 0) return ['Flow roles: none (it neither reads private data, takes in others\' content, nor sends data out).'];
  return ['Flow roles:', ...f.evidence.map((e) => `- **${e.role}** — from the ${e.from}: “${e.text}”`)];
}

/** One sentence on what a server's tools can do in a data flow. */
export function serverFlowSentence(f: ServerFlows): string {
  const list = (r: FlowRole) => (f.roles[r].length ? f.roles[r].join(', ') : 'none');
  const lead = f.trifecta
    ? 'This server completes the lethal trifecta on its own: it can read private data, take in content someone else wrote and send data out, so one prompt injection can exfiltrate through it alone; the recommended flows rule holds its egress calls once both others have happened.'
    : 'This server does not complete the lethal trifecta on its own.';
  return `${lead} Private: ${list('private')}. Untrusted: ${list('untrusted')}. Egress: ${list('egress')}.`;
}
