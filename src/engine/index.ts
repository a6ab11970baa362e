export { CompiledPolicy, durationMs } from './compile.js';
export type { CompiledEntry, Lookup } from './compile.js';
export type { CallContext } from './conditions.js';
export { Engine } from './decide.js';
export type { DecideHints, Decision, EngineOptions, Verdict } from './decide.js';
export { isPlainAscii, malformedName, skeleton } from './names.js';
export { toolVerdict } from './verdict.js';
export type { ToolVerdict } from './verdict.js';
