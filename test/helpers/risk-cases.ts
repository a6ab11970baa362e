import assert from 'node:assert/strict';
import { it } from 'node:test';
import { classifyTools, type Category, type ToolDefinition } from '../../src/risk/index.js';

/** Invented tools with the category each must get, classified together as one server's siblings. */
export type Case = [ToolDefinition, Category];
export const str = { type: 'string' };
export const obj = (properties: Record<string, unknown>) => ({ type: 'object', properties });

/** One test per case: the tool gets its category (the rationale is the failure message). */
export function check(server: { name?: string; instructions?: string }, cases: Case[]) {
  const got = classifyTools(cases.map(([t]) => t), server);
  cases.forEach(([tool, want], i) => {
    it(`${server.name ?? '(no server)'}: ${tool.name} is ${want}`, () => assert.equal(got[i].category, want, got[i].rationale));
  });
}

export const bool = { type: 'boolean' };
export const enumOf = (...values: string[]) => ({ type: 'string', enum: values });

/** The tool, classified alone on its server, gets its category and a rationale that says why. */
export function says(server: { name?: string; instructions?: string }, tool: ToolDefinition, category: string, words: RegExp) {
  it(`${tool.name}: ${category}, and the rationale says why`, () => {
    const [got] = classifyTools([tool], server);
    assert.equal(got.category, category, got.rationale);
    assert.match(got.rationale, words);
  });
}
