// The package's own promises: errors naming fields, callbacks that throw,
// reject or hand back wrong values, Promises awaited concurrently, the
// router, the diff, builders reused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Builder, Router, diffSnapshots, CtxpackError, AssemblyFailed, HostError, explainReason,
} from '../src/index.js';
import { readFileSync } from 'node:fs';
import { camelKeys } from './scenario.js';

const REQUEST = {
  context: { traceId: 't-1', userId: 'u-1' },
  query: 'How long do refunds take?',
  tokenizer: 'o200k-base',
  entryOverhead: 0,
  keepLast: 6,
  systemPrompt: 'Answer from the documents.',
};
const KB = {
  id: 'kb-1', section: 'relevant-knowledge', trust: 'trusted', score: 0.9,
  text: 'Refunds take five business days.',
  provenance: { sourceKind: 'kb', reference: 'refunds.md' },
};
const FULL = { profile: { full: { retrieveLimit: 5, graphDepth: 1, memoryLimit: 3, repositoryState: true } } };

const reasonOf = (pack, id) => pack.snapshot.entries.find((e) => e.id === id)?.reason;

test('a wrong field is an error naming it, never a silent default', async () => {
  const builder = await Builder.create({});
  await assert.rejects(builder.assemble({ ...REQUEST, keepLast: 'six' }), (e) => {
    assert.ok(e instanceof AssemblyFailed && e instanceof CtxpackError && e instanceof Error);
    assert.equal(e.error.invalidField.field, 'request.keepLast');
    assert.equal(e.message, 'invalid field `request.keepLast`: invalid type: string "six", expected u32');
    assert.equal(e.snapshot, null);
    return true;
  });
  await assert.rejects(builder.assemble({ ...REQUEST, keep_last: 6 }), (e) => {
    assert.equal(e.error.invalidField.field, 'request.keep_last');
    // Named as the caller spells them, without a position in text the
    // caller never wrote.
    assert.match(e.message, /unknown field `keep_last`, expected one of `context`.*`keepLast`, `conversationStart`, `form`, `layout`, `stageSummaries`, `compaction`$/);
    return true;
  });
  const { tokenizer: _, ...noTokenizer } = REQUEST;
  await assert.rejects(builder.assemble(noTokenizer), (e) => e.error.invalidField.field === 'request.tokenizer'
    && /is required when the request names no model/.test(e.message));
  await assert.rejects(Builder.create({ plan: { defaultBudget: -1 } }),
    (e) => e instanceof CtxpackError && e.error.invalidField.field === 'config.plan.defaultBudget');
  await assert.rejects(Builder.create([]), (e) => e.error.invalidField.field === 'config');
  await assert.rejects(builder.assemble(null), (e) => e.error.invalidField.field === 'request');
  // No request at all: the core names what is missing, not a TypeError.
  await assert.rejects(builder.assemble(), (e) => e instanceof AssemblyFailed && /`request.tokenizer`: is required/.test(e.message));
  // The builder is still good after all that.
  const pack = await builder.assemble(REQUEST);
  assert.equal(pack.snapshot.status[0], 'complete');
});

test('documented defaults are applied: budget, overhead of the defaults', async () => {
  const builder = await Builder.create();
  const pack = await builder.assemble(REQUEST);
  assert.equal(pack.snapshot.tokenBudget, pack.budgetLimit);
  assert.ok(pack.budgetLimit > 0);
});

test('a plain trim needs the conversation, a budget and a tokenizer, and is deterministic', async () => {
  const builder = await Builder.create();
  const conversation = Array.from({ length: 12 }, (_, i) => ({
    role: i % 2 === 0 ? 'user' : 'assistant', content: `turn ${i}: ${'word '.repeat(10)}`,
  }));
  const trim = { conversation, budget: 60, tokenizer: 'o200k-base' };
  const pack = await builder.assemble(trim);
  const kept = pack.messages.map((m) => m.content);
  assert.ok(kept.length > 0 && kept.length < 12, String(kept.length));
  assert.ok(kept.at(-1).startsWith('turn 11:'));
  assert.ok(pack.budgetUsed <= 60);
  // Left out: no trace id, an empty query, no overhead, every turn
  // considered (none dropped by keep-last, only by the budget).
  assert.equal(pack.traceId, '');
  assert.ok(pack.snapshot.entries.every((e) => e.reason !== 'keep-last' && !e.reason.keepLast));
  assert.ok(pack.snapshot.entries.some((e) => e.reason.overBudget));
  // The kept conversation begins on a user turn, as chat APIs need.
  assert.equal(pack.messages[0].role, 'user');
  assert.ok(pack.snapshot.entries.some((e) => e.reason === 'before-user-turn'));
  const anyTurn = await builder.assemble({ ...trim, conversationStart: 'any-turn' });
  assert.equal(anyTurn.messages[0].role, 'assistant');
  const again = await (await Builder.create()).assemble(trim);
  assert.equal(again.snapshot.id, pack.snapshot.id);
});

test('a throwing or rejecting source degrades the assembly, a HostError keeps its message', async () => {
  const builder = await Builder.create(FULL, {
    retrieve: async () => [KB],
    expandGraph: () => { throw new HostError('graph store unreachable'); },
    recallMemory: async () => { throw new RangeError('bad memory'); },
    repositoryState: () => Promise.reject(new Error('index rebuilding')),
  });
  const pack = await builder.assemble(REQUEST);
  assert.deepEqual(pack.snapshot.status, ['degraded']);
  assert.equal(reasonOf(pack, 'kb-1'), 'within-budget');
  const outcome = Object.fromEntries(pack.snapshot.sourceCalls.map((c) => [c.capability, c.outcome]));
  assert.deepEqual(outcome['sources.retrieve'], { answered: 1 });
  assert.deepEqual(outcome['sources.expand-graph'], { failed: 'graph store unreachable' });
  assert.deepEqual(outcome['sources.recall-memory'], { failed: 'RangeError: bad memory' });
  assert.deepEqual(outcome['sources.repository-state'], { failed: 'Error: index rebuilding' });
});

test('a mistake in a callback is thrown at the caller, not recorded as its store failing', async () => {
  for (const mistake of [
    () => undefined.id, // TypeError
    async () => [KB].map((c) => c.missing.reference), // TypeError, rejected
    () => notDefined, // eslint-disable-line no-undef -- ReferenceError
  ]) {
    const builder = await Builder.create(FULL, { retrieve: mistake });
    await assert.rejects(builder.assemble(REQUEST), (e) => e instanceof TypeError || e instanceof ReferenceError);
    // The builder goes on after a mistake.
    const pack = await builder.assemble(REQUEST, { retrieve: () => [KB] });
    assert.equal(reasonOf(pack, 'kb-1'), 'within-budget');
  }
});

test('callbacks that cannot be lent are refused before anything runs', async () => {
  await assert.rejects(Builder.create(FULL, { retreive: () => [KB] }),
    { name: 'TypeError', message: 'callbacks.retreive: ctxpack calls callbacks.retrieve(), which this object does not have — a misspelling?' });
  class Store {
    summarise() { return []; }
  }
  const builder = await Builder.create(FULL, { retrieve: () => [KB] });
  await assert.rejects(builder.assemble(REQUEST, new Store()), /callbacks\.summarise: ctxpack calls callbacks\.summarize\(\)/);
  await assert.rejects(Builder.create(FULL, () => [KB]), /^TypeError: callbacks: a function cannot lend retrieve, expandGraph/);
  // A near name beside the callback itself is the object's own business.
  const both = await Builder.create(FULL, { retrieve: () => [KB], retrieved: () => 0 });
  assert.equal(reasonOf(await both.assemble(REQUEST), 'kb-1'), 'within-budget');
});

test('a source the callbacks lack is one this host does not provide', async () => {
  const builder = await Builder.create(FULL, { retrieve: () => [KB] });
  const pack = await builder.assemble(REQUEST);
  const failed = pack.snapshot.sourceCalls.filter((c) => c.outcome.failed);
  assert.deepEqual(failed.map((c) => c.outcome.failed), Array(failed.length).fill('not provided by this host'));
  assert.ok(failed.length >= 2);
});

test('a policy that throws fails the assembly with its failed snapshot', async () => {
  const builder = await Builder.create(FULL, {
    retrieve: () => [KB],
    review: async () => { throw new HostError('policy engine down'); },
  });
  await assert.rejects(builder.assemble(REQUEST), (e) => {
    assert.ok(e instanceof AssemblyFailed);
    assert.deepEqual(e.error, { hostFailed: { capability: 'policy.review', message: 'policy engine down' } });
    assert.ok(e.snapshot.status.includes('failed'), e.snapshot.status);
    assert.match(e.message, /policy\.review.*policy engine down/);
    return true;
  });
});

test('verdicts deny and redact', async () => {
  const other = { ...KB, id: 'kb-2', text: 'Refunds of gift cards are not possible.' };
  const builder = await Builder.create(FULL, {
    retrieve: () => [KB, other],
    review: (_c, items) => items.map((c) => (c.id === 'kb-1' ? { redact: 'Refunds: see policy.' } : c.id === 'kb-2' ? { deny: 'internal' } : 'allow')),
  });
  const pack = await builder.assemble(REQUEST);
  assert.deepEqual(reasonOf(pack, 'kb-2'), { policyDenied: 'internal' });
  assert.ok(pack.text.includes('Refunds: see policy.'));
  assert.ok(!pack.text.includes('five business days'));
});

test('a callback that gives something other than candidates is refused, naming it', async () => {
  const builder = await Builder.create(FULL, { retrieve: () => [{ ...KB, section: 'nowhere' }] });
  await assert.rejects(builder.assemble(REQUEST), (e) => {
    assert.ok(e instanceof CtxpackError);
    assert.equal(e.error.invalidField.field, 'retrieve()[0].section');
    assert.match(e.message, /unknown variant `nowhere`/);
    return true;
  });
  const review = await Builder.create(FULL, { retrieve: () => [KB], review: () => ['maybe'] });
  await assert.rejects(review.assemble(REQUEST), (e) => e.error.invalidField.field === 'review()[0]');
});

test("a round's calls run concurrently, each Promise awaited between steps", async () => {
  // The first round: retrieval, memory and the repository (the graph is
  // expanded from what retrieval answered, in a second round).
  const started = [];
  let release;
  const gate = new Promise((r) => { release = r; });
  const slow = (name, value) => async () => {
    started.push(name);
    if (started.length === 3) release();
    await gate;
    return value;
  };
  const builder = await Builder.create(FULL, {
    retrieve: slow('retrieve', [KB]),
    expandGraph: slow('graph', []),
    recallMemory: slow('memory', []),
    repositoryState: slow('repository', []),
  });
  const pack = await builder.assemble(REQUEST);
  // None of the first round finished before all three had started.
  assert.deepEqual(started.slice(0, 3).sort(), ['memory', 'repository', 'retrieve']);
  assert.deepEqual(started.slice(3), ['graph']);
  assert.equal(reasonOf(pack, 'kb-1'), 'within-budget');
});

test('a summariser that throws makes the builder cut instead (truncated)', async () => {
  // The corpus's summariser scenario, with a summariser of this test's.
  const scenario = camelKeys(JSON.parse(readFileSync(
    new URL('../../../tests/scenarios/compress-summariser-down.json', import.meta.url), 'utf8')));
  let asked = 0;
  const builder = await Builder.create(scenario.config, {
    retrieve: () => scenario.host.retrieve.items,
    summarize: async (requests, tokenizer) => {
      asked += requests.length;
      assert.equal(tokenizer, 'o200k-base');
      throw new HostError('no model');
    },
  });
  const pack = await builder.assemble(scenario.request);
  assert.ok(asked >= 1, 'the summariser was asked');
  assert.deepEqual(pack.snapshot.status, ['truncated']);
  assert.ok(pack.budgetUsed <= pack.budgetLimit);
});

test('the router routes; handle asks nothing on a confident route', async () => {
  const router = await Router.create(
    'threshold: 0.5\nroutes:\n  - { name: weather, skill: forecast, rules: [{ keywords: [rain], weight: 0.9 }] }\n');
  const decision = router.route('Will it rain tomorrow?');
  assert.equal(decision.route, 'weather');
  let called = 0;
  const builder = await Builder.create({ profile: { rag: { retrieveLimit: 5 } } }, { retrieve: () => { called += 1; return [KB]; } });
  const handled = await builder.handle(router, { ...REQUEST, query: 'Will it rain tomorrow?' });
  assert.equal(handled.dispatch.skill.skill, 'forecast');
  assert.equal(called, 0);
  const fallback = await builder.handle(router, REQUEST);
  assert.ok(fallback.dispatch.fallback.pack.text.includes('five business days'));
  assert.equal(called, 1);
  await assert.rejects(Router.create('routes: [', 'yaml'), CtxpackError);
  await assert.rejects(Router.create('{}', 'toml'), (e) => e.error.invalidField.field === 'format');
});

test('diffSnapshots says what entered and left', async () => {
  const builder = await Builder.create({ profile: { rag: { retrieveLimit: 5 } } });
  const before = await builder.assemble(REQUEST, { retrieve: () => [KB] });
  const after = await builder.assemble(REQUEST, { retrieve: () => [{ ...KB, id: 'kb-9' }] });
  const diff = await diffSnapshots(before.snapshot, after.snapshot);
  const kinds = Object.fromEntries(diff.changes.map((c) => [c.id, c.kind]));
  assert.equal(kinds['kb-1'], 'left');
  assert.equal(kinds['kb-9'], 'entered');
  await assert.rejects(diffSnapshots({}, after.snapshot), (e) => e.error.invalidField.field === 'before');
});

test("explainReason says why, in the WIT's words, with what the reason carries", () => {
  assert.equal(explainReason('within-budget'), 'Included: it fit the budget.');
  assert.equal(explainReason({ overBudget: { needed: 30, remaining: 4 } }),
    'Dropped: it needed more tokens than remained: needed 30, 4 remained.');
  assert.equal(explainReason({ duplicateOf: 'kb-1' }), 'Dropped: a copy of the included candidate with this id: kb-1.');
  assert.match(explainReason('unreviewed'), /^Dropped: it would have fit, but the review rounds were spent/);
});

test('a source the profile never calls is refused, naming the profiles that would', async () => {
  const retrieve = async () => [];
  await assert.rejects(Builder.create({}, { retrieve }), (e) => {
    assert.ok(e instanceof CtxpackError);
    assert.equal(e.error.invalidField.field, 'callbacks.retrieve');
    assert.match(e.message, /profile `passthrough` never calls it; `rag` or `ragMemory` or `full` would/);
    return true;
  });
  const rag = await Builder.create({ profile: { rag: { retrieveLimit: 3 } } });
  assert.equal(rag.profile, 'rag');
  await assert.rejects(rag.assemble(REQUEST, { retrieve, recallMemory: retrieve }),
    /callbacks\.recallMemory.*`ragMemory` or `full` would/);
  const memory = await Builder.create({ profile: { ragMemory: { retrieveLimit: 3, memoryLimit: 2 } } },
    { retrieve, recallMemory: retrieve, review: (_c, items) => items.map(() => 'allow') });
  assert.equal(memory.profile, 'rag-memory');
  assert.equal((await memory.assemble(REQUEST)).snapshot.status[0], 'complete');
});

test('a request that names its model takes what it leaves out from the profile', async () => {
  const builder = await Builder.create({});
  const conversation = [{ role: 'user', content: 'What is the refund window?' }];
  const pack = await builder.assemble({ model: 'openai/gpt-4o-2024-08-06', systemPrompt: 'Be brief.', conversation });
  assert.equal(pack.snapshot.model.profile.name, 'gpt-4o');
  assert.deepEqual(pack.snapshot.model.assumed, ['tokenizer', 'budget', 'entry-overhead', 'reply-overhead']);
  assert.equal(pack.snapshot.tokenizer, 'o200k-base');
  assert.equal(pack.snapshot.tokenBudget, 128000 - 16384);
  const plain = await builder.assemble({ tokenizer: 'o200k-base', systemPrompt: 'Be brief.', conversation });
  // OpenAI's count: 3 a message and its role's token, and 3 that prime the reply.
  assert.equal(pack.snapshot.messageTokens, plain.snapshot.messageTokens + 4 * pack.messages.length + 3);
  assert.equal(plain.snapshot.model, undefined);
  // One's own profile; a name no profile has; a file the builder lacks.
  const house = { name: 'house-7b', tokenizer: { charsPerToken: 4 }, contextWindow: 4096, outputReserve: 1024, messageOverhead: 4, replyOverhead: 0 };
  const own = await (await Builder.create({ models: [house] })).assemble({ model: 'House-7B', conversation });
  assert.deepEqual(own.snapshot.model.profile, house);
  assert.equal(own.snapshot.tokenBudget, 3072);
  await assert.rejects(builder.assemble({ model: 'gpt-4-o', conversation }),
    (e) => e.error.invalidField.field === 'request.model' && /nearest: gpt-4o, gpt-4o-mini, gpt-4\.1$/.test(e.error.invalidField.message.replace(/ \(add.*$/, '')));
  await assert.rejects(builder.assemble({ model: 'qwen3-8b', conversation }),
    (e) => e instanceof CtxpackError && /tokenizer file "qwen3" \(Qwen 2\.5 and 3's tokenizer\.json/.test(e.message));
});
