// Every error reads as the core words it: the package's messages (and the
// jco host's) come from src/errors.js, written from
// ctxpack_core::Error::WORDING, and every case the types name is worded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CtxpackError } from '../src/index.js';
import { WORDING, wording } from '../src/errors.js';

test('every case of the WIT error has its wording', () => {
  const types = readFileSync(new URL('../src/types.d.ts', import.meta.url), 'utf8');
  const block = types.slice(types.indexOf('export type CtxpackError ='));
  const cases = [...block.slice(0, block.indexOf(';')).matchAll(/\{ ([a-zA-Z]+):/g)].map((m) => m[1]);
  const kebab = (s) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  assert.ok(cases.length >= 5, block.slice(0, 400));
  assert.deepEqual(cases.map(kebab).sort(), Object.keys(WORDING).sort());
});

test('an error reads as the core words it, its fields filled in', () => {
  const e = new CtxpackError({ mandatoryOverBudget: { mandatoryTokens: 120, budget: 100 } });
  assert.equal(e.message, 'mandatory layer needs 120 tokens but the budget is 100');
  const h = new CtxpackError({ hostFailed: { capability: 'policy.review', message: 'down {budget}' } });
  // A value's own braces are not read as fields.
  assert.equal(h.message, 'host import `policy.review` failed: down {budget}');
  assert.equal(wording('step-mismatch', 'late'), 'step mismatch: late');
});
