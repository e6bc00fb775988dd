// A model's own tokenizer file, from JavaScript: read as bytes, given to
// a builder, named by a request, and each text counted as the file's
// reference implementation counted it. The files and the reference counts
// come from tests/tokenizers/fetch (CTXPACK_TOKENIZERS); with
// CTXPACK_REQUIRE_TOKENIZERS=1 their absence fails rather than skips.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Builder, CtxpackError, tokenizerFile } from '../src/index.js';

function reference(name, t) {
  const dir = process.env.CTXPACK_TOKENIZERS;
  if (!dir) {
    assert.ok(!process.env.CTXPACK_REQUIRE_TOKENIZERS, 'CTXPACK_TOKENIZERS is not set: run tests/tokenizers/fetch');
    t.skip('no tokenizer files: run tests/tokenizers/fetch');
    return null;
  }
  return JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8'));
}

const request = (tokenizer, instructions) => ({
  context: { traceId: 't' },
  query: 'q',
  tokenizer,
  budget: 10_000_000,
  entryOverhead: 0,
  systemPrompt: '',
  instructions,
  keepLast: 0,
});

test('a file read as bytes counts every text as its reference does', async (t) => {
  for (const name of ['llama3', 'qwen3', 'deepseek-v3', 'gemma3']) {
    const record = reference(name, t);
    if (!record) return;
    const file = tokenizerFile(name, readFileSync(record.file), record.pattern);
    const builder = await Builder.create({ tokenizers: [file] });
    const cases = record.cases.filter((c) => c.text.trim()).slice(0, 300);
    const pack = await builder.assemble(request({ named: name }, cases.map((c) => c.text)), {});
    const counted = pack.entries.filter((e) => e.section === 'mandatory-instructions');
    assert.deepEqual(counted.map((e) => e.tokens), cases.map((c) => c.tokens), name);
    assert.deepEqual(pack.snapshot.tokenizer, { named: name });
  }
});

test('a name no file was given under, and bytes that are not text, are refused', async (t) => {
  const record = reference('tekken', t);
  if (!record) return;
  const builder = await Builder.create({ tokenizers: [tokenizerFile('tekken', readFileSync(record.file))] });
  await assert.rejects(
    builder.assemble(request({ named: 'mistral' }, ['x']), {}),
    (e) => e instanceof CtxpackError && /"mistral".*it was given tekken/.test(e.message),
  );
  assert.throws(() => tokenizerFile('x', new Uint8Array([0xff, 0xfe])), /not UTF-8 text/);
  assert.throws(() => tokenizerFile('x', 42), /the file's text or its bytes/);
  await assert.rejects(
    Builder.create({ tokenizers: [tokenizerFile('x', '{"model": {"type": "WordPiece"}}')] }),
    (e) => e instanceof CtxpackError && /tokenizers\[0\]\.text/.test(e.message) && /WordPiece/.test(e.message),
  );
});
