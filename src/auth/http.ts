import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** An OAuth error (RFC 6749 §5.2 shape), answered as JSON. */
export class OAuthError extends Error {
  constructor(readonly status: number, readonly error: string, description: string, readonly headers: Record<string, string> = {}) {
    super(description);
  }
}

const MAX_BODY = 64 * 1024;

function readText(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        req.removeAllListeners('data');
        reject(new OAuthError(413, 'invalid_request', 'the body is larger than 64 KiB'));
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => { if (size <= MAX_BODY) resolve(Buffer.concat(chunks).toString('utf8')); });
  });
}

/** A form body (application/x-www-form-urlencoded) as a Map: one value per name, a repeated name is refused. */
export async function readForm(req: IncomingMessage): Promise<Map<string, string>> {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') throw new OAuthError(400, 'invalid_request', 'send the parameters as application/x-www-form-urlencoded');
  return singleValued(new URLSearchParams(await readText(req)));
}

export function singleValued(params: URLSearchParams): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of params) {
    if (out.has(k)) throw new OAuthError(400, 'invalid_request', `the parameter ${k} is given more than once`);
    out.set(k, v);
  }
  return out;
}

export async function readJson(req: IncomingMessage): Promise<unknown> {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') throw new OAuthError(400, 'invalid_client_metadata', 'send the client metadata as application/json');
  try { return JSON.parse(await readText(req)); } catch (err) {
    if (err instanceof OAuthError) throw err;
    throw new OAuthError(400, 'invalid_client_metadata', 'the body is not valid JSON');
  }
}

/** Answers with JSON that no cache may keep (tokens and client ids are in these answers). */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

export function sendOAuthError(res: ServerResponse, err: OAuthError): void {
  sendJson(res, err.status, { error: err.error, error_description: err.message }, err.headers);
}

export function redirect(res: ServerResponse, to: string): void {
  res.writeHead(302, { location: to, 'cache-control': 'no-store' });
  res.end();
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

/** Compares two secrets in constant time (by their hashes, so lengths do not leak either). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}
