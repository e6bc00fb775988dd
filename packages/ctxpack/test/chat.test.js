// Chat from JS: a provider's messages in, the request to send out (the
// kept messages as given, with cache hints), counting, and the
// trimMessages drop-in against LangChain.js's own, offline. The chat
// itself is the core's (its Rust tests); here, what the package maps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AIMessage, HumanMessage, SystemMessage, ToolMessage, trimMessages as langchainTrim,
} from '@langchain/core/messages';
import {
  Builder, CtxpackError, chat as chatOf, countTokens, toLangChain, trimMessages,
} from '../src/index.js';

const WORDS = 'refund order ship late the a when why how café 🙂 naïve x'.split(' ');

/** A seeded generator (mulberry32): the same cases every run. */
function rng(seed) {
  let a = seed;
  return () => {
    a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const below = (r, n) => Math.floor(r() * n);

/** Counts as the messages are sent: each message's content, with no
 * header and no separator (in code points). */
function countedAsCtxpack(cpt) {
  return (messages) => messages.reduce((sum, m) => sum + Math.ceil([...m.content].length / cpt), 0);
}

function chat(r, n) {
  return Array.from({ length: n }, (_, i) => {
    const content = Array.from({ length: below(r, 13) }, () => WORDS[below(r, WORDS.length)]).join(' ');
    return i % 2 === 0 ? new HumanMessage(content) : new AIMessage(content);
  });
}

/**
 * ctxpack's trim, or null where it refuses because nothing of the
 * conversation would be kept: LangChain.js then returns nothing but the
 * system message, and ctxpack says why (the newest turn is never silently
 * lost).
 */
async function oursOrRefused(messages, options, theirs, what) {
  try {
    return await trimMessages(messages, options);
  } catch (e) {
    if (!(e instanceof CtxpackError)) throw e;
    assert.ok(theirs.every((m) => m._getType() === 'system'), `${what}: ${e.message}`);
    assert.match(e.error.invalidField.field, /^options\.(maxTokens|startOn)$/, what);
    return null;
  }
}

const spell = (ms) => ms.map((m) => [m._getType(), m.content]);

test('trimMessages keeps what LangChain.js keeps when both count alike', async () => {
  const r = rng(7);
  const builder = await Builder.create();
  let compared = 0;
  for (let c = 0; c < 200; c += 1) {
    const withSystem = below(r, 2) === 1;
    const messages = [
      ...(withSystem ? [new SystemMessage('Be brief. '.repeat(1 + below(r, 4)))] : []),
      ...chat(r, 1 + below(r, 14)),
    ];
    const cpt = [1, 3, 4][below(r, 3)];
    const maxTokens = below(r, 201);
    const startOn = withSystem ? undefined : [undefined, 'human'][below(r, 2)];
    const counter = countedAsCtxpack(cpt);
    const options = { maxTokens, strategy: 'last', startOn, includeSystem: withSystem };
    const theirs = await langchainTrim(messages, { ...options, tokenCounter: counter });
    if (withSystem && counter(messages.slice(0, 1)) > maxTokens) {
      // LangChain keeps a system message over the budget; ctxpack never
      // goes over it, and says why.
      await assert.rejects(trimMessages(messages, { ...options, builder, tokenCounter: { charsPerToken: cpt } }),
        /^CtxpackError: invalid field `options\.maxTokens`: the system message alone counts \d+ tokens, over maxTokens/);
      continue;
    }
    const ours = await oursOrRefused(messages, { ...options, builder, tokenCounter: { charsPerToken: cpt } }, theirs, c);
    if (ours === null) continue;
    // LangChain.js gives copies; ctxpack the originals.
    assert.deepEqual(spell(ours), spell(theirs), JSON.stringify({ c, cpt, maxTokens, startOn }));
    assert.ok(ours.every((m) => messages.includes(m)));
    compared += 1;
  }
  assert.ok(compared > 120, String(compared));
});

test('trimMessages refuses what it would not honour', async () => {
  const messages = [new HumanMessage('hi')];
  await assert.rejects(trimMessages(messages, { maxTokens: 10, strategy: 'middle' }), /options\.strategy/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, strategy: 'first', startOn: 'human' }),
    /options\.startOn`: only valid with the strategy `last`/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, allowPartial: true, textSplitter: 42 }), /^TypeError: `options\.textSplitter`: expected a function of a text or a TextSplitter/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, endOn: 42 }), /options\.endOn/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, startOn: 'ai' }), /options\.startOn/);
  // An option trimMessages does not read is refused, not ignored.
  await assert.rejects(trimMessages(messages, { maxTokens: 10, include_system: true }),
    /^TypeError: `options\.include_system`: not an option of trimMessages \(.*\); did you mean `includeSystem`\?$/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, windowSize: 3 }), /`options\.windowSize`: not an option/);
    // A mistake names the option the caller wrote, not the request field it becomes.
  await assert.rejects(trimMessages(messages, { maxTokens: -5 }), /^CtxpackError: invalid field `options\.maxTokens`/);
  await assert.rejects(trimMessages(messages, { maxTokens: 2 ** 40 }), /`options\.maxTokens`/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, entryOverhead: -1 }), /`options\.entryOverhead`: not an option/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, tokenCounter: 'gpt-4o' }), /`options\.tokenCounter`/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, tokenCounter: { charsPerToken: 0 } }), /`options\.tokenCounter\.charsPerToken`/);
});

// LangChain's own case (its test_trim_messages_last_30_include_system),
// with its messages and counter: 3 tokens before a message, 3 after, 4 a
// text or block.
const dummyTokenCounter = (messages) => messages.reduce((n, m) => n + 3
  + (typeof m.content === 'string' ? 4 : m.content.length * 4) + 3, 0);

test('a function as tokenCounter: LangChain\'s last 30, system included', async () => {
  const messages = [
    new SystemMessage('This is a 4 token text.'),
    new HumanMessage({ content: 'This is a 4 token text.', id: 'first' }),
    new AIMessage({
      content: [
        { type: 'text', text: 'This is the FIRST 4 token block.' },
        { type: 'text', text: 'This is the SECOND 4 token block.' },
      ],
      id: 'second',
    }),
    new HumanMessage({ content: 'This is a 4 token text.', id: 'third' }),
    new AIMessage({ content: 'This is a 4 token text.', id: 'fourth' }),
  ];
  const ours = await trimMessages(messages, {
    maxTokens: 30, includeSystem: true, tokenCounter: dummyTokenCounter, strategy: 'last',
  });
  assert.deepEqual(ours, [messages[0], messages[3], messages[4]]);
});

test('a function or a model as tokenCounter keeps what LangChain.js keeps at every budget', async () => {
  const words = (ms) => ms.reduce((n, m) => n + String(m.content).split(' ').filter(Boolean).length + 4, 0);
  const perList = async (ms) => 3 + ms.reduce((n, m) => n + [...String(m.content)].length, 0);
  const model = { getNumTokens: async (content) => Math.ceil(String(content).length / 3) + 1 };
  const r = rng(11);
  const builder = await Builder.create();
  for (const counter of [words, perList, model]) {
    const countList = typeof counter === 'function' ? counter
      : async (ms) => (await Promise.all(ms.map((m) => counter.getNumTokens(m.content)))).reduce((a, b) => a + b, 0);
    for (let c = 0; c < 60; c += 1) {
      const includeSystem = below(r, 2) === 1;
      const messages = [
        ...(includeSystem ? [new SystemMessage('Be brief. '.repeat(1 + below(r, 3)))] : []),
        ...chat(r, 1 + below(r, 12)),
      ];
      const maxTokens = below(r, 121);
      // (LangChain.js loses the system message to startOn: not compared.)
      const startOn = includeSystem ? undefined : [undefined, 'human'][below(r, 2)];
      if (includeSystem && await countList(messages.slice(0, 1)) > maxTokens) continue;
      const options = { maxTokens, strategy: 'last', startOn, includeSystem };
      const theirs = await langchainTrim(messages, { ...options, tokenCounter: counter });
      const ours = await oursOrRefused(messages, { ...options, builder, tokenCounter: counter }, theirs, c);
      if (ours === null) continue;
      assert.deepEqual(spell(ours), spell(theirs), JSON.stringify({ c, maxTokens, startOn, includeSystem }));
      assert.ok(ours.length === 0 || await countList(ours) <= maxTokens);
    }
  }
});

test('a tokenCounter is given only the caller\'s messages, however the core writes them', async () => {
  // A control character removed, a tag-like structure defused, blank
  // lines at a content's end, a content that holds what looks like a header.
  const contents = ['Tabs\tand trailing   \n\nblank lines\n\n\n', '  leading spaces', 'x\u0001y \u200b z',
    'a </UNTRUSTED> tag and <system> too', 'why? [user] looks like a header\n\n[user] here',
    'Numbers: 1234567890 000', 'café 🙂', 'ok'];
  const r = rng(5);
  for (let c = 0; c < 40; c += 1) {
    const messages = Array.from({ length: 1 + below(r, 12) }, (_, i) => {
      const content = contents[below(r, contents.length)];
      return i % 2 === 0 ? new HumanMessage(content) : new AIMessage(content);
    });
    for (const maxTokens of [0, 10, 40, 90, 200]) {
      const given = [];
      const chars = (ms) => {
        given.push(...ms);
        return ms.reduce((n, m) => n + m.content.length, 0);
      };
      const theirs = await langchainTrim(messages, { maxTokens, tokenCounter: chars, strategy: 'last' });
      given.length = 0;
      const ours = await oursOrRefused(messages, { maxTokens, tokenCounter: chars }, theirs, c);
      assert.ok(given.every((m) => messages.includes(m)), JSON.stringify({ c, maxTokens }));
      if (ours === null) continue;
      assert.deepEqual(spell(ours), spell(theirs), JSON.stringify({ c, maxTokens }));
    }
  }
});

test('startOn drops a leading system message as LangChain.js does, even when all fits', async () => {
  const r = rng(21);
  const builder = await Builder.create();
  const count = (ms) => ms.length;
  for (let c = 0; c < 60; c += 1) {
    const messages = [new SystemMessage('Be brief.'), ...chat(r, 1 + below(r, 12))];
    const maxTokens = below(r, 31);
    const theirs = await langchainTrim(messages, { maxTokens, tokenCounter: count, strategy: 'last', startOn: 'human' });
    const ours = await oursOrRefused(messages, { maxTokens, tokenCounter: count, startOn: 'human', builder }, theirs, c);
    if (ours === null) continue;
    assert.deepEqual(spell(ours), spell(theirs), JSON.stringify({ c, maxTokens }));
  }
});

test('endOn, by type names and classes, keeps what LangChain.js keeps', async () => {
  const r = rng(12);
  const builder = await Builder.create();
  const words = (ms) => ms.reduce((n, m) => n + String(m.content).split(' ').filter(Boolean).length + 3, 0);
  for (let c = 0; c < 80; c += 1) {
    const messages = chat(r, 1 + below(r, 12));
    const endOn = ['human', 'ai', HumanMessage, ['ai', HumanMessage]][below(r, 4)];
    const maxTokens = below(r, 151);
    const theirs = await langchainTrim(messages, { maxTokens, tokenCounter: words, strategy: 'last', endOn });
    const ours = await oursOrRefused(messages, { maxTokens, tokenCounter: words, endOn, builder }, theirs, c);
    if (ours === null) continue;
    assert.deepEqual(spell(ours), spell(theirs), JSON.stringify({ c, maxTokens }));
  }
});

test('the cases a second try found', async () => {
  // A control character that made a message count as another whose letters
  // matched, a system message that holds header-like text, a defused tag.
  const chars = (ms) => ms.reduce((n, m) => n + m.content.length, 0);
  const words = (ms) => ms.reduce((n, m) => n + m.content.split(/\s+/).filter(Boolean).length, 0);
  const cases = [
    [[new HumanMessage('x!!!!!!'), new HumanMessage('x\u0001')], 2, chars, {}],
    [[new AIMessage('\n\n'), new AIMessage('\u0001 \u0001 \u0001')], 1, words, {}],
    [[new HumanMessage('hi!'), new HumanMessage('hi\u007f?')], 3, chars, {}],
    [[new SystemMessage('rules\n\n[user] hi'), new HumanMessage('hi')], 40, chars, { includeSystem: true }],
    [[new HumanMessage('a </UNTRUSTED> b'), new AIMessage('<system>x</system>'), new HumanMessage('c')], 30, chars, {}],
  ];
  for (const [messages, maxTokens, counter, options] of cases) {
    const given = [];
    const spy = (ms) => {
      given.push(...ms);
      return counter(ms);
    };
    const theirs = await langchainTrim(messages, { maxTokens, tokenCounter: counter, strategy: 'last', ...options });
    const ours = await oursOrRefused(messages, { maxTokens, tokenCounter: spy, ...options }, theirs, maxTokens);
    if (ours === null) continue;
    assert.deepEqual(spell(ours), spell(theirs), JSON.stringify({ maxTokens }));
    assert.ok(given.every((m) => messages.includes(m)));
    assert.ok(counter(ours) <= maxTokens);
  }
  await assert.rejects(
    trimMessages([new SystemMessage('  '), new HumanMessage('hi')], { maxTokens: 1, tokenCounter: chars, includeSystem: true }),
    /the system message alone counts 2 tokens/,
  );
});

test('a tokenCounter gets dicts as given, and its failure is thrown as it threw', async () => {
  const seen = [];
  const messages = [{ role: 'user', content: 'abcdef' }, { role: 'assistant', content: 'ghij' }, { role: 'user', content: 'kl' }];
  const counter = (ms) => {
    seen.push(...ms);
    return ms.reduce((n, m) => n + m.content.length, 0);
  };
  assert.deepEqual(await trimMessages(messages, { maxTokens: 6, tokenCounter: counter }), messages.slice(1));
  assert.ok(seen.length > 0 && seen.every((m) => messages.includes(m)));
  const down = new Error('the counting service is down');
  await assert.rejects(trimMessages(messages, { maxTokens: 6, tokenCounter: () => { throw down; } }), (e) => e === down);
  await assert.rejects(trimMessages(messages, { maxTokens: 6, tokenCounter: () => 2.5 }),
    /`options\.tokenCounter`: expected a whole number of tokens, got 2\.5/);
});

/** Characters of each message's text as sent (a text, or its text blocks). */
const chars = (ms) => ms.reduce((sum, m) => sum + (typeof m.content === 'string' ? [...m.content].length
  : m.content.reduce((n, b) => n + [...(b.text ?? '')].length, 0)), 0);

test("allowPartial cuts what LangChain.js's cuts", async () => {
  const r = rng(11);
  const builder = await Builder.create();
  let cut = 0;
  for (let c = 0; c < 300; c += 1) {
    const messages = Array.from({ length: 1 + below(r, 10) }, (_, i) => {
      const text = Array.from({ length: 1 + below(r, 4) }, () => Array.from({ length: below(r, 7) },
        () => WORDS[below(r, WORDS.length)]).join(' ')).join('\n');
      return i % 2 === 0 ? new HumanMessage(text) : new AIMessage(text);
    });
    if (r() < 0.5) messages.unshift(new SystemMessage('Be brief.\nBe kind.'));
    const strategy = r() < 0.5 ? 'last' : 'first';
    const options = { maxTokens: below(r, 151), tokenCounter: chars, strategy, allowPartial: true };
    if (strategy === 'last') {
      if (r() < 0.5) options.startOn = 'human';
      options.includeSystem = messages[0]._getType() === 'system' && r() < 0.5;
    } else if (r() < 0.6) {
      options.endOn = ['human', 'ai'][below(r, 2)];
    }
    if (r() < 0.3) options.textSplitter = (t) => t.split(/(?<= )/);
    if (options.includeSystem && chars(messages.slice(0, 1)) > options.maxTokens) continue;
    // Copies: LangChain.js's strategy 'first' writes its tries into the
    // message it cuts.
    const theirs = await langchainTrim(messages.map((m) => new m.constructor({ content: m.content })), options);
    // LangChain.js answers [undefined] when only the system message and
    // part of the next fit with startOn: no answer to compare with.
    if (theirs.includes(undefined)) continue;
    // Nor where LangChain.js cuts a message to nothing (a text ending in a
    // newline, split before it) and sends it empty: ctxpack never sends an
    // empty message (Anthropic refuses one).
    if (theirs.some((m) => m.content === '' && !messages.some((g) => g.content === ''))) continue;
    const ours = await oursOrRefused(messages, { ...options, builder }, theirs, c);
    if (ours === null) continue;
    assert.deepEqual(spell(ours), spell(theirs), `case ${c}: ${JSON.stringify({ ...options, tokenCounter: undefined })}`);
    assert.ok(chars(ours) <= options.maxTokens);
    if (ours.some((m) => !messages.includes(m))) cut += 1;
  }
  assert.ok(cut > 50, `${cut} cut`);
});

test('a tool call is never kept apart from its results', async () => {
  const messages = [
    new HumanMessage('weather?'),
    new AIMessage({ content: '', tool_calls: [{ id: 'a', name: 'w', args: {} }, { id: 'b', name: 'w', args: {} }] }),
    new ToolMessage({ content: 'rain', tool_call_id: 'a' }), new ToolMessage({ content: 'sun', tool_call_id: 'b' }),
    new HumanMessage('thanks'),
  ];
  const count = (ms) => 10 * ms.length;
  assert.deepEqual(await trimMessages(messages, { maxTokens: 25, tokenCounter: count }), messages.slice(4));
  assert.deepEqual(await trimMessages(messages, { maxTokens: 40, tokenCounter: count }), messages.slice(1));
  await assert.rejects(trimMessages(messages, { maxTokens: 9, tokenCounter: count }),
    /`options\.maxTokens`: the newest message counts 10 tokens, over maxTokens \(9\)/);
  // Each list the counter is given is the caller's own messages, in order.
  const given = [];
  await trimMessages(messages, { maxTokens: 40, tokenCounter: (ms) => { given.push(ms); return count(ms); } });
  assert.ok(given.length > 0 && given.every((ms) => ms.every((m, i) => messages.includes(m)
    && (i === 0 || messages.indexOf(ms[i - 1]) < messages.indexOf(m)))));
});

test('given only options, trimMessages is a trimmer for a chain, as LangChain.js\'s', async () => {
  const { RunnableLambda } = await import('@langchain/core/runnables');
  const r = rng(5);
  const messages = chat(r, 12);
  const options = { maxTokens: 20, tokenCounter: { charsPerToken: 3 }, startOn: 'human' };
  const trimmer = trimMessages(options);
  const direct = await trimMessages(messages, options);
  assert.ok(direct.length > 0 && direct.length < messages.length);
  assert.deepEqual(await trimmer.invoke(messages), direct);
  assert.deepEqual(await trimmer.batch([messages, messages.slice(0, 3)]),
    [direct, await trimMessages(messages.slice(0, 3), options)]);
  const chain = RunnableLambda.from((input) => input.history).pipe(trimmer);
  assert.deepEqual(await chain.invoke({ history: messages }), direct);
  const langchainOwn = (await import('@langchain/core/messages')).trimMessages({ maxTokens: 20, tokenCounter: countedAsCtxpack(3), startOn: 'human' });
  assert.deepEqual((await langchainOwn.invoke(messages)).map((m) => m.content), direct.map((m) => m.content));
  assert.throws(() => trimMessages({ maxTokens: 20, include_system: true }), /`options\.include_system`.*did you mean `includeSystem`/);
});

const TRAINS = [
  { role: 'system', content: 'You book trains.' },
  { role: 'user', content: 'A train to Lyon tomorrow?' },
  { role: 'assistant', content: null, tool_calls: [
    { id: 'c1', type: 'function', function: { name: 'trains', arguments: '{"to": "Lyon"}' } },
    { id: 'c2', type: 'function', function: { name: 'fares', arguments: '{"to": "Lyon"}' } }] },
  { role: 'tool', tool_call_id: 'c1', content: '09:12, 11:40' },
  { role: 'tool', tool_call_id: 'c2', content: '€39' },
  { role: 'user', content: [{ type: 'text', text: 'Book the 09:12.' },
    { type: 'image_url', image_url: { url: 'https://example.com/ticket.png', detail: 'low' } }] },
];

test('messages in come back as the request to send, cache-first, as Python gets them', async () => {
  const builder = await Builder.create({ profile: { rag: { retrieveLimit: 2 } } }, {
    retrieve: () => [{ id: 'kb-1', section: 'relevant-knowledge', trust: 'trusted', text: 'Seats are held 15 minutes.',
      provenance: { sourceKind: 'kb', reference: 'kb/seats' } }],
  });
  const request = { model: 'gpt-4o', query: 'Book the 09:12.', chat: chatOf(TRAINS) };
  const pack = await builder.assemble(request);
  const sent = JSON.parse(pack.chat.body).messages;
  // The system text, your messages as you gave them, the retrieved context
  // before the question being answered, which is last.
  assert.deepEqual(sent[0], { role: 'system', content: 'You book trains.' });
  assert.deepEqual(sent.slice(1, 5), TRAINS.slice(1, 5));
  assert.ok(sent[5].role === 'system' && sent[5].content.includes('Seats are held 15 minutes.'));
  assert.deepEqual(sent[6], TRAINS[5]);
  assert.deepEqual(pack.chat.sources, [null, 1, 2, 3, 4, null, 5]);
  assert.equal(JSON.parse(pack.chat.body).prompt_cache_key, pack.cacheKey);
  assert.deepEqual(pack.snapshot.cachePrefixes.map((p) => p.boundary), ['stable', 'history', 'turn']);
  // The image is priced by the model the request names: gpt-4o's low detail is 85.
  const counts = builder.count({ model: 'gpt-4o', chat: request.chat });
  assert.deepEqual(counts.turns, [1, 2, 3, 4, 5]);
  const alone = builder.count({ model: 'gpt-4o', chat: chatOf([{ role: 'user', content: [TRAINS[5].content[1]] }]) });
  assert.equal(alone.messages[0] - builder.count({ model: 'gpt-4o', chat: chatOf([{ role: 'user', content: [] }]) }).messages[0], 85);
  // Anthropic's shape: the same chat, its breakpoints on what the next turn repeats.
  const claude = await builder.assemble({ model: 'claude-sonnet-4-5', tokenizer: 'o200k-base', query: 'Lyon?', chat: chatOf([
    { role: 'user', content: 'Plan trips. '.repeat(600) }, { role: 'assistant', content: 'Yes.' },
    { role: 'user', content: 'Lyon?' }], 'anthropic') });
  const body = JSON.parse(claude.chat.body);
  assert.ok(JSON.stringify(body.messages).includes('"cache_control":{"type":"ephemeral"}'));
});

test('LangChain.js messages in and out, the same objects', async () => {
  const messages = [new SystemMessage('Be brief.'), new HumanMessage('hello'),
    new AIMessage({ content: '', tool_calls: [{ id: 'a', name: 'w', args: { city: 'Lyon' } }, { id: 'b', name: 'w', args: { city: 'Nice' } }] }),
    new ToolMessage({ content: 'rain', tool_call_id: 'a' }), new ToolMessage({ content: 'sun', tool_call_id: 'b' }),
    new HumanMessage('bye?')];
  const request = chatOf(messages);
  assert.deepEqual(request.messages[2].tool_calls.map((c) => [c.id, c.function.arguments]),
    [['a', '{"city":"Lyon"}'], ['b', '{"city":"Nice"}']]);
  const builder = await Builder.create();
  const pack = await builder.assemble({ tokenizer: 'o200k-base', budget: 400, chat: request });
  const out = await toLangChain(pack, messages);
  assert.ok(out.slice(1).every((m, i) => m === messages[i + 1]));
  assert.ok(out[0] instanceof SystemMessage && out[0].content === 'Be brief.');
  // For Claude, the breakpoint the pack puts on a message is on a copy.
  const claude = [new SystemMessage('Plan trips. '.repeat(500)), new HumanMessage('Lyon?'), new AIMessage('Yes.'), new HumanMessage('Book it.')];
  const cpack = await builder.assemble({ model: 'claude-sonnet-4-5', tokenizer: 'o200k-base', chat: chatOf(claude) });
  const marked = (await toLangChain(cpack, claude)).filter((m) => Array.isArray(m.content) && m.content.some((b) => b.cache_control));
  assert.ok(marked.length > 0 && marked.every((m) => !claude.includes(m)));
  assert.equal(claude[3].content, 'Book it.');
});

test('counting is one call, and the same as js-tiktoken', async () => {
  const { Tiktoken } = await import('js-tiktoken/lite');
  const o200k = (await import('js-tiktoken/ranks/o200k_base')).default;
  const enc = new Tiktoken(o200k);
  const r = rng(3);
  const texts = Array.from({ length: 40 }, () => Array.from({ length: below(r, 400) }, () => WORDS[below(r, WORDS.length)]).join(' ')
    + '\n\ndef f(x):\n    return x\n'.repeat(below(r, 3)));
  const builder = await Builder.create();
  const counted = builder.count({ texts, tokenizer: 'o200k-base' }).texts;
  assert.deepEqual(counted, texts.map((t) => enc.encode(t).length));
  assert.deepEqual(builder.countTexts(texts), counted);
  assert.equal(await countTokens(texts[5]), counted[5]);
  assert.equal(await countTokens(texts[5], { model: 'gpt-4o' }), counted[5]);
  assert.deepEqual(builder.countTexts(['\u00e9'.repeat(30_000), ''], { model: 'gpt-4o' }), [enc.encode('\u00e9'.repeat(30_000)).length, 0]);
  assert.throws(() => builder.countTexts(['a', 3]), /texts\[1\]/);
  await assert.rejects(countTokens('x', { model: 'no-such-model' }), /count\.model/);
  assert.throws(() => builder.count({ texts: ['x'], tokenizer: { host: 'mine' } }), /count\.tokenizer/);
});

test('chat mistakes name their place', async () => {
  const builder = await Builder.create();
  await assert.rejects(builder.assemble({ tokenizer: 'o200k-base', chat: chatOf([{ role: 'user', content: [{ type: 'input_audio' }] }]) }),
    /request\.chat\.messages\[0\]\.content\[0\].*not carried/);
  assert.throws(() => chatOf([new HumanMessage('a'), 42]), /`messages\[1\]`: expected an OpenAI-style message or a LangChain message/);
  const pack = await builder.assemble({ tokenizer: 'o200k-base', budget: 50, conversation: [{ role: 'user', content: 'hi' }] });
  await assert.rejects(toLangChain(pack, [new HumanMessage('hi')]), /a pack assembled from a chat/);
});
