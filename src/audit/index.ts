export { AuditLog } from './log.js';
export type { AuditDecision, AuditEvent, AuditKind, AuditQuery, AuditRef, AuditRow, VerifyResult } from './log.js';
export { maskSecrets, isSecretKey } from './mask.js';
