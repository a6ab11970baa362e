import type { ServerResponse } from 'node:http';

/** A request refused at the HTTP level, answered with a JSON-RPC error body. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly code = status === 404 ? -32001 : status >= 500 ? -32603 : -32000,
    /** The JSON-RPC error's `data`, when there is one. */
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export function sendHttpError(res: ServerResponse, err: HttpError): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(err.status, { 'content-type': 'application/json', ...err.headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: err.code, message: err.message, ...(err.data ? { data: err.data } : {}) } }));
}
