/**
 * Scenarios of the 2026-07-28 conformance run (conformance-2026.e2e.test.ts) whose checks may end
 * differently through `toolgate serve` than directly against the SDK v2 everything fixture, and why.
 * This is a burn-down list, not a waiver: a scenario listed here that ends the same both ways fails
 * the test until it is taken off, and a difference in a scenario not listed fails it too.
 *
 * Empty: after the issue-25 branches were merged and the last differences fixed (Base64 header
 * values, the HTTP status of -32601/-32021 answers, tasks/* gated on the extension, refused
 * requestStates as JSON-RPC errors, stateless inputResponses as a new call, and the fixture's own
 * list-changed events over stdio), every check ends the same through the gateway, stdio and HTTP
 * upstream alike, as directly. Toolgate's deliberate differences (it names itself in
 * server/discover, marks the lists it filters per grant `cacheScope: "private"`, refuses Mcp-Param
 * headers that mirror no argument) are ones the suite scores the same.
 */
export const EXPECTED_DIFFERENCES: Record<'stdio' | 'http', Set<string>> = { stdio: new Set(), http: new Set() };
