import { randomInt } from 'node:crypto';
import { canonicalJson, sha256 } from '../policy/load.js';

/** Lower-case letters and digits without look-alikes (0/o, 1/l/i): easy to read out and type. */
const ALPHABET = '23456789abcdefghjkmnpqrstuvwxyz';
const LENGTH = 10;

/** A short, unguessable approval id: 10 characters of a 31-letter alphabet, about 50 random bits. */
export function newApprovalId(): string {
  let id = '';
  for (let i = 0; i < LENGTH; i++) id += ALPHABET[randomInt(ALPHABET.length)];
  return id;
}

/** An id as a person might type it back: trimmed, lower case; anything outside the alphabet is refused. */
export function normaliseApprovalId(text: string): string | null {
  const id = text.trim().toLowerCase();
  return id.length === LENGTH && [...id].every((c) => ALPHABET.includes(c)) ? id : null;
}

/** What an approval is bound to: this grant (by id: labels are not unique), server, tool and exactly these arguments. */
export function bindingOf(call: { grantId: string; server: string; tool: string; args: unknown }): string {
  return sha256(canonicalJson({ grant: call.grantId, server: call.server, tool: call.tool, args: call.args }));
}
