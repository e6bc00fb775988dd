// One scenario file through the package, in any JavaScript engine: Node's
// tests and the browser's conformance page both import this module.
//
// The scenario files spell the WIT's names in kebab-case, as the native
// expected files do; the package takes and gives camelCase. The request,
// the configuration and the stores' candidates are camelCased on the way
// in, and the outcome's JSON text — as the core wrote it — has its keys
// spelt back on the way out, by this file's own reading of the text (not
// the package's), so the outcome is compared byte for byte with the
// expected file once that file's indentation is taken out.

import { ScenarioHost } from '../../../tests/js/scenario-host.js';

export { ScenarioHost };

export const camelName = (k) => k.replace(/-([a-z0-9])/g, (_, c) => c.toUpperCase());
export const kebabName = (k) => k.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`);

/** A value with every object key camelCased (the WIT has no maps). */
export function camelKeys(v) {
  if (Array.isArray(v)) return v.map(camelKeys);
  if (v === null || typeof v !== 'object') return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) out[camelName(k)] = camelKeys(x);
  return out;
}

/**
 * JSON text without the whitespace between its tokens, its object keys
 * spelt by `spell` (as they are, by default).
 */
export function minify(text, spell = (k) => k) {
  let out = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const s = text.slice(i, j + 1);
      let k = j + 1;
      while (k < n && ' \t\r\n'.includes(text[k])) k += 1;
      out += text[k] === ':' && !s.includes('\\') ? `"${spell(s.slice(1, -1))}"` : s;
      i = j + 1;
    } else {
      if (!' \t\r\n'.includes(c)) out += c;
      i += 1;
    }
  }
  return out;
}

/** A refusal's error as the expected files spell it. */
function errorText(error) {
  const e = structuredClone(error);
  if (e.invalidField) e.invalidField.field = kebabName(e.invalidField.field);
  return minify(JSON.stringify(e), kebabName);
}

/**
 * Runs `scenario` (a parsed scenario file) through the package `ctxpack`
 * (the module's exports). `routerFile(name)` gives the text of a router
 * file the scenario names. Resolves to `{ text, value }`: the outcome and
 * host calls as the expected file's text, and the outcome as the
 * package's typed API gave it (the pack, the handling, or the failure
 * it rejected with), from a second run.
 */
export async function runScenario(ctxpack, scenario, routerFile, delay = null) {
  const { Builder, Router, CtxpackError, AssemblyFailed, HostError, PROFILES } = ctxpack;
  const config = camelKeys(scenario.config ?? {});
  const request = camelKeys(scenario.request);
  let router = null;
  const host = new ScenarioHost(scenario.host, { HostError, spell: camelKeys, delay });
  let reply;
  let value;
  try {
    const builder = await Builder.create(config);
    const lent = host.lend(PROFILES[builder.profile] ?? []);
    if (scenario.router) {
      let [kind, text] = Object.entries(scenario.router)[0];
      if (kind === 'file') {
        kind = text.endsWith('.json') ? 'json' : 'yaml';
        text = await routerFile(text);
      }
      router = await Router.create(text, kind);
    }
    reply = minify(router ? await builder.handleText(router, request, lent) : await builder.assembleText(request, lent), kebabName);
    // The typed API, with stores that answer the same.
    const again = new ScenarioHost(scenario.host, { HostError, spell: camelKeys, delay });
    try {
      const lentAgain = again.lend(PROFILES[builder.profile] ?? []);
      value = router ? await builder.handle(router, request, lentAgain) : await builder.assemble(request, lentAgain);
    } catch (e) {
      if (!(e instanceof AssemblyFailed)) throw e;
      value = { failed: e.failure };
    }
    builder.free();
    router?.free();
  } catch (e) {
    if (!(e instanceof CtxpackError)) throw e;
    reply = `{"failed":{"error":${errorText(e.error)},"snapshot":null}}`;
    value = { failed: { error: e.error, snapshot: null } };
  }
  const calls = Object.fromEntries(Object.entries(host.calls).sort(([a], [b]) => (a < b ? -1 : 1)));
  return { text: `{"reply":${reply},"host-calls":${JSON.stringify(calls)}}`, value };
}

/**
 * The expected file's outcome as the typed API gives it: camelCase keys,
 * an invalid field's path and the field names in its message as the
 * caller spelt them, without the parser's position.
 */
export function expectedValue(expectedText) {
  const { reply } = camelKeys(JSON.parse(expectedText));
  const field = reply.failed?.error?.invalidField;
  if (field) {
    field.field = camelName(field.field);
    field.message = field.message.replace(/ at line \d+ column \d+$/, '');
    if (/^(unknown|missing) field/.test(field.message)) field.message = field.message.replace(/`[^`]*`/g, camelName);
  }
  if (reply.failed) return { failed: reply.failed };
  return reply.pack ?? reply.handled;
}
