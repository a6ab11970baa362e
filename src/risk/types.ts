export const CATEGORIES = ['Read', 'Write', 'Execute', 'Destructive', 'Financial'] as const;
export type Category = (typeof CATEGORIES)[number];

export const RISKS = ['low', 'medium', 'high', 'critical'] as const;
export type Risk = (typeof RISKS)[number];

export const SIGNALS = [
  'filesystem_path', 'url', 'code_or_query', 'credentials', 'html_or_template', 'bulk',
  'many_parameters', 'no_description', 'annotation_conflict', 'open_world',
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
}

/** Most dangerous last: when several categories fit, the later one wins. */
export const SEVERITY: Record<Category, number> = { Read: 0, Write: 1, Execute: 2, Destructive: 3, Financial: 4 };
export const DEFAULT_RISK: Record<Category, Risk> = { Read: 'low', Write: 'medium', Execute: 'high', Destructive: 'critical', Financial: 'critical' };
