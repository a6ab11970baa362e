import type { Logger } from 'pino';
import type { Approvals } from '../approvals/index.js';
import type { AuditLog, AuditRef } from '../audit/index.js';
import type { Decision, Engine } from '../engine/index.js';
import type { RequestStates } from '../input/request-state.js';
import type { TaskStore } from '../tasks/records.js';
import type { ResultFacts } from '../results/index.js';
import type { RequestTrace, SessionTelemetry } from '../telemetry/index.js';
import type { FlowTracker } from '../flows/tracker.js';
import type { PinGuard } from './pins.js';
import { isObject, type Id, type Json } from './messages.js';

export interface SessionIdentity {
  sessionId: string;
  serverName: string;
  /** `id` keys per-grant limits and approvals (see CallContext); the label is for people (audit, approvers). */
  grant: { id?: string; label: string; tags: readonly string[] };
}

export interface SessionOptions {
  engine: Engine;
  identity: SessionIdentity;
  audit?: AuditLog;
  /** Store argument values (secrets masked) in the audit log, not only their keys and hash. */
  auditArgs?: boolean;
  log: Logger;
  /** `raw`, when given, is the message's exact JSON text (server messages passed on unchanged). */
  toClient(message: Json, raw?: string): void;
  toServer(message: Json): void;
  /**
   * Takes a request the upstream has not sent yet out of its queue (a pool's, waiting for a free
   * upstream session); true when it was never sent, so a cancellation of it gives its limit back.
   */
  withdraw?(id: Id): boolean;
  /** Pinned tool definitions to compare every tools/list answer with. */
  pins?: PinGuard;
  /** Called with every tools/list page before it is filtered (first: the page asked for without a cursor). */
  onToolsListed?: (tools: unknown[], first: boolean) => void;
  /** Told about every decision and every upstream answer to a tools/call (metrics). */
  observe?: {
    decision(tool: string, decision: string, rule: string, seconds: number): void;
    upstream(tool: string, outcome: string, seconds: number): void;
    /** What the result policy did to a server message: secrets redacted by kind, and for a tools/call answer all its facts. */
    result?(tool: string | undefined, redacted: ReadonlyMap<string, number>, facts: ResultFacts | undefined): void;
  };
  /** OpenTelemetry: a trace per request and the MCP operation metrics; undefined when off (the default). */
  telemetry?: SessionTelemetry;
  /** Human approval; without it, a call that needs approval is denied, saying so. */
  approvals?: Approvals;
  /**
   * Why the session's grant may no longer act (revoked, expired), or null: asked when an approved
   * call is released, since the grant may have changed while the call waited.
   */
  grantProblem?: () => string | null | Promise<string | null>;
  /** Largest accepted nesting depth of tools/call arguments. */
  maxDepth?: number;
  /**
   * How long a forwarded tools/call may wait for its answer (default 5 minutes; 0: for ever),
   * counted from when it is written upstream; each progress notification for it starts the wait
   * again. On expiry the call is cancelled upstream and the client gets a timeout error.
   */
  callTimeoutMs?: number;
  /** Methods forwarded besides those the MCP revision in use defines (the operator's passthrough_methods). */
  passthroughMethods?: readonly string[];
  /** A batch was accepted (MCP 2025-03-26): its elements follow one by one; a transport that answers it as one array collects the answers. */
  onBatch?: (batch: unknown[]) => void;
  /**
   * The client's protocol era: `modern` (MCP 2026-07-28, stateless, through the ModernFront in
   * src/era) or `legacy` (the 2025 revisions; the default). Decisions are alike for both; a modern
   * client is asked for approval (`via: client`) with an input_required result instead of a
   * server-to-client elicitation request, and only a modern client may send tasks/update.
   */
  clientEra?: 'legacy' | 'modern';
  /** Signs and checks the requestState of input_required results (the state store's key); without it, retries are refused. */
  requestStates?: RequestStates;
  /**
   * Where the tasks its calls create are recorded, per grant (the state store, so that every
   * instance sees them); default: in memory, for this session alone.
   */
  tasks?: TaskStore;
  /** Data-flow rules (src/flows): each tool's roles, what the session's agent touched, and touches recorded. */
  flows?: FlowTracker;
  now?: () => number;
}

/** A client request in flight (or a tools/call waiting for its decision or approval). */
export interface Pending {
  method: string;
  started: number;
  id?: Id;
  tool?: string;
  /** A tools/call's arguments (recorded with the task it may create; an input_required answer's requestState is bound to them). */
  args?: Record<string, unknown>;
  /** The rule that held a call for approval (the call is forwarded only once approved). */
  heldBy?: string;
  /** A tasks/* request's task. */
  taskId?: string;
  /** A tasks/* request's task's tool (its answer may carry that tool's result: the tool's result policy shapes it). */
  taskTool?: string;
  /** The request's _meta.progressToken, to route the server's progress to the right stream. */
  progressToken?: unknown;
  /** tools/list asked with a cursor (a later page). */
  paged?: boolean;
  decision?: Decision;
  audit?: AuditRef;
  /** When it runs out without an answer or progress (performance.now(); forwarded tools/call only). */
  deadline?: number;
  /** A call held for approval: aborting stops waiting (the approval itself stays pending). */
  held?: AbortController;
  /** tools/call continuing an earlier one (MCP 2026-07-28 input_required): its round, counting from 1. */
  round?: number;
  /** Its limits were taken by an earlier round: nothing to reserve, nothing to give back. */
  charged?: boolean;
  /** See Continues.note. */
  note?: string;
  /** An approved call being checked, decided again and forwarded: in flight, no longer waiting. */
  releasing?: boolean;
  /** Its spans, with telemetry on. */
  trace?: RequestTrace;
  /** The tool's flow roles: touched by the agent when the call is answered without error (src/flows). */
  flowRoles?: readonly string[];
}

/** A tools/call that continues an earlier one: which round it is, whether it was charged, its audit row. */
export interface Continues {
  round: number;
  charged: boolean;
  audit?: AuditRef;
  /** The message of the row written for it when it has none from its first round (the audit log is another instance's). */
  note?: string;
}

export function progressTokenOf(params: unknown): unknown {
  return isObject(params) && isObject(params._meta) ? params._meta.progressToken : undefined;
}
