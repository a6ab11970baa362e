import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyTools } from '../src/risk/index.js';
import { needsArticle } from '../src/risk/prose.js';
import { classifyCorpus } from './corpus/corpus.js';

/**
 * Rationales are quoted to operators on the record pages, so they must read as a person wrote
 * them: whole sentences, the right article, a real object phrase. Quotations of the tool's own
 * description are left out of the checks (the author's words are the author's).
 */
const EFFECT = /^(only reads|changes state|destroys data|runs open-ended|moves money|is a |stops a |starts or|hands |removes a |deploys it|submits input|cannot be|buys something|writes the|can |discards |calls an)/;
const DETERMINERS = /^(the|a|an|all|your|my|our|their|its|these|those|some|any|every|each|no|another|new|existing|one|both)$/;

function fragments(rationale: string): string[] {
  const text = rationale.replace(/“[^”]*”/g, '“…”');
  const out: string[] = [];
  const doubled = /\b(\w+)\s+\1\b/i.exec(text);
  if (doubled) out.push(`doubled word "${doubled[0]}"`);
  for (const re of [/\b(a|an) (a|an|the)\b/i, /\ba (Execute|Read|Write|Destructive|Financial)\b/, /\ba [AEIO][a-z]/, /\ban (?!hour|honest|heir)[b-df-hj-np-tv-z][a-z]/, /(?:^|[:.] )to [a-z]+ [a-z]+ (changes|starts|destroys|runs|only|moves|is|stops)\b/i, /\b[A-Z][a-z]+(?:ns|ts|ds|ks|ps|es)ing\b/]) {
    const m = re.exec(text);
    if (m) out.push(`"${m[0]}"`);
  }
  // "Deleting repository destroys": a gerund, then a bare singular noun, then the effect.
  const bare = /^([A-Z][a-z]+ing) ([a-z]+) (.*)$/.exec(text);
  if (bare && EFFECT.test(bare[3]) && !DETERMINERS.test(bare[2]) && needsArticle(bare[2])) out.push(`bare noun "${bare[1]} ${bare[2]}"`);
  if (!/[.]$/.test(text)) out.push('no full stop');
  return out;
}

describe('rationales read as a person wrote them', () => {
  it('no fragment patterns in the rationale of any corpus tool', () => {
    const bad = classifyCorpus().flatMap((e) => fragments(e.got.rationale).map((f) => `${e.server}/${e.tool.name}: ${f} — ${e.got.rationale}`));
    assert.deepEqual(bad, []);
  });

  it('the check itself catches the old fragments', () => {
    for (const old of [
      'The name says “write”: to write file changes state in a bounded way.',
      'The name says “connect”: to connect debugpy starts or attaches to a running process or debugger.',
      'It is a Execute tool.',
      'Deleting repository destroys data.',
      'Returnsing a tiny image only reads.',
      'Removing the the label is a small change.',
    ]) assert.notDeepEqual(fragments(old), [], old);
  });

  it('says which won where description and name disagree, and why', () => {
    const [guide, send] = classifyTools([
      { name: 'refund_guide', description: 'Explains how refunds work, with links to the documentation.' },
      { name: 'send', description: 'Send USDC to an address.' },
    ]);
    assert.match(guide.rationale, /^Explaining how refunds work only reads\./);
    assert.match(guide.rationale, /the description decides/);
    assert.match(send.rationale, /^Sending USDC to an address moves money/);
    assert.match(send.rationale, /the description decides|most dangerous plausible effect decides/);
  });
});
