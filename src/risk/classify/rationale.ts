import { capitalise, gerund } from '../prose.js';
import { type Category, type Evidence, type Signal, type ToolDefinition } from '../types.js';
import { quote, type Action, type Sentence } from './context.js';

export /** What each category means, as the rationale's last sentence says it. */
const MEANING: Record<Category, string> = {
  Read: 'retrieve information and change nothing',
  Write: 'create or change state in a bounded, usually reversible way',
  Execute: 'run open-ended computation: code, queries, processes, or actions in a browser or on a device',
  Destructive: 'delete or irreversibly destroy data or resources, or remove protections',
  Financial: 'move money or create or change a financial obligation',
};

/** Which stage supplied the action that decided. */
export type Source = 'name' | 'description' | 'title' | 'schema' | 'server' | 'annotations';

/** What the combining stage decided, for the rationale to say. */
export interface Decision {
  tool: ToolDefinition;
  action: Action | undefined;
  source: Source;
  fromName: Action | undefined;
  other: Action | undefined;
  otherFrom: Source;
  agreement: boolean;
  /** Why the description won over the name, or the name over a disagreeing description. */
  verdict: string;
  /** Sentences the later steps (schema, irreversible prose, money, read-only claims) add. */
  notes: string[];
  firstLine: Sentence;
  category: Category;
  signals: Signal[];
  evidence: Evidence[];
  description: string;
  hints: NonNullable<ToolDefinition['annotations']>;
}

/** The rationale: what the tool does, which words decided, what the later steps added, and what lowers confidence. */
export function rationaleOf(d: Decision): string {
  const { tool, action, source, fromName, other, otherFrom, agreement, verdict, notes, firstLine, category, evidence, description } = d;
  const unique = d.signals;
    const parts: string[] = [];
  if (action) {
    // Where the name and the description agree, the description's own words make the better sentence.
    const told = source === 'name' && agreement && other?.phrase && other.lead && other.category === action.category && action === fromName ? other : action;
    const [head, ...rest] = told.verb.split(' ');
    const subject = told.phrase.startsWith('a raw HTTP') ? capitalise(told.phrase)
      : told.phrase ? [capitalise(gerund(head)), ...rest, told.phrase].join(' ') : `A call to ${tool.name}`;
    parts.push(`${subject} ${told === action ? action.effect : told.effect}.`);
    const quoted = `“${quote(firstLine.text)}”`;
    if (source === 'name' && other) parts.push(agreement ? `The name (“${fromName!.verb}”) and the ${otherFrom} (${quoted}) agree.` : `The ${otherFrom} reads ${quoted}, but ${verdict}.`);
    else if (source === 'name') parts.push(`The name says “${fromName!.verb}”.`);
    else if ((source === 'description' || source === 'title') && fromName) parts.push(`The ${source} says ${quoted}; ${verdict}.`);
    else if (source === 'description' || source === 'title') parts.push(`The name says nothing about the action; the ${source} says ${quoted}.`);
    else if (source === 'schema') parts.push('Neither the name nor the description says what it does; its input schema does.');
    else if (source === 'annotations') parts.push('Neither the name nor the description says what it does; the server\'s own annotations do.');
    else parts.push('Neither the name nor the description says what it does; the server\'s own description supplies the context, so confidence is low.');
    parts.push(...notes);
    parts.push(`${category} tools ${MEANING[category]}.`);
  } else {
    parts.push(`Nothing in the name or description, the schema or the server says what ${tool.name} does, so it is treated as ${category} until someone looks; confidence is low.`);
    parts.push(...notes);
  }
  if (!description && source !== 'server' && evidence.some((e) => e.from === 'server')) parts.push('The server\'s own description supplies the context.');
  if (category === 'Read' && unique.includes('credentials')) parts.push('It can return credentials, so the risk is raised to medium.');
  if (unique.includes('bulk') && category !== 'Read') parts.push('It acts on many items at once, so the risk is one step higher.');
  if (!description) parts.push('The description is empty, so confidence is lowered.');
  if (category === 'Read' && unique.includes('leaned_strict')) parts.push('It is not confidently Read (the name and the description do not both say it only reads), so the recommended rule limits it as it would limit Write tools: uncertainty leans strict.');
  if (unique.includes('annotation_conflict')) parts.push('The server\'s own hints disagree; hints are self-reported, so the name decides and confidence is lowered.');
  return parts.join(' ');
}
