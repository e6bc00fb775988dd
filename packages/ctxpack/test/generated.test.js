// The generator's scenarios (tests/src/generate.rs: every section,
// profile, tokenizer, overhead and host answer shape, and a family with
// its numbers at the edges — signed zeros, which JSON.stringify writes as
// 0, subnormals, the largest finite) through the package: each outcome is
// the native one byte for byte. `./run` writes them with
// `cargo run -p ctxpack-conformance --bin generated`; CTXPACK_GENERATED
// names another directory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ctxpack from '../src/index.js';
import { runScenario, expectedValue } from './scenario.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const dir = process.env.CTXPACK_GENERATED ?? path.join(root, 'target/generated');
const noRouter = () => { throw new Error('generated scenarios name no router file'); };

test('the generated scenarios are there', () => {
  assert.ok(existsSync(dir), `${dir} is missing: packages/ctxpack/run writes it`);
  assert.ok(readdirSync(dir).filter((n) => n.endsWith('.expected.json')).length >= 100);
});

const order = (n) => { const [, family, k] = /^(seed|edge)-(\d+)\.json$/.exec(n); return [family, parseInt(k, 10)]; };
const names = existsSync(dir) ? readdirSync(dir).filter((n) => /^(seed|edge)-\d+\.json$/.test(n)) : [];
names.sort((a, b) => {
  const [fa, ka] = order(a);
  const [fb, kb] = order(b);
  return fa === fb ? ka - kb : (fa < fb ? -1 : 1);
});
test('the edge family is there', () => {
  assert.ok(names.filter((n) => n.startsWith('edge-')).length >= 30);
});
for (const name of names) {
  test(name, async () => {
    const scenario = JSON.parse(readFileSync(path.join(dir, name), 'utf8'));
    const expectedText = readFileSync(path.join(dir, name.replace('.json', '.expected.json')), 'utf8');
    const got = await runScenario(ctxpack, scenario, noRouter);
    assert.equal(got.text, expectedText);
    assert.deepEqual(got.value, expectedValue(expectedText));
  });
}
