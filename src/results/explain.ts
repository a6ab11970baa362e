import type { CallContext } from '../engine/conditions.js';
import type { CompiledPolicy } from '../engine/index.js';
import { factsText, shapeToolAnswer } from './apply.js';
import { resultPolicyFor } from './policy.js';

/**
 * `toolgate policy explain --tool T [--result R]`: the result policy in effect for T, field by
 * field with the pointer that sets it, and — given a sample result (a tools/call result as JSON,
 * or plain text) — what it would do to it.
 */
export interface ResultsExplained {
  lines: string[];
  json: Record<string, unknown> | null;
}

export function explainResults(policy: CompiledPolicy, ctx: CallContext, sample?: string): ResultsExplained {
  const p = resultPolicyFor(policy, ctx.tool);
  if (!p) return { lines: ['  results: passed on as they come (no results policy for this tool)'], json: null };
  const lines: string[] = [];
  const json: Record<string, unknown> = { redact: p.redact ? ['secrets'] : [], redact_rule: p.redactPointer };
  lines.push(p.redact ? `  results: secrets redacted (${p.redactPointer})` : `  results: not redacted (${p.redactPointer})`);
  if (p.maxBytes !== undefined) {
    lines.push(`  results: at most ${p.maxBytes} bytes of text, else ${p.onOversize === 'deny' ? 'withheld' : 'cut'} (${p.maxBytesPointer})`);
    Object.assign(json, { max_bytes: p.maxBytes, on_oversize: p.onOversize, max_bytes_rule: p.maxBytesPointer });
  }
  for (const r of p.denyIf) lines.push(`  results: withheld when ${r.pointer} matches${r.message ? `: ${r.message}` : ''}`);
  for (const r of p.flagIf) lines.push(`  results: flagged when ${r.pointer} matches${r.message ? `: ${r.message}` : ''}`);
  json.deny_if = p.denyIf.map((r) => r.pointer);
  json.flag_if = p.flagIf.map((r) => r.pointer);
  if (sample !== undefined) {
    const result = sampleResult(sample);
    const shaped = shapeToolAnswer({ jsonrpc: '2.0', id: 0, result }, p, ctx);
    const facts = shaped ? factsText(shaped.facts) : '';
    lines.push(`  this result: ${facts || 'passed on unchanged'}`);
    json.sample = { facts: facts || null, result: shaped ? shaped.message.result : result };
  }
  return { lines, json };
}

/** A tools/call result given as JSON (an object with content), or else plain text as one text block. */
function sampleResult(sample: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(sample);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) && 'content' in parsed) return parsed as Record<string, unknown>;
  } catch { /* plain text */ }
  return { content: [{ type: 'text', text: sample }] };
}
