// The messages users already have: OpenAI-style and @langchain/core
// messages in; OpenAI, Anthropic and the kept originals out; and the
// trimMessages drop-in against LangChain.js's own, offline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AIMessage, HumanMessage, SystemMessage, ToolMessage, trimMessages as langchainTrim,
} from '@langchain/core/messages';
import {
  Builder, cachedPrefix, conversationOf, keptMessages, toAnthropic, toLangChain, toOpenAI, trimMessages,
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
        /^TypeError: `options\.maxTokens`: the system message alone is \d+ tokens as counted, over maxTokens/);
      continue;
    }
    const ours = await trimMessages(messages, { ...options, builder, tokenCounter: { charsPerToken: cpt } });
    // LangChain.js gives copies; ctxpack the originals.
    const spell = (ms) => ms.map((m) => [m._getType(), m.content]);
    assert.deepEqual(spell(ours), spell(theirs), JSON.stringify({ c, cpt, maxTokens, startOn }));
    assert.ok(ours.every((m) => messages.includes(m)));
    compared += 1;
  }
  assert.ok(compared > 150, String(compared));
});

test('trimMessages refuses what it would not honour', async () => {
  const messages = [new HumanMessage('hi')];
  await assert.rejects(trimMessages(messages, { maxTokens: 10, strategy: 'middle' }), /options\.strategy/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, strategy: 'first', startOn: 'human' }),
    /options\.startOn`: only valid with strategy: 'last'/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, allowPartial: true, textSplitter: 42 }), /^TypeError: `options\.textSplitter`: expected a function of a text or a LangChain\.js TextSplitter/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, endOn: 42 }), /options\.endOn/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, startOn: 'ai' }), /options\.startOn/);
  // An option trimMessages does not read is refused, not ignored.
  await assert.rejects(trimMessages(messages, { maxTokens: 10, include_system: true }),
    /^TypeError: `options\.include_system`: not an option of trimMessages \(.*\); did you mean `includeSystem`\?$/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, windowSize: 3 }), /`options\.windowSize`: not an option/);
    // A mistake names the option the caller wrote, not the request field it becomes.
  await assert.rejects(trimMessages(messages, { maxTokens: -5 }), /^TypeError: `options\.maxTokens`: expected a whole number of tokens up to 4294967295, got -5$/);
  await assert.rejects(trimMessages(messages, { maxTokens: 2 ** 40 }), /`options\.maxTokens`/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, entryOverhead: -1 }), /`options\.entryOverhead`/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, tokenCounter: 'gpt-4o' }), /^TypeError: `options\.tokenCounter`: unknown variant `gpt-4o`/);
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
      const ours = await trimMessages(messages, { ...options, builder, tokenCounter: counter });
      const theirs = await langchainTrim(messages, { ...options, tokenCounter: counter });
      const spell = (ms) => ms.map((m) => [m._getType(), m.content]);
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
      const ours = await trimMessages(messages, { maxTokens, tokenCounter: chars });
      assert.ok(given.every((m) => messages.includes(m)), JSON.stringify({ c, maxTokens }));
      const theirs = await langchainTrim(messages, { maxTokens, tokenCounter: chars, strategy: 'last' });
      const spell = (ms) => ms.map((m) => [m._getType(), m.content]);
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
    const ours = await trimMessages(messages, { maxTokens, tokenCounter: count, startOn: 'human', builder });
    const spell = (ms) => ms.map((m) => [m._getType(), m.content]);
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
    const ours = await trimMessages(messages, { maxTokens, tokenCounter: words, endOn, builder });
    const spell = (ms) => ms.map((m) => [m._getType(), m.content]);
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
    const ours = await trimMessages(messages, { maxTokens, tokenCounter: spy, ...options });
    const theirs = await langchainTrim(messages, { maxTokens, tokenCounter: counter, strategy: 'last', ...options });
    const spell = (ms) => ms.map((m) => [m._getType(), m.content]);
    assert.deepEqual(spell(ours), spell(theirs), JSON.stringify({ maxTokens }));
    assert.ok(given.every((m) => messages.includes(m)));
    assert.ok(counter(ours) <= maxTokens);
  }
  await assert.rejects(
    trimMessages([new SystemMessage('  '), new HumanMessage('hi')], { maxTokens: 1, tokenCounter: chars, includeSystem: true }),
    /the system message alone is 2 tokens/,
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

const OPENAI = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: [{ type: 'text', text: 'Weather in Porto' }, { type: 'text', text: 'and Lisbon?' }] },
  { role: 'assistant', content: null, tool_calls: [
    { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city": "Porto"}' } },
    { id: 'c2', type: 'function', function: { name: 'weather', arguments: '{"city": "Lisbon"}' } },
  ] },
  { role: 'tool', tool_call_id: 'c1', content: '18 C, sun' },
  { role: 'tool', tool_call_id: 'c2', content: '21 C, cloud' },
  { role: 'assistant', content: 'Porto 18 C, Lisbon 21 C.' },
  { role: 'user', content: 'Thanks' },
];

async function packOf(messages, budget, conversationStart = 'user-turn') {
  const builder = await Builder.create();
  return builder.assemble({
    conversation: conversationOf(messages), budget, tokenizer: { charsPerToken: 1 },
    systemPrompt: 'Answer briefly.', conversationStart,
  });
}

test('OpenAI messages in: text parts, tool calls kept with their results; errors name the message', () => {
  const turns = conversationOf(OPENAI);
  assert.deepEqual(turns.map((t) => t.role), ['system', 'user', 'assistant', 'tool', 'tool', 'assistant', 'user']);
  assert.equal(turns[1].content, 'Weather in Porto\nand Lisbon?');
  assert.equal(turns[2].content, '[tool call] weather({"city": "Porto"})\n[tool call] weather({"city": "Lisbon"})');
  assert.deepEqual(turns.slice(2, 5).map((t) => t.toolCallId), ['c1', 'c1', 'c1']);
  assert.throws(() => conversationOf([{ role: 'user', content: [{ type: 'video', url: 'x' }] }]),
    /`messages\[0\]\.content\[0\]`: a 'video' part is not carried/);
  assert.throws(() => conversationOf([{ role: 'robot', content: 'hi' }]), /`messages\[0\]\.role`: 'robot'/);
  assert.throws(() => conversationOf([{ role: 'tool', content: 'orphan' }]), /`messages\[0\]\.tool_call_id`/);
});

test('out as OpenAI and Anthropic messages, the originals unchanged', async () => {
  const pack = await packOf(OPENAI, 10_000);
  assert.deepEqual(keptMessages(pack, OPENAI), OPENAI);
  const openai = toOpenAI(pack, OPENAI);
  assert.deepEqual(openai[0], { role: 'system', content: 'Answer briefly.' });
  assert.deepEqual(openai.slice(1), OPENAI);
  // Without the originals, tool calls cannot come back as tool_calls.
  assert.throws(() => toOpenAI(pack), /give the messages it was made from/);
  assert.throws(() => toAnthropic(pack), /give the messages it was made from/);
  const anthropic = toAnthropic(pack, OPENAI);
  assert.equal(anthropic.system, 'Answer briefly.\n\nYou are terse.');
  assert.deepEqual(anthropic.messages.map((m) => m.role), ['user', 'assistant', 'user', 'assistant', 'user']);
  assert.deepEqual(anthropic.messages[1].content.map((b) => [b.type, b.id, b.input]),
    [['tool_use', 'c1', { city: 'Porto' }], ['tool_use', 'c2', { city: 'Lisbon' }]]);
  assert.deepEqual(anthropic.messages[2].content.map((b) => [b.type, b.tool_use_id]), [['tool_result', 'c1'], ['tool_result', 'c2']]);
  // LangChain messages made from the OpenAI ones, tool calls included.
  const lc = await toLangChain(pack, OPENAI);
  assert.deepEqual(lc.map((m) => m._getType()), ['system', 'system', 'human', 'ai', 'tool', 'tool', 'ai', 'human']);
  assert.deepEqual(lc[3].tool_calls.map((c) => [c.id, c.args]), [['c1', { city: 'Porto' }], ['c2', { city: 'Lisbon' }]]);
});

test('LangChain messages in and out unchanged; Anthropic refuses an assistant first', async () => {
  const messages = [
    new HumanMessage('Weather in Porto?'),
    new AIMessage({ content: '', tool_calls: [{ name: 'weather', args: { city: 'Porto' }, id: 'c1' }] }),
    new ToolMessage({ content: '18 C', tool_call_id: 'c1' }),
    new AIMessage('18 C and sunny.'),
    new HumanMessage('Thanks'),
  ];
  const turns = conversationOf(messages);
  assert.equal(turns[1].content, '[tool call] weather({"city":"Porto"})');
  const pack = await packOf(messages, 10_000);
  assert.ok(keptMessages(pack, messages).every((m, i) => m === messages[i]));
  const lc = await toLangChain(pack, messages);
  assert.equal(lc[0]._getType(), 'system');
  assert.ok(lc.slice(1).every((m, i) => m === messages[i]));
  const openai = toOpenAI(pack, messages);
  assert.deepEqual(openai[2].tool_calls, [{ id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Porto"}' } }]);
  assert.equal(openai[3].tool_call_id, 'c1');

  const plainChat = [{ role: 'user', content: 'x'.repeat(200) }, { role: 'assistant', content: 'ok' },
    { role: 'user', content: 'and?' }, { role: 'assistant', content: 'done' }];
  const anyTurn = await packOf(plainChat, 62, 'any-turn');
  // Without tool calls, the pack's own turns in OpenAI's shape.
  assert.deepEqual(toOpenAI(anyTurn).slice(1), [{ role: 'assistant', content: 'ok' },
    { role: 'user', content: 'and?' }, { role: 'assistant', content: 'done' }]);
  assert.throws(() => toAnthropic(anyTurn, plainChat), /first message to be the user's/);
  assert.equal(toAnthropic(await packOf(plainChat, 62), plainChat).messages[0].role, 'user');
});

test('trimMessages for a model counts in its tokenizer with its overhead', async () => {
  const messages = Array.from({ length: 40 }, (_, i) => (i % 2 === 0
    ? new HumanMessage(`question ${i} about the weather in Porto`)
    : new AIMessage(`answer ${i}: sunny, 21 degrees`)));
  for (const maxTokens of [40, 97, 250]) {
    const byModel = await trimMessages(messages, { maxTokens, model: 'openai/gpt-4o-2024-08-06' });
    const byHand = await trimMessages(messages, { maxTokens, tokenCounter: 'o200k-base', entryOverhead: 3 });
    assert.deepEqual(byModel, byHand);
    assert.ok(byModel.length < (await trimMessages(messages, { maxTokens })).length);
  }
  assert.deepEqual(await trimMessages(messages, { maxTokens: 97, model: 'gpt-4o', entryOverhead: 0 }),
    await trimMessages(messages, { maxTokens: 97 }));
  await assert.rejects(trimMessages(messages, { maxTokens: 97, model: 'gpt-4-o' }),
    (e) => e.field === 'options.model' && /nearest: gpt-4o/.test(e.message));
  await assert.rejects(trimMessages(messages, { maxTokens: 97, model: 4 }), /`options\.model`: expected a model's name, got 4/);
});

/** A chat of `n` messages in which about one turn in seven is an AI
 * message calling one or two tools, each answered by a ToolMessage. */
function toolHistory(r, n) {
  const words = (k) => Array.from({ length: k }, () => WORDS[below(r, WORDS.length)]).join(' ');
  const out = [];
  while (out.length < n) {
    if (r() < 0.15 && out.length < n - 2) {
      const calls = Array.from({ length: 1 + below(r, 2) }, (_, k) => ({
        id: `call${out.length}-${k}`, name: ['lookup', 'refund'][below(r, 2)], args: { order: 1 + below(r, 9999) },
      }));
      out.push(new AIMessage({ content: words(below(r, 7)), tool_calls: calls }));
      for (const c of calls) out.push(new ToolMessage({ content: words(1 + below(r, 30)), tool_call_id: c.id }));
    } else {
      const content = words(below(r, 41));
      out.push(out.length % 2 === 0 ? new HumanMessage(content) : new AIMessage(content));
    }
  }
  return out.slice(0, n);
}

/** What a provider counts for a list sent: each message's content and tool
 * calls (name and arguments) at four code points a token, rounded up,
 * plus 3 per message and 3 for the reply's priming (OpenAI's framing). */
function providerCount(messages) {
  const sent = (m) => m.content + (m.tool_calls ?? []).map((c) => c.name + JSON.stringify(c.args)).join('');
  return 3 + messages.reduce((sum, m) => sum + Math.ceil([...sent(m)].length / 4) + 3, 0);
}

/** Whether `kept` holds a tool call without all its results, or a result
 * without its call. */
function splitsACall(kept) {
  const calls = new Set(kept.flatMap((m) => (m.tool_calls ?? []).map((c) => c.id)));
  const answered = new Set(kept.filter((m) => m._getType() === 'tool').map((m) => m.tool_call_id));
  return [...calls].some((id) => !answered.has(id)) || [...answered].some((id) => !calls.has(id));
}

test('trimMessages keeps at least what LangChain.js keeps at every budget from 20 to 3000', async () => {
  // On a 200-message history with tool calls, both given the provider's
  // count of what is sent: ctxpack keeps at least as many messages, except
  // where LangChain.js's result splits a tool call from its results (which
  // ctxpack never does), and never more tokens than the budget by the
  // test's own count.
  const messages = toolHistory(rng(44), 200);
  const builder = await Builder.create();
  const fewer = {};
  for (const startOn of [undefined, 'human']) {
    let split = 0;
    for (let maxTokens = 20; maxTokens <= 3000; maxTokens += 1) {
      const ours = await trimMessages(messages, { maxTokens, tokenCounter: providerCount, startOn, builder });
      const theirs = await langchainTrim(messages, { maxTokens, tokenCounter: providerCount, strategy: 'last', startOn });
      assert.ok(ours.length === 0 || providerCount(ours) <= maxTokens, `${startOn} ${maxTokens}`);
      assert.ok(!splitsACall(ours), `${startOn} ${maxTokens}`);
      if (ours.length < theirs.length) {
        assert.ok(splitsACall(theirs), `${startOn} ${maxTokens}: ${ours.length} < ${theirs.length}`);
        split += 1;
      }
    }
    fewer[String(startOn)] = split;
  }
  assert.ok(fewer.undefined > 0 && fewer.human === 0, JSON.stringify(fewer));
});

test("strategy 'first' keeps what LangChain.js keeps", async () => {
  // With the same counter (a function of messages, or ctxpack's tokenizer
  // against a counter of what is sent) and endOn; with tool calls, a call
  // is never kept apart from its results.
  const r = rng(31);
  const builder = await Builder.create();
  const spell = (ms) => ms.map((m) => [m._getType(), m.content]);
  for (let c = 0; c < 150; c += 1) {
    const messages = chat(r, 1 + below(r, 14));
    if (r() < 0.3) messages.unshift(new SystemMessage('Be brief. '.repeat(1 + below(r, 3))));
    const maxTokens = below(r, 151);
    const endOn = [undefined, 'human', 'ai'][below(r, 3)];
    const cpt = [1, 3, 4][below(r, 3)];
    for (const [ours, theirs] of [[providerCount, providerCount], [{ charsPerToken: cpt }, countedAsCtxpack(cpt)]]) {
      const want = await langchainTrim(messages, { maxTokens, tokenCounter: theirs, strategy: 'first', endOn });
      const got = await trimMessages(messages, { maxTokens, tokenCounter: ours, strategy: 'first', endOn, builder });
      assert.deepEqual(spell(got), spell(want), `${maxTokens} ${endOn}`);
    }
  }
  const messages = toolHistory(rng(45), 60);
  for (let maxTokens = 0; maxTokens < 800; maxTokens += 7) {
    const ours = await trimMessages(messages, { maxTokens, tokenCounter: providerCount, strategy: 'first', builder });
    assert.ok(ours.every((m, i) => m === messages[i]) && !splitsACall(ours), `${maxTokens}`);
    assert.ok(ours.length === 0 || providerCount(ours) <= maxTokens, `${maxTokens}`);
    const theirs = await langchainTrim(messages, { maxTokens, tokenCounter: providerCount, strategy: 'first' });
    assert.ok(ours.length === theirs.length || splitsACall(theirs), `${maxTokens}`);
  }
});

test('trimMessages sends only the newest messages and keeps what the whole history would', async () => {
  // The drop-in converts and sends only a suffix that a cheap estimate puts
  // well over the budget, grown until the turn before what is kept was
  // left out over the budget: the result is the one the whole history
  // gives. Chats of long runs of '=' (many characters a token) make the
  // estimate overshoot, so the suffix has to grow.
  const r = rng(46);
  const builder = await Builder.create();
  for (let c = 0; c < 40; c += 1) {
    const messages = toolHistory(r, 50 + below(r, 350));
    if (c % 2 === 1) {
      for (const m of messages) if (typeof m.content === 'string') m.content = m.content.replace(/\S+/g, '='.repeat(64));
    }
    const maxTokens = 20 + below(r, 1481);
    const startOn = [undefined, 'human'][below(r, 2)];
    const ours = await trimMessages(messages, { maxTokens, startOn, builder });
    const whole = await builder.assemble({
      conversation: conversationOf(messages), budget: maxTokens, tokenizer: 'o200k-base', form: 'messages',
      conversationStart: startOn ? 'user-turn' : 'any-turn', layout: 'context-first',
    });
    const want = keptMessages(whole, messages);
    while (startOn && want.length > 0 && want[0]._getType() !== 'human') want.shift();
    assert.ok(ours.length === want.length && ours.every((m, i) => m === want[i]), `${maxTokens} ${startOn}`);
  }
});

// A conversation with Claude as Anthropic's Messages API holds it: the
// calls as `tool_use` blocks, their results as `tool_result` blocks in a
// user message, a thinking block before a call.
const ANTHROPIC = [
  { role: 'user', content: 'Weather in Porto and Lisbon?' },
  { role: 'assistant', content: [
    { type: 'thinking', thinking: 'Two cities: two calls.', signature: 'sig' },
    { type: 'text', text: 'Checking both.' },
    { type: 'tool_use', id: 'u1', name: 'weather', input: { city: 'Porto' } },
    { type: 'tool_use', id: 'u2', name: 'weather', input: { city: 'Lisbon' } }] },
  { role: 'user', content: [
    { type: 'tool_result', tool_use_id: 'u1', content: '18 C, sun' },
    { type: 'tool_result', tool_use_id: 'u2', content: [{ type: 'text', text: '21 C, cloud' }] }] },
  { role: 'assistant', content: [{ type: 'text', text: 'Porto 18 C, Lisbon 21 C.' }] },
  { role: 'user', content: [{ type: 'text', text: 'Thanks' }] },
];

test('Anthropic blocks go in and come back out unchanged', async () => {
  const { coerceMessageLikeToMessage } = await import('@langchain/core/messages');
  const turns = conversationOf(ANTHROPIC);
  assert.deepEqual(turns.map((t) => t.role), ['user', 'assistant', 'tool', 'assistant', 'user']);
  assert.equal(turns[1].content, 'Two cities: two calls.\nChecking both.\n[tool call] weather({"city":"Porto"})\n[tool call] weather({"city":"Lisbon"})');
  assert.equal(turns[2].content, '18 C, sun\n21 C, cloud');
  // The results answer the call: one unit, kept or dropped together.
  assert.deepEqual(turns.map((t) => t.toolCallId), [null, 'u1', 'u1', null, null]);
  for (const messages of [ANTHROPIC, ANTHROPIC.map(coerceMessageLikeToMessage)]) {
    const pack = await packOf(messages, 10_000);
    assert.ok(keptMessages(pack, messages).every((m, i) => m === messages[i]));
    const anthropic = toAnthropic(pack, messages);
    assert.equal(anthropic.system, 'Answer briefly.');
    assert.deepEqual(anthropic.messages, ANTHROPIC.map((m) => ({
      role: m.role, content: typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content })));
    // OpenAI's shape: the calls as tool_calls, each result a tool message,
    // the thinking block left out (OpenAI takes none).
    const openai = toOpenAI(pack, messages).slice(1);
    assert.deepEqual(openai.map((m) => m.role), ['user', 'assistant', 'tool', 'tool', 'assistant', 'user']);
    assert.equal(openai[1].content, 'Checking both.');
    assert.deepEqual(openai[1].tool_calls.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]),
      [['u1', 'weather', { city: 'Porto' }], ['u2', 'weather', { city: 'Lisbon' }]]);
    assert.deepEqual(openai.slice(2, 4), [{ role: 'tool', tool_call_id: 'u1', content: '18 C, sun' },
      { role: 'tool', tool_call_id: 'u2', content: '21 C, cloud' }]);
    // Too little room for the call with its results: neither is kept,
    // and the kept messages begin on the user's turn.
    const small = await packOf(messages, 40);
    assert.deepEqual(keptMessages(small, messages), messages.slice(4));
    assert.deepEqual(toAnthropic(small, messages).messages, [ANTHROPIC[4]]);
  }
});

test("a trim of Anthropic blocks keeps what LangChain.js's keeps", async () => {
  const { coerceMessageLikeToMessage } = await import('@langchain/core/messages');
  // Three rounds, each call under its own id.
  const rounds = [0, 1, 2].flatMap((k) => JSON.parse(JSON.stringify(ANTHROPIC)
    .replaceAll('"u1"', `"r${k}a"`).replaceAll('"u2"', `"r${k}b"`)));
  const messages = rounds.map(coerceMessageLikeToMessage);
  // LangChain's counter, of a message's text as sent.
  const count = (ms) => ms.reduce((sum, m) => sum + Math.ceil([...conversationOf([m])[0].content].length / 4), 0);
  let compared = 0;
  let parted = 0;
  for (let maxTokens = 0; maxTokens < 120; maxTokens++) {
    const theirs = await langchainTrim(messages, { maxTokens, tokenCounter: count, strategy: 'last', startOn: 'human' });
    const ours = await trimMessages(messages, { maxTokens, tokenCounter: count, startOn: 'human' });
    // LangChain begins on a human message that only holds tool results
    // (parting them from their call); ctxpack never does.
    if (theirs.length > 0 && Array.isArray(theirs[0].content) && theirs[0].content.some((b) => b.type === 'tool_result')) {
      assert.ok(count(ours) <= maxTokens);
      assert.deepEqual(ours.map((m) => m.content), theirs.slice(theirs.length - ours.length).map((m) => m.content));
      assert.ok(ours.length === 0 || conversationOf(ours.slice(0, 1))[0].role === 'user');
      parted += 1;
      continue;
    }
    // LangChain.js gives copies: compared by type and content.
    const shown = (ms) => ms.map((m) => [m._getType(), JSON.stringify(m.content)]);
    assert.deepEqual(shown(ours), shown(theirs), `maxTokens ${maxTokens}`);
    compared += 1;
  }
  assert.ok(compared > 30 && parted > 30, `${compared} compared, ${parted} parted`);
});

test('a part that is not carried is refused, naming it', () => {
  assert.throws(() => conversationOf([{ role: 'user', content: [{ type: 'document', source: {} }] }]),
    /`messages\[0\]\.content\[0\]`: a 'document' part is not carried/);
  assert.throws(() => conversationOf([{ role: 'user', content: 'hi' }, { role: 'user', content: [{ type: 'tool_result', content: 'x' }] }]),
    /`messages\[1\]\.content\[0\]\.tool_use_id`/);
  assert.throws(() => conversationOf([{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'f', input: {} }] }]),
    /`messages\[0\]\.content`: only an assistant message makes tool calls/);
});

test("allowPartial cuts what LangChain.js's cuts", async () => {
  const r = rng(11);
  const builder = await Builder.create();
  // Characters of the text sent (LangChain.js gives copies: compared by
  // type and content).
  const count = (ms) => ms.reduce((sum, m) => sum + [...conversationOf([m])[0].content].length, 0);
  const shown = (ms) => ms.map((m) => [m._getType(), m.content]);
  let cut = 0;
  for (let c = 0; c < 300; c += 1) {
    const messages = Array.from({ length: 1 + below(r, 10) }, (_, i) => {
      const text = Array.from({ length: 1 + below(r, 4) }, () => Array.from({ length: below(r, 7) },
        () => WORDS[below(r, WORDS.length)]).join(' ')).join('\n');
      return i % 2 === 0 ? new HumanMessage(text) : new AIMessage(text);
    });
    if (r() < 0.5) messages.unshift(new SystemMessage('Be brief.\nBe kind.'));
    const strategy = r() < 0.5 ? 'last' : 'first';
    const options = { maxTokens: below(r, 151), tokenCounter: count, strategy, allowPartial: true };
    if (strategy === 'last') {
      options.startOn = r() < 0.5 ? null : 'human';
      options.includeSystem = messages[0]._getType() === 'system' && r() < 0.5;
    } else {
      options.endOn = [null, 'human', 'ai'][below(r, 3)] ?? undefined;
    }
    if (r() < 0.3) options.textSplitter = (t) => t.split(/(?<= )/);
    if (options.includeSystem && count(messages.slice(0, 1)) > options.maxTokens) continue;
    // Copies: LangChain.js's strategy 'first' writes its tries into the
    // message it cuts.
    const theirs = await langchainTrim(messages.map((m) => new m.constructor({ content: m.content })), options);
    const ours = await trimMessages(messages, { ...options, builder });
    // LangChain.js answers [undefined] when only the system message and
    // part of the next fit with startOn: no answer to compare with.
    if (theirs.includes(undefined)) continue;
    assert.deepEqual(shown(ours), shown(theirs), `case ${c}: ${JSON.stringify({ ...options, tokenCounter: undefined })}`);
    assert.ok(count(ours) <= options.maxTokens);
    if (ours.some((m) => !messages.includes(m))) cut += 1;
  }
  assert.ok(cut > 50, `${cut} cut`);
});

test('allowPartial cuts whole blocks first, and never a message of a tool call', async () => {
  const blocks = [{ type: 'text', text: 'FIRST block.' }, { type: 'text', text: 'SECOND block.' }];
  const messages = [new HumanMessage('hi'), new AIMessage({ content: blocks }), new HumanMessage('and?')];
  const count = (ms) => ms.reduce((sum, m) => sum + [...conversationOf([m])[0].content].length, 0);
  // Room for 'and?' and one block: the newest block, as a message of its class.
  const last = await trimMessages(messages, { maxTokens: 4 + 13, tokenCounter: count, allowPartial: true });
  assert.deepEqual(last.map((m) => [m._getType(), m.content]), [['ai', [blocks[1]]], ['human', 'and?']]);
  assert.ok(last[0] instanceof AIMessage && last[0] !== messages[1] && messages[1].content.length === 2);
  const first = await trimMessages(messages, { maxTokens: 2 + 12, tokenCounter: count, allowPartial: true, strategy: 'first' });
  assert.deepEqual(first.map((m) => m.content), ['hi', [blocks[0]]]);
  // A tool result is not cut: its call would lose part of its answer.
  const tools = [
    new HumanMessage('first line\nsecond line\nthird line'),
    new AIMessage({ content: '', tool_calls: [{ name: 'f', args: { x: 1 }, id: 'c1' }] }),
    new ToolMessage({ content: 'result one\nresult two', tool_call_id: 'c1' }),
    new AIMessage('done'),
  ];
  const out = await trimMessages(tools, { maxTokens: 9, tokenCounter: { charsPerToken: 4 }, allowPartial: true, entryOverhead: 0 });
  assert.deepEqual(out, tools.slice(3));
  // With a tokenizer, the end of the first message beside the rest.
  const tokens = (text) => Math.ceil([...text].length / 4);
  const rest = conversationOf(tools.slice(1)).reduce((sum, t) => sum + tokens(t.content), 0);
  for (const [budget, end] of [[rest + tokens('third line'), 'third line'],
    [rest + tokens('second line\nthird line'), 'second line\nthird line'],
    [rest + tokens('second line\nthird line') - 1, 'third line']]) {
    const got = await trimMessages(tools, { maxTokens: budget, tokenCounter: { charsPerToken: 4 }, allowPartial: true, entryOverhead: 0 });
    assert.deepEqual(got.slice(1), tools.slice(1));
    assert.equal(got[0].content, end);
  }
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
  assert.deepEqual(await trimmer(messages), direct);
  assert.deepEqual(await trimmer.batch([messages, messages.slice(0, 3)]),
    [direct, await trimMessages(messages.slice(0, 3), options)]);
  // In a chain: LangChain.js's pipe takes it as a RunnableLambda.
  const chain = RunnableLambda.from((input) => input.history).pipe(trimmer);
  assert.deepEqual(await chain.invoke({ history: messages }), direct);
  // As LangChain.js's own test: the trimmer gives what the call gives.
  const langchainOwn = (await import('@langchain/core/messages')).trimMessages({ maxTokens: 20, tokenCounter: countedAsCtxpack(3), startOn: 'human' });
  assert.deepEqual((await langchainOwn.invoke(messages)).map((m) => m.content), direct.map((m) => m.content));
  // Its options are checked when it is made.
  assert.throws(() => trimMessages({ maxTokens: 20, include_system: true }), /`options\.include_system`.*did you mean `includeSystem`/);
});

test('a leading system message the pack left out is an error saying why', async () => {
  const messages = [{ role: 'system', content: 'You are terse. '.repeat(20) }, { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'hello' }, { role: 'user', content: 'and?' }];
  const pack = await packOf(messages, 60);
  assert.deepEqual(keptMessages(pack, messages), messages.slice(1)); // the pack's choice, as it is
  const why = /^Error: `messages\[0\]`, the system message, was left out of the pack: Dropped: it needed more tokens than remained\. Give it as the request's systemPrompt/;
  assert.throws(() => toOpenAI(pack, messages), why);
  assert.throws(() => toAnthropic(pack, messages), why);
  const { coerceMessageLikeToMessage } = await import('@langchain/core/messages');
  const lc = messages.map(coerceMessageLikeToMessage);
  await assert.rejects(toLangChain(await packOf(lc, 60), lc), /the system message, was left out/);
  // Kept in the pack: no error.
  assert.deepEqual(toOpenAI(await packOf(messages, 10_000), messages)[1], messages[0]);
});

/** A PNG's signature and header, base64: all that is read of it. */
function png(width, height) {
  const bytes = new Uint8Array(29);
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
  new DataView(bytes.buffer).setUint32(16, width);
  new DataView(bytes.buffer).setUint32(20, height);
  bytes.set([8, 2, 0, 0, 0], 24);
  return Buffer.from(bytes).toString('base64');
}

test('what an image costs is what its provider bills', async () => {
  const { pricer, sizeOf } = await import('../src/images.js');
  const refuse = (field, message) => new TypeError(`\`${field}\`: ${message}`);
  const openai = (w, h, detail = 'high', model = 'gpt-4o') => pricer(model, undefined, refuse)(
    { type: 'image_url', image_url: { url: `data:image/png;base64,${png(w, h)}`, detail } }, 'part');
  // OpenAI's published examples: 1024×1024 at high detail is 765 tokens,
  // 2048×4096 is 1,105, and low detail is 85 whatever the size.
  assert.equal(openai(1024, 1024), 765);
  assert.equal(openai(2048, 4096), 1105);
  assert.equal(openai(4096, 8192, 'low'), 85);
  assert.deepEqual([openai(512, 512), openai(513, 512)], [85 + 170, 85 + 2 * 170]);
  assert.equal(openai(1024, 1024, 'high', 'gpt-4o-mini'), 2833 + 4 * 5667);
  assert.deepEqual([openai(1024, 1024, 'high', 'o3'), openai(1024, 1024, 'high', 'gpt-5')], [75 + 4 * 150, 70 + 4 * 140]);
  // By 32-pixel patches: 1024×1024 is 1,024 patches; 1800×2400 is scaled
  // to 1056×1408, 33 × 44 = 1,452 (OpenAI's examples), times the model's
  // multiplier, rounded up; a 128×64 image is 8 patches.
  assert.equal(openai(1024, 1024, 'high', 'gpt-4.1-mini'), Math.ceil(1024 * 1.62));
  assert.equal(openai(1800, 2400, 'high', 'gpt-4.1-nano'), Math.ceil(1452 * 2.46));
  assert.deepEqual([openai(128, 64, 'high', 'o4-mini-2025-04-16'), openai(128, 64, 'high', 'gpt-5-mini')], [14, 13]);
  assert.ok(openai(20000, 100, 'high', 'gpt-5-nano') <= Math.ceil(1536 * 2.46));
  // A model whose rule is not known, or that takes no images, is refused.
  for (const model of ['gpt-5.4-mini', 'llama-3']) {
    assert.throws(() => openai(64, 64, 'high', model), /imageTokens/);
  }
  assert.throws(() => openai(64, 64, 'high', 'o3-mini'), /^TypeError: `part`: 'o3-mini' takes no images$/);
  // Anthropic's: width × height / 750, the long side within 1,568.
  const claude = pricer('claude-sonnet-4-5', undefined, refuse);
  const anthropic = (w, h) => claude({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: png(w, h) } }, 'part');
  assert.deepEqual([anthropic(200, 200), anthropic(1000, 1000), anthropic(1092, 1092), anthropic(3000, 3000)], [54, 1334, 1590, 1600]);
  // By URL, the size is not known: the most an image costs under the rule.
  assert.equal(pricer(undefined, undefined, refuse)({ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }, 'p'), 85 + 8 * 170);
  assert.equal(claude({ type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } }, 'p'), 1600);
  // The sizes of the other formats, from their headers.
  assert.deepEqual(sizeOf(Uint8Array.from([...Buffer.from('GIF89a'), 0x80, 2, 0xe0, 1])), [640, 480]);
  const jpeg = Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, ...Buffer.from('JFIF\0'), ...Array(9).fill(0),
    0xff, 0xc0, 0, 17, 8, 0x02, 0x58, 0x03, 0x20, ...Array(12).fill(0)]);
  assert.deepEqual(sizeOf(jpeg), [800, 600]);
  const webp = Uint8Array.from([...Buffer.from('RIFF'), 0, 0, 0, 0, ...Buffer.from('WEBPVP8X'), ...Array(8).fill(0),
    0x7f, 0x07, 0, 0x37, 0x04, 0]);
  assert.deepEqual(sizeOf(webp), [1920, 1080]);
});

test('an image is charged with its message and comes back out', async () => {
  const image = { type: 'image_url', image_url: { url: `data:image/png;base64,${png(1024, 1024)}` } };
  const messages = [{ role: 'user', content: 'What is in my order?' }, { role: 'assistant', content: 'Two boxes.' },
    { role: 'user', content: [{ type: 'text', text: 'And in this photo?' }, image] }];
  assert.deepEqual(conversationOf(messages, { model: 'gpt-4o' }).map((t) => t.attachedTokens), [undefined, undefined, 765]);
  const text = (m) => [...conversationOf([m])[0].content].length;
  // Counted by 1 character a token, no overhead: the photo's 765 tokens
  // leave no room for the older messages, which would fit without it.
  const budget = text(messages[2]) + 765 + text(messages[1]);
  const options = { tokenCounter: { charsPerToken: 1 }, entryOverhead: 0, model: 'gpt-4o' };
  assert.deepEqual(await trimMessages(messages, { ...options, maxTokens: budget }), messages.slice(1));
  assert.deepEqual(await trimMessages(messages, { ...options, maxTokens: budget - 1 }), messages.slice(2));
  // A model whose rule ctxpack does not know: the count is given.
  await assert.rejects(trimMessages(messages, { ...options, model: 'qwen3-8b', maxTokens: 10_000 }),
    /^TypeError: `messages\[2\]\.content\[1\]`: what an image costs 'qwen3-8b' is not known.*options\.imageTokens/);
  assert.deepEqual(await trimMessages(messages, { ...options, model: 'qwen3-8b', imageTokens: 256, maxTokens: text(messages[2]) + 256 + 5 }),
    messages.slice(2));
  // Out: the image as given to OpenAI, as a base64 block to Anthropic.
  const pack = await packOf(messages, 10_000);
  assert.deepEqual(toOpenAI(pack, messages).slice(1), messages);
  assert.deepEqual(toAnthropic(pack, messages).messages.at(-1).content.at(-1),
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png(1024, 1024) } });
  // The pack's own messages say what they were charged besides their
  // text; without the messages, whose images it holds no copy of, the
  // outputs refuse rather than send the text alone.
  assert.deepEqual(pack.messages.map((m) => m.attachedTokens ?? null), [null, null, null, 765]);
  for (const out of [toOpenAI, toAnthropic]) {
    assert.throws(() => out(pack), /message 3 was charged 765 tokens .*\(its images\).*messages/);
  }
  await assert.rejects(toLangChain(pack), /message 3 was charged 765 tokens/);
  // Sent as flat text, an image is not charged, and the pack says none.
  const builder = await Builder.create();
  const flat = await builder.assemble({
    conversation: conversationOf(messages), budget: 10_000, tokenizer: { charsPerToken: 1 },
    systemPrompt: 'Answer briefly.', form: 'text',
  });
  assert.ok(flat.messages.every((m) => m.attachedTokens == null));
});

test('the messages form is laid out cache-first and comes out so', async () => {
  const messages = [{ role: 'user', content: 'Trains on weekdays?' }, { role: 'assistant', content: 'Hourly.' },
    { role: 'user', content: 'And on Sunday?' }];
  const builder = await Builder.create({ profile: { rag: { retrieveLimit: 5 } } }, {
    retrieve: () => [{
      id: 'kb-sunday', section: 'relevant-knowledge', trust: 'trusted', score: 0.9,
      provenance: { sourceKind: 'timetable', reference: 'timetable/sunday' }, text: 'On Sundays trains run every two hours.',
    }],
  });
  const pack = (fields) => builder.assemble({
    conversation: conversationOf(messages), budget: 10_000, tokenizer: { charsPerToken: 1 },
    systemPrompt: 'Answer briefly.', currentTask: 'Answer the traveller.', ...fields,
  });
  // Cache-first: the system prompt, the conversation but its newest user
  // turn, then the documents and the current task, the question last.
  const first = await pack({ form: 'messages' });
  const context = '[source: timetable/sunday]\nOn Sundays trains run every two hours.\n\nAnswer the traveller.';
  assert.deepEqual(toOpenAI(first, messages), [{ role: 'system', content: 'Answer briefly.' }, ...messages.slice(0, 2),
    { role: 'system', content: context }, messages[2]]);
  // Anthropic takes one system text: what comes after a turn goes into the
  // user's turn, before the question.
  const anthropic = toAnthropic(first, messages);
  assert.equal(anthropic.system, 'Answer briefly.');
  assert.deepEqual(anthropic.messages.at(-1), { role: 'user', content: [{ type: 'text', text: context }, { type: 'text', text: 'And on Sunday?' }] });
  assert.equal(first.snapshot.stablePrefixTokens, 'Answer briefly.'.length); // one character a token, no overhead
  // The first turn too: the system text is the system prompt alone, the
  // context the question's, so the next turn's system text is the same.
  const alone = await builder.assemble({
    conversation: conversationOf(messages.slice(2)), budget: 10_000, tokenizer: { charsPerToken: 1 },
    systemPrompt: 'Answer briefly.', currentTask: 'Answer the traveller.', form: 'messages',
  });
  assert.deepEqual(toAnthropic(alone, messages.slice(2)), { system: 'Answer briefly.', messages: [anthropic.messages.at(-1)] });
  // Context-first, as asked: the context before the conversation; for
  // Anthropic, L0 the system text, the context the first user turn's.
  const before = await pack({ form: 'messages', layout: 'context-first' });
  assert.deepEqual(toOpenAI(before, messages).map((m) => m.role), ['system', 'system', 'user', 'assistant', 'user']);
  const anthropicBefore = toAnthropic(before, messages);
  assert.equal(anthropicBefore.system, 'Answer briefly.\n\nAnswer the traveller.');
  assert.ok(anthropicBefore.messages[0].content[0].text.startsWith('[source: timetable/sunday]'));
  // Without a form, context-first, as before.
  assert.deepEqual((await pack({})).messages.slice(0, 2).map((m) => m.role), ['system', 'system']);
});

/** The texts (or block types) that carry a cache breakpoint, in order. */
const marked = (body) => [...(Array.isArray(body.system) ? body.system : []), ...body.messages.flatMap((m) => m.content)]
  .filter((b) => 'cache_control' in b).map((b) => (b.text ?? b.type).slice(0, 12));

test('cache breakpoints mark what the next turn repeats', async () => {
  const chat = [{ role: 'user', content: 'Trains on weekdays?' }, { role: 'assistant', content: 'Hourly.' },
    { role: 'user', content: 'And on Sunday?' }];
  const builder = await Builder.create({ profile: { rag: { retrieveLimit: 5 } } }, {
    retrieve: () => [{
      id: 'kb-sunday', section: 'relevant-knowledge', trust: 'trusted', score: 0.9,
      provenance: { sourceKind: 'timetable', reference: 'timetable/sunday' }, text: 'On Sundays trains run every two hours.',
    }],
  });
  const S = 'S'.repeat(1_100);
  const pack = (messages, fields = {}) => builder.assemble({
    conversation: conversationOf(messages), budget: 10_000, tokenizer: { charsPerToken: 1 }, model: 'claude-sonnet-4-5',
    systemPrompt: S, form: 'messages', context: { sessionId: 's1', traceId: 't' }, ...fields,
  });
  const first = await pack(chat);
  // The system prompt, then the conversation before the documents and the
  // question: each reaches Claude Sonnet 4.5's 1,024 tokens.
  assert.deepEqual(first.snapshot.cachePrefixes.map((p) => [p.boundary, p.messages, p.tokens, p.cacheable]),
    [['stable', 1, 1_100, true], ['history', 3, 1_126, true], ['turn', 5, first.snapshot.messageTokens, true]]);
  const body = toAnthropic(first, chat);
  assert.deepEqual(body.system, [{ type: 'text', text: S, cache_control: { type: 'ephemeral' } }]);
  assert.deepEqual(marked(body), ['S'.repeat(12), 'Hourly.']);
  // LangChain messages for Claude carry them too, on copies.
  const originals = chat.map((m) => (m.role === 'user' ? new HumanMessage(m.content) : new AIMessage(m.content)));
  const lc = await toLangChain(first, originals);
  assert.deepEqual(lc[0].content[0].cache_control, { type: 'ephemeral' });
  assert.deepEqual(lc[2].content, [{ type: 'text', text: 'Hourly.', cache_control: { type: 'ephemeral' } }]);
  assert.ok(lc[2] instanceof AIMessage && originals[1].content === 'Hourly.');
  // ChatAnthropic takes system messages only at the top: the context after
  // the history is a user message, merged into the question's turn.
  assert.deepEqual(lc.map((m) => m._getType()), ['system', 'human', 'ai', 'human', 'human']);
  assert.deepEqual(lc[3].content, [{ type: 'text', text: '[source: timetable/sunday]\nOn Sundays trains run every two hours.' }]);
  const gpt = await toLangChain(await pack(chat, { model: 'gpt-4o' }), originals);
  assert.deepEqual(gpt.map((m) => m._getType()), ['system', 'human', 'ai', 'system', 'human']);
  // The next turn begins with the whole history the first marked: a cache
  // serves it, and the key stays the session's.
  const turn = [...chat, { role: 'assistant', content: 'Every two hours.' }, { role: 'user', content: 'Late trains?' }];
  const second = await pack(turn);
  const served = await cachedPrefix(first, second);
  assert.deepEqual([served.boundary, served.tokens], ['history', 1_126]);
  assert.ok(second.cacheKey === first.cacheKey && first.cacheKey.startsWith('ctxpack-'));
  assert.deepEqual(marked(toAnthropic(second, turn)), ['S'.repeat(12), 'Every two ho']);
  assert.deepEqual(await cachedPrefix(second, second), second.snapshot.cachePrefixes.at(-1));
  assert.equal((await cachedPrefix(second, await pack(turn.slice(2)))).boundary, 'stable');
  assert.equal(await cachedPrefix(await pack(chat, { systemPrompt: 'T'.repeat(1_100) }), second), null);
  // Below the model's minimum, or for a model with no provider cache, no
  // breakpoint, and the system text stays a string.
  for (const fields of [{ model: 'claude-opus-4-5' }, { systemPrompt: 'Answer briefly.' }, { model: 'llama-3.1-8b-instruct' }]) {
    const short = toAnthropic(await pack(chat, fields), chat);
    assert.ok(typeof short.system === 'string' && marked(short).length === 0, JSON.stringify(fields));
  }
  // Context-first, the documents come before the conversation.
  assert.deepEqual(marked(toAnthropic(await pack(chat, { layout: 'context-first' }), chat)), ['S'.repeat(12)]);
  // Breakpoints the messages carry count within Anthropic's 4.
  const answer = { role: 'assistant', content: [{ type: 'thinking', thinking: 'Look it up.', signature: 'sig' },
    ...[0, 1, 2].map((i) => ({ type: 'text', text: `Hourly ${i}.`, cache_control: { type: 'ephemeral' } }))] };
  const given = [chat[0], answer, chat[2]];
  assert.deepEqual(marked(toAnthropic(await pack(given), given)), ['Hourly 0.', 'Hourly 1.', 'Hourly 2.']);
});

test('a turn that adds many blocks still reaches the last one\'s cache', async () => {
  const calls = [{ role: 'user', content: 'Check every city.' }];
  for (let i = 0; i < 30; i++) {
    calls.push({ role: 'assistant', content: '', tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'weather', arguments: `{"city": "${i}"}` } }] });
    calls.push({ role: 'tool', tool_call_id: `c${i}`, content: `${i} C` });
  }
  const builder = await Builder.create();
  const pack = await builder.assemble({
    conversation: conversationOf(calls), budget: 100_000, tokenizer: { charsPerToken: 1 }, systemPrompt: 'S'.repeat(1_100), form: 'messages',
  });
  const body = toAnthropic(pack, calls);
  const blocks = [...body.system, ...body.messages.flatMap((m) => m.content)];
  const at = blocks.flatMap((b, k) => ('cache_control' in b ? [k] : []));
  assert.equal(at.length, 4);
  assert.deepEqual([at[0], at.at(-1)], [0, blocks.length - 1]);
  assert.ok(at.slice(2).every((k, i) => k - at[i + 1] <= 20), JSON.stringify(at));
});

test('messages that share a content are each charged their own', async () => {
  const r = rng(13);
  const builder = await Builder.create();
  // An AI message costs 2 more than a human one of the same text.
  const byRole = (ms) => ms.reduce((sum, m) => sum + [...m.content].length + (m._getType() === 'ai' ? 3 : 1), 0);
  let shared = 0;
  for (let c = 0; c < 150; c += 1) {
    const messages = Array.from({ length: 1 + below(r, 9) }, (_, i) => {
      const text = ['ok', 'beta', '', 'ok ok'][below(r, 4)];
      return i % 2 === 0 ? new HumanMessage(text) : new AIMessage(text);
    });
    // A system message may send the same text too, kept with includeSystem.
    const includeSystem = r() < 0.5;
    if (includeSystem) messages.unshift(new SystemMessage(['ok', 'beta'][below(r, 2)]));
    for (let maxTokens = 0; maxTokens < 40; maxTokens += 3) {
      // LangChain.js keeps it over the budget; ctxpack refuses (tested above).
      if (includeSystem && byRole(messages.slice(0, 1)) > maxTokens) continue;
      const theirs = await langchainTrim(messages, { maxTokens, tokenCounter: byRole, strategy: 'last', includeSystem });
      const ours = await trimMessages(messages, { maxTokens, tokenCounter: byRole, builder, includeSystem });
      assert.deepEqual(ours.map((m) => [m._getType(), m.content]), theirs.map((m) => [m._getType(), m.content]), `case ${c}, ${maxTokens}`);
    }
    if (new Set(messages.map((m) => m.content)).size < messages.length) shared += 1;
  }
  assert.ok(shared > 100, `${shared}`);
});

test('mistakes a newcomer made name what they wrote', async () => {
  const messages = [new HumanMessage('a'), new AIMessage('b'), new HumanMessage('c')];
  // A message class for startOn, as LangChain.js takes it.
  assert.deepEqual(await trimMessages(messages, { maxTokens: 100, startOn: HumanMessage }), messages);
  await assert.rejects(trimMessages({ role: 'user', content: 'hi' }, { maxTokens: 100 }), /^TypeError: `messages`: expected a list of messages, got object$/);
  await assert.rejects(trimMessages(messages, { maxTokens: NaN }), /`options\.maxTokens`: .*got NaN$/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, tokenCounter: 5 }), /^TypeError: `options\.tokenCounter`: expected a tokenizer/);
  await assert.rejects(trimMessages(messages, { maxTokens: 10, allowPartial: 'yes' }), /`options\.allowPartial`: expected true or false, got "yes"$/);
  await assert.rejects(trimMessages(messages, { maxTokens: 100, model: 'claude-sonnet-4-5' }), /`options\.tokenCounter`: 'claude-sonnet-4-5' is counted by its provider/);
  assert.throws(() => conversationOf([{ role: 'assistant', content: '', tool_calls: [{ function: { name: 'f' } }] }]),
    /^TypeError: `messages\[0\]\.tool_calls\[0\]\.id`: a tool call needs its id/);
  const pack = await packOf(messages, 100);
  assert.throws(() => toOpenAI(pack, messages.slice(1)), /`messages`: the pack's conversation was made from 3 messages, got 2/);
  const tools = [{ role: 'user', content: 'hi' }, { role: 'assistant', content: '', tool_calls: [{ id: 'c', function: { name: 'f', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'c', content: 'ok' }];
  const toolPack = await packOf(tools, 100);
  assert.throws(() => toAnthropic(toolPack), /toAnthropic\(pack, messages\)/);
  // The arguments swapped; a tool call without its id, as LangChain.js holds it.
  assert.throws(() => toOpenAI(messages, pack), /^TypeError: `pack`: expected the pack builder\.assemble gave, got an array/);
  assert.throws(() => conversationOf([new HumanMessage('hi'), new AIMessage({ content: '', tool_calls: [{ name: 'f', args: {} }] })]),
    /^TypeError: `messages\[1\]\.tool_calls\[0\]\.id`/);
  // Nothing kept: Anthropic's API takes no empty conversation.
  const long = [{ role: 'user', content: 'x'.repeat(500) }];
  const nothingKept = await packOf(long, 20);
  assert.throws(() => toAnthropic(nothingKept, long), /at least one message/);
  // A prompt's value piped into the trimmer.
  const { ChatPromptTemplate, MessagesPlaceholder } = await import('@langchain/core/prompts');
  const prompt = ChatPromptTemplate.fromMessages([new MessagesPlaceholder('history')]);
  const chain = prompt.pipe(trimMessages({ maxTokens: 12, tokenCounter: (ms) => ms.reduce((n, m) => n + m.content.length, 0) }));
  assert.deepEqual((await chain.invoke({ history: messages })).map((m) => m.content), ['a', 'b', 'c']);
  // LangChain.js's v1 image block: its data and mimeType.
  const image = { type: 'image', data: png(512, 512), mimeType: 'image/png' };
  assert.equal(conversationOf([{ role: 'user', content: [image] }])[0].attachedTokens, 255);
});

/** A user's question, then a tool call and its 400-character result per
 * step, and the assistant's word after each. */
function agentChat(steps) {
  const out = [{ role: 'user', content: 'Find the cheapest flight to Porto.' }];
  for (let i = 0; i < steps; i += 1) {
    out.push({ role: 'assistant', content: '', tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'search', arguments: `{"day": ${i}}` } }] });
    out.push({ role: 'tool', tool_call_id: `c${i}`, content: `fares for day ${i}: ${'9'.repeat(380)}` });
    out.push({ role: 'assistant', content: `Day ${i} checked.` });
    out.push({ role: 'user', content: `Go on with day ${i + 1}.` });
  }
  return out;
}

test('a compacted conversation goes out as the pack sends it', async () => {
  // At 4 characters a token, a 1,000-token budget compacts past 1,600
  // characters: the oldest tool results cleared (the newest 3 kept), then
  // the oldest turns summarised. Each turn passes back the pack's
  // compaction; every output sends what the pack counted.
  const asked = [];
  const builder = await Builder.create({ plan: { compactShare: 0.4, compactTokens: 60, clearAtLeast: 50 } }, {
    summarize: (requests) => requests.map((r) => { asked.push(r.text); return r.text.slice(0, r.targetTokens * 2); }),
  });
  let compaction;
  const seen = new Set();
  for (let steps = 1; steps < 16; steps += 1) {
    const chat = agentChat(steps);
    const pack = await builder.assemble({
      conversation: conversationOf(chat), budget: 1_000, tokenizer: { charsPerToken: 4 }, systemPrompt: 'You book flights.',
      form: 'messages', compaction, context: { sessionId: 's1', traceId: 't' },
    });
    const c = pack.compaction;
    assert.ok(c.turns >= (compaction?.turns ?? 0));
    seen.add(`${c.turns > 0}/${c.cleared > c.turns}`);
    compaction = c;
    const openai = toOpenAI(pack, chat);
    // Every message as the pack sends it (a call as OpenAI's tool call),
    // within its budget.
    assert.deepEqual(openai.filter((m) => !m.tool_calls).map((m) => m.content),
      pack.messages.filter((m) => !m.content.startsWith('[tool call]')).map((m) => m.content));
    assert.ok(pack.messages.reduce((n, m) => n + Math.ceil(m.content.length / 4), 0) <= 1_000);
    const results = openai.filter((m) => m.role === 'tool');
    assert.ok(results.slice(-3).every((m) => m.content.startsWith('fares')));
    const calls = new Set(openai.flatMap((m) => (m.tool_calls ?? []).map((t) => t.id)));
    assert.ok(results.every((m) => calls.has(m.tool_call_id)));
    assert.ok(chat.filter((m) => m.role === 'tool').every((m) => m.content.startsWith('fares')), 'the caller\'s messages are not changed');
    const anthropic = toAnthropic(pack, chat);
    const blocks = anthropic.messages.flatMap((m) => m.content).filter((b) => b.type === 'tool_result');
    assert.deepEqual(blocks.map((b) => b.content), results.map((m) => m.content));
    const lc = await toLangChain(pack, chat.map((m) => (m.role === 'user' ? new HumanMessage(m.content)
      : m.role === 'tool' ? new ToolMessage({ content: m.content, tool_call_id: m.tool_call_id })
        : new AIMessage({ content: m.content, tool_calls: (m.tool_calls ?? []).map((t) => ({ id: t.id, name: t.function.name, args: JSON.parse(t.function.arguments) })) }))));
    assert.deepEqual(lc.filter((m) => m instanceof ToolMessage).map((m) => m.content), results.map((m) => m.content));
    if (c.turns > 0) {
      // The summary, after the system prompt; the turns it stands for are not sent.
      assert.deepEqual(openai[1], { role: 'system', content: pack.messages[1].content });
      assert.ok(openai[1].content.startsWith('Summary of the earlier conversation:\n'));
      assert.equal(anthropic.system, 'You book flights.');
      assert.equal(anthropic.messages[0].content[0].text, openai[1].content);
      assert.ok(openai.length < chat.length);
    }
    if (c.cleared > c.turns) assert.ok(results.some((m) => m.content === '[tool result cleared]'));
  }
  // It cleared before it summarised, and summarised once the results were
  // not enough; the summariser saw the summary before its own.
  assert.ok(seen.has('false/true') && [...seen].some((s) => s.startsWith('true')), [...seen].join());
  assert.ok(asked.some((t) => t.startsWith('[summary] ')));
  // A compaction that does not fit the conversation is refused, naming it.
  await assert.rejects(builder.assemble({
    conversation: conversationOf(agentChat(1)), budget: 1_000, tokenizer: { charsPerToken: 4 },
    compaction: { summary: 's', turns: 2, cleared: 0, hash: '' },
  }), /compaction\.turns/);
  // One passed back with another conversation is refused: its hash is of the turns it was made from.
  await assert.rejects(builder.assemble({
    conversation: conversationOf(agentChat(20).slice(1)), budget: 1_000, tokenizer: { charsPerToken: 4 }, compaction,
  }), /compaction\.hash/);
});
