// Building jco's typed values from the JSON the scenario files hold: the
// typed exports want camelCase records, variants as {tag, val}, and every
// field of a record (jco reads an omitted u32 as 0).

import { readFileSync } from 'node:fs';

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

/** The builder-config with every default written out, as the core's
 * `Default` makes it (`defaults.json`, written by ctxpack-codegen). */
const DEFAULTS = camel(JSON.parse(readFileSync(new URL('./defaults.json', import.meta.url), 'utf8')));

/** A typed builder-config with every default and this profile. */
export const typedConfig = (profile) => ({ ...structuredClone(DEFAULTS), profile });
