// The scenario corpus through the package under Node: every outcome is its
// native expected file byte for byte (indentation taken out), with the
// stores answering at once and answering with Promises that settle a
// macrotask later; the typed API gives the same values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ctxpack from '../src/index.js';
import { runScenario, minify, expectedValue } from './scenario.js';
import { corpusNames } from '../../../tests/js/corpus.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const dir = path.join(root, 'tests/scenarios');
const names = corpusNames(root);
const routerFile = (name) => readFileSync(path.join(dir, name), 'utf8');

for (const name of names) {
  test(name, async () => {
    const scenario = JSON.parse(readFileSync(path.join(dir, name), 'utf8'));
    const expectedText = readFileSync(path.join(root, 'tests/expected', name), 'utf8');
    const expected = minify(expectedText);
    const now = await runScenario(ctxpack, scenario, routerFile);
    assert.equal(now.text, expected);
    assert.deepEqual(now.value, expectedValue(expectedText));
    const later = await runScenario(ctxpack, scenario, routerFile, 0);
    assert.equal(later.text, expected);
  });
}
