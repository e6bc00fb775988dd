// Building jco's typed values from the JSON the scenario files hold: the
// typed exports want camelCase records, variants as {tag, val}, and every
// field of a record (jco reads an omitted u32 as 0).

/** JSON (kebab-case keys) with camelCase keys, as jco's records have them. */
export const camel = (v) => (Array.isArray(v) ? v.map(camel)
  : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/-([a-z0-9])/g, (_, c) => c.toUpperCase()), camel(x)]))
    : v);

/** A scenario's request as jco's typed value: the tokenizer a variant,
 * the lists a request may leave out present. */
export function typedRequest(request) {
  const r = camel(request);
  r.tokenizer = typeof request.tokenizer === 'string' ? { tag: request.tokenizer }
    : { tag: 'chars-per-token', val: request.tokenizer['chars-per-token'] };
  r.instructions ??= [];
  r.conversation ??= [];
  r.stageSummaries ??= [];
  r.context.scopes ??= [];
  return r;
}

const SHARES = [['mandatory-instructions', 0.1], ['current-task', 0.1], ['conversation-state', 0.1],
  ['repository-state', 0.2], ['relevant-knowledge', 0.25], ['graph-neighbours', 0.1],
  ['episodic-memory', 0.05], ['current-diff', 0.05], ['tool-results', 0.05]];

/** A typed builder-config with every default written out
 * (crates/ctxpack-core/src/defaults.rs) and this profile. */
export const typedConfig = (profile) => ({
  preload: [],
  profile,
  nearDuplicateThreshold: 0.8,
  ranking: { trustSystem: 0, trustTrusted: 0, trustUnverified: 0, trustUntrusted: 0, recency: 0 },
  plan: {
    defaultBudget: 24000, safetyMargin: 0.1, compress: true, minSummaryTokens: 32, cutStep: 1,
    shares: SHARES.map(([section, share]) => ({ section, share })),
  },
  countCacheEntries: 100000,
});
