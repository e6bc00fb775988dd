// The generator's scenarios (tests/src/generate.rs: every section,
// profile, tokenizer, overhead and host answer shape) through the package:
// each outcome is the native one byte for byte. `./run` writes them with
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

const names = existsSync(dir) ? readdirSync(dir).filter((n) => /^seed-\d+\.json$/.test(n)) : [];
for (const name of names.sort((a, b) => parseInt(a.slice(5), 10) - parseInt(b.slice(5), 10))) {
  test(name, async () => {
    const scenario = JSON.parse(readFileSync(path.join(dir, name), 'utf8'));
    const expectedText = readFileSync(path.join(dir, name.replace('.json', '.expected.json')), 'utf8');
    const got = await runScenario(ctxpack, scenario, noRouter);
    assert.equal(got.text, expectedText);
    assert.deepEqual(got.value, expectedValue(expectedText));
  });
}
