export { AuditLog } from './log.js';
export type { AuditDecision, AuditEvent, AuditKind, AuditQuery, AuditRef, AuditRow, AuditSummary, LiveAuditEvent, TrafficBucket } from './log.js';
export type { VerifyResult } from './verify.js';
export { maskSecrets, isSecretKey } from './mask.js';
export { replay } from './replay.js';
export type { ReplayChange } from './replay.js';
