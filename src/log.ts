import { pino, type Logger } from 'pino';

/**
 * Logs go to stderr as JSON lines (stdout may be the MCP stdio channel). Nothing that can hold a
 * secret — tokens, headers, environment values, argument values — is ever passed to the logger.
 */
export function createLogger(level = process.env.TOOLGATE_LOG_LEVEL ?? 'info'): Logger {
  return pino({ name: 'toolgate', level, base: { pid: process.pid } }, pino.destination({ fd: 2, sync: true }));
}

export type { Logger };
