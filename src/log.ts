import { pino, type Logger } from 'pino';
import { jsonText } from './display/index.js';

/**
 * Logs go to stderr as JSON lines (stdout may be the MCP stdio channel). Nothing that can hold a
 * secret — tokens, headers, environment values, argument values — is ever passed to the logger.
 * Untrusted names in a line (tools, clients, servers' messages) reach a terminal: every line
 * has its invisible, bidi and C1 characters as JSON escapes (JSON itself escapes only C0).
 */
export function createLogger(level = process.env.TOOLGATE_LOG_LEVEL ?? 'info'): Logger {
  return pino({ name: 'toolgate', level, base: { pid: process.pid }, hooks: { streamWrite: jsonText } }, pino.destination({ fd: 2, sync: true }));
}

export type { Logger };
