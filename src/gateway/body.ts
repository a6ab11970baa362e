import type { IncomingMessage } from 'node:http';
import { sizeToBytes } from '../config/gateway.js';
import { HttpError } from '../http/errors.js';
import { checkContentType } from './streamable.js';

/** The request's JSON body; with `allowEmpty`, an empty body is undefined (admin POSTs without options). */
export function readJsonBody(req: IncomingMessage, maxBody: string, allowEmpty = false): Promise<unknown> {
  if (!allowEmpty || req.headers['content-type'] !== undefined) checkContentType(req);
  const max = sizeToBytes(maxBody);
  const tooLarge = () => new HttpError(413, `the body is larger than ${maxBody}`);
  if (Number(req.headers['content-length'] ?? 0) > max) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.removeAllListeners('data');
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      if (size > max) return;
      if (allowEmpty && size === 0) return resolve(undefined);
      try {
        resolve(JSON.parse((chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).toString('utf8')));
      } catch {
        reject(new HttpError(400, 'Parse error: the body is not valid JSON', {}, -32700));
      }
    });
  });
}
