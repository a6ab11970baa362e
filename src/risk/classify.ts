/**
 * Deterministic, explainable classification of what a tool can do (SPEC section 5). No model and
 * no network: the tool's words are matched against a lexicon of actions and objects, the way an
 * operator reads a tool list, and every step leaves evidence. One file per stage, under classify/:
 *
 * - from-name.ts: the action the tool's name states;
 * - from-description.ts: the action the description or title states, and what its prose adds
 *   (irreversible, read-only claims);
 * - from-schema.ts: what the parameters let one call do (an action enum, a force flag, a query);
 * - from-server.ts: what the server and the sibling tools say (a browser, money, deployments);
 * - refine.ts: a verb's category refined by what it acts on and where, shared by the three above;
 * - combine.ts: which reading wins, and the category, risk, confidence and signals;
 * - rationale.ts: the sentences that say why.
 */
export { classifyTool, classifyTools } from './classify/combine.js';
export { serverProfile, type ServerProfile } from './classify/from-server.js';
