export { PolicySchema, policyJsonSchema } from './schema.js';
export type { Policy, PolicyInput, ToolEntry, Limit, Rule, Condition } from './schema.js';
export { loadPolicyFile, parsePolicyText, parseWithSchema, validatePolicyObject, formatIssue, canonicalJson, sha256 } from './load.js';
export type { LoadResult, SchemaResult } from './load.js';
export type { PolicyIssue } from './check.js';
export { watchPolicyFile } from './watch.js';
