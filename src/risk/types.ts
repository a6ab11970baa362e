export const CATEGORIES = ['Read', 'Write', 'Execute', 'Destructive', 'Financial'] as const;
export type Category = (typeof CATEGORIES)[number];

export const RISKS = ['low', 'medium', 'high', 'critical'] as const;
export type Risk = (typeof RISKS)[number];

export const SIGNALS = [
  'filesystem_path', 'url', 'code_or_query', 'credentials', 'html_or_template', 'bulk',
  'many_parameters', 'no_description', 'annotation_conflict', 'open_world',
  // Two readings competed with low confidence, and the stricter one was recommended (SPEC 5: uncertainty leans strict).
  'leaned_strict',
  // A destruction or payment cue on a laxer category: the recommended rule holds it anyway.
  'danger_cue',
] as const;
export type Signal = (typeof SIGNALS)[number];

/** A tool as MCP's tools/list describes it (only the fields the classifier reads). */
export interface ToolDefinition {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: unknown;
  annotations?: {
    title?: string;
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
}

export interface ServerContext {
  name?: string;
  instructions?: string;
  /** Names of the other tools on the same server. */
  siblings?: readonly string[];
}

export interface Evidence {
  from: 'name' | 'title' | 'description' | 'schema' | 'annotations' | 'server' | 'siblings';
  text: string;
}

export interface Classification {
  name: string;
  category: Category;
  risk: Risk;
  confidence: number;
  signals: Signal[];
  rationale: string;
  evidence: Evidence[];
  /**
   * A multi-action tool (an `action` argument with create/update/delete values) that takes the
   * category of its most dangerous action: what each known value does, and the values that are
   * safe. Its recommended rule holds every call unless `param` is exactly one of `safe`.
   */
  actions?: { param: string; values: Record<string, Category>; safe: string[] };
  /**
   * A word that says a call can destroy, pay or open access (in the name, the description's first sentence or
   * an action argument's values) on a tool whose category is laxer: the recommended rule holds
   * every call anyway (SPEC 5 "Safe by default": a stricter rule costs a click, a laxer one is a hole).
   */
  hold?: { word: string; kind: 'destroys' | 'pays' | 'opens'; from: 'name' | 'description' | 'schema' };
  /** Flow roles (private, untrusted, egress) with the words that made each (src/flows/roles.ts, SPEC 11). */
  flows?: { roles: ('private' | 'untrusted' | 'egress')[]; evidence: (Evidence & { role: 'private' | 'untrusted' | 'egress' })[] };
}

/** A Read below this confidence (the name and the description do not both say it reads) is limited like a Write. */
export const CONFIDENT_READ = 0.9;
/** Below this, a classification is a guess (only the description, the schema or the server spoke): a cue of destruction or payment holds even a Read. */
export const LOW_CONFIDENCE = 0.7;

/** Most dangerous last: when several categories fit, the later one wins. */
export const SEVERITY: Record<Category, number> = { Read: 0, Write: 1, Execute: 2, Destructive: 3, Financial: 4 };
export const DEFAULT_RISK: Record<Category, Risk> = { Read: 'low', Write: 'medium', Execute: 'high', Destructive: 'critical', Financial: 'critical' };
