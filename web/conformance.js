// The scenario corpus through the npm package in a browser: the same
// runner as the Node test (packages/ctxpack/test/scenario.js), the same
// expected files. The browser test reads `window.conformance`.
import * as ctxpack from '/packages/ctxpack/src/index.js';
import { runScenario, minify, expectedValue } from '/packages/ctxpack/test/scenario.js';

const text = async (url) => {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return res.text();
};

/** Deep equality of two JSON-shaped values, key order aside. */
function same(a, b) {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && same(a[k], b[k]));
}

async function main() {
  const names = JSON.parse(await text('/tests/scenarios/'));
  const routerFile = (name) => text(new URL(name, new URL('/tests/scenarios/', location.href)));
  const results = [];
  const body = document.querySelector('#results tbody');
  for (const name of names) {
    const scenario = JSON.parse(await text(`/tests/scenarios/${name}`));
    const expectedText = await text(`/tests/expected/${name}`);
    const expected = minify(expectedText);
    const now = await runScenario(ctxpack, scenario, routerFile);
    const later = await runScenario(ctxpack, scenario, routerFile, 0);
    const r = {
      name,
      now: now.text === expected,
      later: later.text === expected,
      typed: same(now.value, expectedValue(expectedText)),
    };
    if (!r.now) r.got = now.text;
    results.push(r);
    const tr = document.createElement('tr');
    tr.innerHTML = `<td>${name}</td>${[r.now, r.later, r.typed].map((ok) => `<td style="color:${ok ? 'var(--ok)' : 'var(--bad)'}">${ok ? 'equal' : 'DIFFERENT'}</td>`).join('')}`;
    body.append(tr);
  }
  const failed = results.filter((r) => !(r.now && r.later && r.typed));
  document.getElementById('summary').textContent = `${results.length - failed.length} of ${results.length} scenarios equal the native expected files`;
  window.conformance = { done: true, total: results.length, failed };
}

main().catch((e) => {
  document.getElementById('summary').textContent = `failed to run: ${e.message}`;
  window.conformance = { done: true, total: 0, failed: [{ name: 'runner', error: e.message }] };
});
