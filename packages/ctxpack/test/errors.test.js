// Every error reads as the core words it: the package's messages (and the
// jco host's) come from src/errors.js, written from
// ctxpack_core::Error::WORDING, and every case the types name is worded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Builder, CtxpackError } from '../src/index.js';
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

test('a counter may answer a typed array; a BigInt is refused naming the callback', async () => {
  const builder = await Builder.create();
  const request = {
    context: { traceId: 't' }, query: 'q', model: 'claude-sonnet-4-5', budget: 100,
    systemPrompt: 'Be brief.', conversation: [{ role: 'user', content: 'hello there' }],
  };
  const words = (texts) => texts.map((t) => t.split(' ').filter(Boolean).length);
  const typed = await builder.assemble(request, { countTokens: (_t, texts) => Uint32Array.from(words(texts)) });
  const plain = await builder.assemble(request, { countTokens: (_t, texts) => words(texts) });
  assert.equal(typed.text, plain.text);
  assert.equal(typed.budgetUsed, plain.budgetUsed);
  await assert.rejects(builder.assemble(request, { countTokens: (_t, texts) => texts.map(() => 3n) }),
    /^TypeError: countTokens\(\): answered a BigInt, which is not sent; answer Numbers$/);
  // A model counted by the host, with no counter lent, says what to lend.
  await assert.rejects(builder.assemble(request, {}), /lend it \(Python: counter=, JavaScript: countTokens/);
});
