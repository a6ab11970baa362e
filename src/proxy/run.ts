import { randomUUID } from 'node:crypto';
import { constants } from 'node:os';
import { basename, join, resolve } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { Approvals, cliHowTo, unreachableHowTo } from '../approvals/index.js';
import { AuditLog } from '../audit/index.js';
import { CompiledPolicy, Engine } from '../engine/index.js';
import type { Logger } from '../log.js';
import { formatIssue, loadPolicyFile, watchPolicyFile } from '../policy/index.js';
import { maskSecretSpans } from '../secrets/index.js';
import { openState } from '../state/index.js';
import { RequestStates } from '../input/request-state.js';
import { startTelemetry } from '../telemetry/index.js';
import { clientEnv, OwnSecrets } from '../upstream-env/index.js';
import { ModernFront } from '../era/front.js';
import { StdioEras } from '../era/stdio.js';
import { BatchReplies } from './batches.js';
import { readLines } from './lines.js';
import { errorResponse, INVALID_REQUEST, type Json } from './messages.js';
import { PinGuard } from './pins.js';
import { compileObject, PENDING_POLICY, recommendedPolicyFeed } from './recommended.js';
import { PolicySession, type SessionOptions } from './session.js';
import { httpUpstream } from './upstream-modern-http.js';
import { withEra } from './upstream-modern.js';
import type { UpstreamProtocol } from './upstream-modern-wire.js';
import { StdioUpstream } from './upstream-stdio.js';
import type { Upstream } from './upstream.js';
import { FlowTracker } from '../flows/tracker.js';

export type UpstreamSpec = { command: string; args: string[] } | { url: string; headers: Record<string, string> };

export interface RunOptions {
  /** Without a policy file, the recommended policy for the server's tools applies (computed from its tools/list). */
  policyFile?: string;
  upstream: UpstreamSpec;
  grant: string;
  stateDsn: string;
  auditFile: string;
  auditArgs?: boolean;
  shadow?: boolean;
  failOpen?: boolean;
  serverName?: string;
  /** Each line of the server's stderr as a log entry (`run --json`), instead of passing it through raw. */
  logStderr?: boolean;
  /** How long a forwarded tools/call may wait for its answer (default 5 minutes). */
  callTimeoutMs?: number;
  /** Methods forwarded besides those the MCP revision in use defines (`--passthrough-method`). */
  passthroughMethods?: string[];
  /** Which MCP era to speak to the server: probe for 2026-07-28 and fall back (auto, the default), or one only. */
  protocol?: UpstreamProtocol;
  log: Logger;
  stdin?: Readable;
  stdout?: Writable;
}

export class RunError extends Error {}

/**
 * A stable name for the wrapped server: the npm package it runs, else the command, else the URL's
 * host and path (a key some hosted servers take in the path masked: the name is logged and audited).
 */
export function deriveServerName(upstream: UpstreamSpec): string {
  if ('url' in upstream) {
    const u = new URL(upstream.url);
    return maskSecretSpans(`${u.host}${u.pathname === '/' ? '' : u.pathname}`).text;
  }
  for (const arg of [upstream.command, ...upstream.args]) {
    const installed = /node_modules\/((?:@[\w.-]+\/)?[\w.-]+)\//.exec(arg);
    if (installed) return installed[1];
    if (!arg.startsWith('-') && /^(@[\w.-]+\/)?[\w.-]*(mcp|server)[\w.-]*(@[\w.^~-]+)?$/i.test(arg)) return arg.replace(/(?!^)@[^/]*$/, '');
  }
  return basename(upstream.command);
}

function loadCompiled(file: string): CompiledPolicy {
  const result = loadPolicyFile(file);
  if (!result.ok) {
    const more = result.issues.length > 1 ? ` (and ${result.issues.length - 1} more: run toolgate policy validate ${file})` : '';
    throw new RunError(`invalid policy ${formatIssue(file, result.issues[0])}${more}`);
  }
  return new CompiledPolicy(result.policy, result.hash);
}

/**
 * `toolgate run`: the MCP client on our stdin/stdout, one upstream server, one policy session.
 * Resolves with the exit code to pass on (the child's own, or 128+signal).
 */
export async function runProxy(opts: RunOptions): Promise<number> {
  const { log } = opts;
  const policy = opts.policyFile ? loadCompiled(opts.policyFile) : compileObject(PENDING_POLICY, 'pending');
  const state = openState(opts.stateDsn);
  try {
    await state.begin?.((level, message) => log[level](message));
  } catch (err) {
    await state.close();
    throw new RunError((err as Error).message);
  }
  // Off unless OTEL_*_EXPORTER=otlp turns it on (run has no configuration file).
  const telemetry = await startTelemetry(undefined, { warn: (m) => log.warn(m) });
  const audit = new AuditLog(opts.auditFile, { onError: (message) => log.error(message), onEvent: telemetry?.logs ? (e) => telemetry.auditEvent(e) : undefined });
  const engine = new Engine({ policy, counters: state.counters, flags: state.flags, failOpen: opts.failOpen, shadow: opts.shadow });
  const serverName = opts.serverName ?? deriveServerName(opts.upstream);
  // The approve command printed for the person must reach this state from their own terminal.
  const plainDefault = `sqlite:${join(process.env.HOME || process.cwd(), '.toolgate', 'state.db')}`;
  const approvals = new Approvals({
    store: state.approvals,
    audit,
    log,
    howTo: state.kind === 'memory' ? unreachableHowTo() : cliHowTo(opts.stateDsn === plainDefault ? '' : `--state ${opts.stateDsn}`),
    onHeld: (_a, notice) => { process.stderr.write(`toolgate: ${notice}\n`); },
  });
  const sessionId = randomUUID();
  const stdin = opts.stdin ?? process.stdin;
  const stdout = opts.stdout ?? process.stdout;

  let upstream: Upstream;
  let child: StdioUpstream | undefined;
  let exited: Promise<number>;
  // An HTTP upstream has no exit code: 0 when the client hung up, 1 when the server went away.
  let httpDone: (code: number) => void = () => {};
  if ('command' in opts.upstream) {
    const stderr = opts.logStderr ? log.child({ server: serverName, session: sessionId }) : 'inherit';
    // The client's whole environment (its API keys arrive that way), without toolgate's own secrets.
    const env = clientEnv(new OwnSecrets().addOwnVars(process.env).addDsn('the state DSN', opts.stateDsn));
    const spec = opts.upstream;
    const start = () => new StdioUpstream({ command: spec.command, args: spec.args, env, log, stderr });
    // The exit code passed on is the current child's: one that died on the era probe was replaced.
    let ended: (code: number) => void = () => {};
    exited = new Promise((resolve) => { ended = resolve; });
    const track = (c: StdioUpstream) => {
      child = c;
      void c.exited.then(({ code, signal }) => { if (child === c) ended(signal ? 128 + (constants.signals[signal] ?? 0) : code ?? 0); });
    };
    const first = start();
    track(first);
    upstream = withEra(opts.protocol ?? 'auto', first, log, { respawn: start, onRespawn: (t) => track(t as StdioUpstream) });
  } else {
    upstream = httpUpstream(opts.protocol ?? 'auto', new URL(opts.upstream.url), opts.upstream.headers, log);
    exited = new Promise((resolve) => { httpDone = resolve; });
  }

  // A batch (MCP 2025-03-26) is answered as one line holding the answers to its requests.
  const replies = new BatchReplies((m, raw) => { stdout.write((raw ?? JSON.stringify(m)) + '\n'); });
  // A 2026-07-28 client (decided by its first request) goes through the modern adapter.
  const writeLine = (m: Json) => { stdout.write(JSON.stringify(m) + '\n'); };
  const front = new ModernFront({ serverName, log, general: writeLine, passthroughMethods: opts.passthroughMethods });
  const sessionOptions: SessionOptions = {
    engine,
    audit,
    pins: new PinGuard(state.pins, serverName, log, {
      source: 'command' in opts.upstream ? { kind: 'command', ...opts.upstream } : { kind: 'url', url: opts.upstream.url },
      older: [serverName],
    }),
    onToolsListed: opts.policyFile ? undefined : recommendedPolicyFeed(engine, serverName, () => session, log, { clientApproves: true }),
    approvals,
    requestStates: new RequestStates(state.requestStates),
    tasks: state.oauth,
    telemetry: telemetry?.session({ sessionId, server: serverName, grant: opts.grant, transport: 'pipe' }),
    // Under run the agent is the process (SPEC 11): another run of the same user is another agent.
    flows: new FlowTracker(state.flows, log, `process:${sessionId}`),
    auditArgs: opts.auditArgs,
    callTimeoutMs: opts.callTimeoutMs,
    identity: { sessionId, serverName, grant: { label: opts.grant, tags: [] } },
    log,
    passthroughMethods: opts.passthroughMethods,
    onBatch: (batch) => replies.expect(batch),
    toClient: (m, raw) => { if (sessionOptions.clientEra === 'modern') front.fromSession(m); else replies.deliver(m, raw); },
    toServer: (m: Json) => { upstream.send(m).catch((err: Error) => session.deliveryFailed(m, err)); },
  };
  const session: PolicySession = new PolicySession(sessionOptions);
  front.attach(session);
  const eras = new StdioEras({
    front,
    legacyLine: (line) => session.fromClientLine(line),
    decided: (era) => { sessionOptions.clientEra = era; },
    write: writeLine,
  });
  upstream.onmessage = (m, raw) => session.fromServer(m, raw);
  const previousOnClose = upstream.onclose;
  upstream.onclose = (reason) => {
    previousOnClose?.(reason);
    session.upstreamClosed(reason);
    front.closed(reason);
    httpDone(1);
  };

  const mode = engine.shadow ? 'shadow' : 'enforce';
  if (opts.policyFile) log.info({ server: serverName, policy: opts.policyFile, policyHash: policy.hash, mode, grant: opts.grant }, 'toolgate run: policy loaded');
  audit.append({ kind: 'start', server: serverName, grant: opts.grant, policyHash: policy.hash, message: `run (${mode}, ${opts.policyFile ? `policy ${resolve(opts.policyFile)}` : 'recommended policy'})` });

  const policyFile = opts.policyFile;
  const stopWatching = !policyFile ? () => {} : watchPolicyFile(policyFile, (result) => {
    if (!result.ok) {
      log.error(`policy reload rejected, keeping the previous policy: ${formatIssue(policyFile, result.issues[0])}`);
      return;
    }
    if (result.hash === engine.current.hash) return;
    engine.setPolicy(new CompiledPolicy(result.policy, result.hash));
    audit.append({ kind: 'policy_reload', server: serverName, policyHash: result.hash, message: resolve(policyFile) });
    log.info({ policyHash: result.hash }, 'policy reloaded');
  });

  readLines(
    stdin,
    (line) => eras.line(line),
    () => stdout.write(JSON.stringify(errorResponse(null, INVALID_REQUEST, 'Message too large: it was dropped')) + '\n'),
  );
  const hangUp = (code: number) => upstream.close().then(() => httpDone(code));
  stdin.on('end', () => { void hangUp(0); });

  const forward = (signal: NodeJS.Signals) => {
    if (child) child.kill(signal);
    else void hangUp(128 + (constants.signals[signal] ?? 0));
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const s of signals) process.on(s, forward);

  const code = await exited;
  for (const s of signals) process.off(s, forward);
  stopWatching();
  approvals.close();
  stdin.pause();
  await state.close();
  audit.append({ kind: 'stop', server: serverName, grant: opts.grant, message: `run exited (${code})` });
  audit.close();
  await telemetry?.shutdown();
  return code;
}
