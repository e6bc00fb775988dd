// The typed exports and imports under jco: the same snapshot ids as the
// Rust host, a callback that throws is a host failure (not an abort), and
// errors print readably.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { instance, unwrap, drive, CtxpackError } from '../host.js';
import { camel, typedRequest, typedConfig as config } from '../typed.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const read = (p) => JSON.parse(readFileSync(path.join(root, p), 'utf8'));

const expectedId = (name) => read(`tests/expected/${name}.json`).reply.pack.snapshot.id;

test('a typed pack has the Rust host\'s snapshot id (seed-002)', async () => {
  const { builder } = await instance();
  const b = unwrap(() => builder.ContextBuilder.create(config({ tag: 'passthrough' })));
  const pack = unwrap(() => b.assemble(typedRequest(read('tests/scenarios/seed-002-happy-path.json').request)));
  assert.equal(pack.snapshot.id, expectedId('seed-002-happy-path'));
});

const quickstart = read('tests/scenarios/readme-quickstart.json');
const rag = { tag: 'rag', val: { retrieveLimit: 10 } };
const kb = camel(quickstart.host.retrieve.items[0]);

test('typed imports: a retriever and a policy give the Rust host\'s snapshot id', async () => {
  let reviewed = 0;
  const { builder } = await instance({
    retrieve: (_context, _query, limit) => [kb].slice(0, limit),
    review: (_context, items) => { reviewed += items.length; return items.map(() => ({ tag: 'allow' })); },
  });
  const b = unwrap(() => builder.ContextBuilder.create(config(rag)));
  const pack = unwrap(() => b.assemble(typedRequest(quickstart.request)));
  assert.equal(pack.snapshot.id, expectedId('readme-quickstart'));
  assert.equal(reviewed, 1);
});

test('a callback that throws is that source\'s failure, and the instance goes on', async () => {
  let fail = true;
  const { builder } = await instance({
    retrieve: () => { if (fail) throw new Error('index unreachable'); return [kb]; },
    review: (_c, items) => items.map(() => ({ tag: 'allow' })),
  });
  const b = unwrap(() => builder.ContextBuilder.create(config(rag)));
  const degraded = unwrap(() => b.assemble(typedRequest(quickstart.request)));
  assert.deepEqual(degraded.snapshot.status, ['degraded']);
  assert.deepEqual(degraded.snapshot.sourceCalls[0].outcome, { tag: 'failed', val: 'Error: index unreachable' });
  fail = false;
  const pack = unwrap(() => b.assemble(typedRequest(quickstart.request)));
  assert.equal(pack.snapshot.id, expectedId('readme-quickstart'));
});

test('a policy that throws fails the assembly, readably, with its snapshot', async () => {
  const { builder } = await instance({
    retrieve: () => [kb],
    review: () => { throw new Error('policy engine down'); },
  });
  const b = unwrap(() => builder.ContextBuilder.create(config(rag)));
  assert.throws(() => unwrap(() => b.assemble(typedRequest(quickstart.request))), (e) => {
    assert.ok(e instanceof CtxpackError);
    assert.equal(e.message, 'host import `policy.review` failed: Error: policy engine down');
    assert.deepEqual(e.failure.snapshot.status, ['failed']);
    return true;
  });
});

test('a refusal prints as what it is, not [object Object]', async () => {
  const { builder } = await instance();
  const bad = config(rag);
  bad.plan.cutStep = 0;
  assert.throws(() => unwrap(() => builder.ContextBuilder.create(bad)), (e) => {
    assert.match(String(e), /^CtxpackError: invalid field `config\.plan\.cut-step`/);
    return true;
  });
});

test('driven with JSON, a request without keep-last considers every turn (not 0)', async () => {
  const { json } = await instance();
  const b = unwrap(() => json.JsonBuilder.create('{}'));
  const request = { ...quickstart.request, budget: 4000 };
  delete request['keep-last'];
  request.conversation = Array.from({ length: 8 }, (_, i) => ({
    role: i % 2 === 0 ? 'user' : 'assistant', content: `turn ${i}`,
  }));
  const outcome = JSON.parse(await drive(b.start(JSON.stringify(request)), {}, request.context));
  const turns = outcome.pack.entries.filter((e) => e.id.startsWith('turn-'));
  assert.equal(turns.length, 8);
  // Left out altogether, the tokenizer is refused naming it.
  const { tokenizer: _, ...untokenized } = request;
  const refused = JSON.parse(await drive(b.start(JSON.stringify(untokenized)), {}, request.context));
  assert.equal(refused.failed.error['invalid-field'].field, 'request.tokenizer');
  assert.match(refused.failed.error['invalid-field'].message, /is required when the request names no model/);
});

test('async callbacks of one round run together', async () => {
  const scenario = read('tests/scenarios/full-sources.json');
  const { replay } = await import('./scenario-host.js');
  const host = replay(path.join(root, 'tests/scenarios/full-sources.json'));
  let running = 0;
  let most = 0;
  const slow = (f) => async (...a) => {
    running += 1; most = Math.max(most, running);
    await new Promise((r) => setTimeout(r, 10));
    running -= 1;
    return f.apply(host, a);
  };
  const async_host = {
    retrieve: slow(host.retrieve), recallMemory: slow(host.recallMemory),
    repositoryState: slow(host.repositoryState), expandGraph: slow(host.expandGraph),
    review: (...a) => host.review(...a),
  };
  const { json } = await instance();
  const b = unwrap(() => json.JsonBuilder.create(JSON.stringify(scenario.config ?? {})));
  const outcome = JSON.parse(await drive(b.start(JSON.stringify(scenario.request)), async_host, scenario.request.context));
  assert.equal(outcome.pack.snapshot.id, read('tests/expected/full-sources.json').reply.pack.snapshot.id);
  assert.ok(most >= 2, `at most ${most} at once`);
  host.check();
});

test('an assembly driven to its end is dropped from the instance', async () => {
  const { json } = await instance();
  const b = unwrap(() => json.JsonBuilder.create('{}'));
  const assembly = b.start(JSON.stringify(read('tests/scenarios/seed-002-happy-path.json').request));
  await drive(assembly, {}, {});
  // Not the assembly's own `step-mismatch` (it is over): the handle is gone.
  assert.throws(() => assembly.step(''), (e) => !Object.prototype.hasOwnProperty.call(e, 'payload'));
});
