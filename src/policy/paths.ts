/**
 * The grammar of condition paths: `args.<dot.path>` with `[n]` and `[*]` steps, or one of a fixed
 * set of context paths. Parsed once at load; the engine walks the parsed steps.
 */

export type Step = { kind: 'key'; key: string } | { kind: 'index'; index: number } | { kind: 'any' };

export const CONTEXT_PATHS = [
  'tool.name', 'grant.label', 'grant.tags', 'session.id', 'session.client',
  'server.name', 'time.hour_utc', 'time.weekday',
] as const;
export type ContextPath = (typeof CONTEXT_PATHS)[number];

export type ParsedPath =
  | { root: 'args'; steps: Step[] }
  | { root: 'context'; name: ContextPath };

const STEP = /^([^.[\]]+)?((?:\[(?:\d+|\*)\])*)$/;

export function parsePath(path: string): ParsedPath | string {
  if ((CONTEXT_PATHS as readonly string[]).includes(path)) return { root: 'context', name: path as ContextPath };
  if (path === 'args') return { root: 'args', steps: [] };
  if (!path.startsWith('args.') && !path.startsWith('args[')) {
    return `unknown path "${path}": use args.<field> or one of ${CONTEXT_PATHS.join(', ')}`;
  }
  const steps: Step[] = [];
  const rest = path.slice(4);
  const parts = rest.startsWith('.') ? rest.slice(1).split('.') : [rest];
  for (const part of parts) {
    const m = STEP.exec(part);
    if (!m || (!m[1] && !m[2])) return `invalid path "${path}": empty or malformed segment "${part}"`;
    if (m[1]) steps.push({ kind: 'key', key: m[1] });
    for (const br of m[2].match(/\[(\d+|\*)\]/g) ?? []) {
      const inner = br.slice(1, -1);
      steps.push(inner === '*' ? { kind: 'any' } : { kind: 'index', index: Number(inner) });
    }
  }
  return { root: 'args', steps };
}

/** Parses an `increment_from` path: args only, no wildcard (it must name one number). */
export function parseIncrementPath(path: string): Step[] | string {
  const parsed = parsePath(path);
  if (typeof parsed === 'string') return parsed;
  if (parsed.root !== 'args' || parsed.steps.length === 0) return `increment_from must be an args.<path>, got "${path}"`;
  if (parsed.steps.some((s) => s.kind === 'any')) return `increment_from cannot use [*]: it must name one number`;
  return parsed.steps;
}
