/**
 * What `scope: session` means for a client that has no session (MCP 2026-07-28). Such a client's
 * requests ride toolgate's internal session for its grant on that server (`toolgate serve`), or
 * the one connection of `toolgate run`; a session-scoped limit counts per internal session. Under
 * `serve` that is shared by every modern client of the grant and ends when the internal session
 * does (sessions.idle_timeout, the upstream exiting, a restart) — so `policy validate` says so.
 */
import type { Policy } from '../policy/schema.js';

function pointerPart(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

export const SESSION_SCOPE_NOTE = 'for a 2026-07-28 (sessionless) client under toolgate serve, "session" is toolgate\'s internal session for the grant on this server: every such client of the grant shares the count, and it starts again when that session closes (sessions.idle_timeout, the server exiting, a restart); use scope "grant" for a count that lasts';

/** A note for every session-scoped limit of a valid policy, with its JSON pointer. */
export function sessionScopeNotes(policy: Policy): string[] {
  const notes: string[] = [];
  policy.all_tools?.limits.forEach((l, i) => {
    if (l.scope === 'session') notes.push(`/all_tools/limits/${i}: scope "session": ${SESSION_SCOPE_NOTE}`);
  });
  for (const [tool, entry] of Object.entries(policy.tools)) {
    entry.limits.forEach((l, i) => {
      if (l.scope === 'session') notes.push(`/tools/${pointerPart(tool)}/limits/${i}: scope "session": ${SESSION_SCOPE_NOTE}`);
    });
  }
  return notes;
}
