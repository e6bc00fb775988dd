// The scenario corpus through the component under jco, driven with JSON:
// every outcome is its expected file, byte for byte once the file's
// indentation is taken out. The stores answer as the Rust scenario host
// recorded, and every call must be the recorded one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { instance, drive, unwrap, CtxpackError } from '../host.js';
import { generated, replay, root } from './scenario-host.js';
import { corpusNames } from '../../../tests/js/corpus.js';

const names = corpusNames(root);

/** JSON text without the whitespace between its tokens. */
export function minify(text) {
  let out = '';
  let inString = false;
  let escaped = false;
  for (const c of text) {
    if (inString) {
      out += c;
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
    } else if (!' \t\r\n'.includes(c)) {
      inString = c === '"';
      out += c;
    }
  }
  return out;
}

// jco lifts a ctxpack-error with camelCase fields; the expected files
// spell the WIT's names.
const kebab = (v) => (Array.isArray(v) ? v.map(kebab)
  : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`), kebab(x)]))
    : v);

function errorJson(e) {
  const { tag, val } = e.error;
  return val === undefined ? JSON.stringify(tag) : JSON.stringify({ [tag]: kebab(val) });
}

async function run(name, dir = path.join(root, 'tests/scenarios')) {
  const file = path.join(dir, name);
  const scenario = JSON.parse(readFileSync(file, 'utf8'));
  const host = replay(file);
  const { json, builder } = await instance();
  let text;
  try {
    const b = unwrap(() => json.JsonBuilder.create(JSON.stringify(scenario.config ?? {})));
    const request = JSON.stringify(scenario.request);
    let assembly;
    if (scenario.router) {
      let [kind, value] = Object.entries(scenario.router)[0];
      if (kind === 'file') {
        kind = value.endsWith('.json') ? 'json' : 'yaml';
        value = readFileSync(path.join(path.dirname(file), value), 'utf8');
      }
      const router = unwrap(() => builder.Router.create(value, kind));
      assembly = b.handle(router, request);
    } else {
      assembly = b.start(request);
    }
    text = await drive(assembly, host, scenario.request.context);
  } catch (e) {
    if (!(e instanceof CtxpackError)) throw e;
    text = `{"failed":{"error":${errorJson(e)},"snapshot":null}}`;
  }
  host.check();
  const calls = Object.fromEntries(Object.entries(host.calls).sort(([a], [b]) => (a < b ? -1 : 1)));
  return `{"reply":${text},"host-calls":${JSON.stringify(calls)}}`;
}

for (const name of names) {
  test(name, async () => {
    const expected = minify(readFileSync(path.join(root, 'tests/expected', name), 'utf8'));
    assert.equal(await run(name), expected);
  });
}

// The generator's scenarios (every section, profile, tokenizer and answer
// shape, and a family with its numbers at the edges), which `hosts/jco/run`
// writes with `cargo run -p ctxpack-conformance --bin generated`: each
// outcome is the native one.
const cases = existsSync(generated)
  ? readdirSync(generated).filter((n) => /^(seed|edge)-\d+\.json$/.test(n)).sort()
  : [];
test('the generated scenarios are there', () => {
  assert.ok(cases.filter((n) => n.startsWith('seed-')).length >= 100, `${generated}: hosts/jco/run writes it`);
  assert.ok(cases.filter((n) => n.startsWith('edge-')).length >= 30);
});
for (const name of cases) {
  test(`generated ${name}`, async () => {
    const expected = readFileSync(path.join(generated, name.replace('.json', '.expected.json')), 'utf8');
    assert.equal(await run(name, generated), expected);
  });
}
