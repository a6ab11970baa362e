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
