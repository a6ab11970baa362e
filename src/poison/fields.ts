import type { ToolDefinition } from '../risk/types.js';

/** One piece of text a tool definition shows the model, and where it sits. */
export interface Field {
  /** `name`, `title`, `annotations.title`, `description`, or a path into a schema such as `inputSchema.properties.path.description`. */
  field: string;
  text: string;
  /** A property name, a tool name: an identifier, where even one hidden character is a disguise. */
  identifier: boolean;
}

/** Past these, a schema is not walked further (each node is visited once: the walk is linear). */
const MAX_NODES = 20_000;
const MAX_DEPTH = 64;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Every text of a schema the model reads: property names, descriptions, titles, enum values,
 * defaults, examples and consts (strings anywhere in the schema, in fact: a server may put text
 * wherever a client shows it).
 */
function walkSchema(root: unknown, base: string, out: Field[]): void {
  let nodes = 0;
  const visit = (value: unknown, path: string, depth: number): void => {
    if (++nodes > MAX_NODES || depth > MAX_DEPTH) return;
    if (typeof value === 'string') { out.push({ field: path, text: value, identifier: false }); return; }
    if (Array.isArray(value)) { value.forEach((v, i) => visit(v, `${path}[${i}]`, depth + 1)); return; }
    if (!isObject(value)) return;
    for (const [key, v] of Object.entries(value)) {
      if ((key === 'properties' || key === 'patternProperties' || key === '$defs' || key === 'definitions') && isObject(v)) {
        for (const [prop, sub] of Object.entries(v)) {
          if (++nodes > MAX_NODES) return;
          out.push({ field: `${path}.${key}.${prop}`, text: prop, identifier: true });
          visit(sub, `${path}.${key}.${prop}`, depth + 1);
        }
        continue;
      }
      visit(v, `${path}.${key}`, depth + 1);
    }
  };
  visit(root, base, 0);
}

/** The texts of a tool definition, each with its field. */
export function toolFields(tool: ToolDefinition & { outputSchema?: unknown }): Field[] {
  const out: Field[] = [];
  if (typeof tool.name === 'string') out.push({ field: 'name', text: tool.name, identifier: true });
  if (typeof tool.title === 'string') out.push({ field: 'title', text: tool.title, identifier: false });
  const annotationTitle = isObject(tool.annotations) ? tool.annotations.title : undefined;
  if (typeof annotationTitle === 'string') out.push({ field: 'annotations.title', text: annotationTitle, identifier: false });
  if (typeof tool.description === 'string') out.push({ field: 'description', text: tool.description, identifier: false });
  if (tool.inputSchema !== undefined) walkSchema(tool.inputSchema, 'inputSchema', out);
  if (tool.outputSchema !== undefined) walkSchema(tool.outputSchema, 'outputSchema', out);
  return out;
}
