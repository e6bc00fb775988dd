// LangChain.js's messages in and out of ctxpack.
//
// The chat itself — reading a provider's messages, charging them as sent,
// what is kept, cache hints, LangChain's trim — is the core's, the same in
// every host (a request's `chat`, `Builder#trim`). This module only maps
// LangChain.js's messages to a provider's shape (OpenAI's) and back:
// - `chat(messages)`: messages — OpenAI-style objects as they are,
//   LangChain.js messages as OpenAI's — as a request's `chat`;
// - `toLangChain(pack, messages)`: a pack's request to send as LangChain
//   messages, yours as you gave them (the same objects);
// - `trim(messages, options, builder)`: LangChain.js's `trimMessages`, by
//   the core, its counter and text splitter lent as the host's.
// Nothing here imports LangChain until its messages are asked for.

const LANGCHAIN_MESSAGES = '@langchain/core/messages';

/** A LangChain message's type (`human`, `ai`, …), or undefined. */
function typeOf(m) {
  if (m == null || typeof m !== 'object') return undefined;
  if (typeof m._getType === 'function') return m._getType();
  if (typeof m.getType === 'function') return m.getType();
  return undefined;
}

const OPENAI_ROLES = { human: 'user', ai: 'assistant', system: 'system', developer: 'system', tool: 'tool' };

function refuse(field, message) {
  const e = new TypeError(`\`${field}\`: ${message}`);
  e.field = field;
  return e;
}

/** LangChain.js's standard image block as OpenAI's part; other blocks as they are. */
function partOf(b) {
  if (b?.type !== 'image' || (b.url === undefined && b.data === undefined)) return b;
  const url = b.url ?? `data:${b.mimeType ?? b.mime_type ?? 'image/png'};base64,${b.data}`;
  return { type: 'image_url', image_url: { url } };
}

/** A LangChain.js message as OpenAI's Chat Completions message. */
function openAIOf(m, at) {
  const type = typeOf(m);
  const role = OPENAI_ROLES[type];
  if (role === undefined) throw refuse(at, `a '${type}' message has no OpenAI role (human, ai, system, tool)`);
  const content = Array.isArray(m.content) ? m.content.map(partOf) : m.content;
  const out = { role, content };
  if (typeof m.name === 'string') out.name = m.name;
  if (type === 'tool') out.tool_call_id = m.tool_call_id;
  const calls = type === 'ai' ? m.tool_calls ?? [] : [];
  if (calls.length > 0) {
    out.tool_calls = calls.map((c) => ({
      id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args ?? {}) },
    }));
  }
  return out;
}

/** `messages` as OpenAI's: plain objects as they are, LangChain's converted. */
function openAI(messages) {
  return Array.from(messages, (m, i) => {
    if (typeOf(m) !== undefined) return openAIOf(m, `messages[${i}]`);
    if (m !== null && typeof m === 'object' && !Array.isArray(m)) return m;
    throw refuse(`messages[${i}]`, `expected an OpenAI-style message or a LangChain message, got ${m === null ? 'null' : typeof m}`);
  });
}

/**
 * `messages` as a request's `chat`: objects in `shape` as they are, or
 * LangChain.js messages as OpenAI's (the shape then `'openai-chat'`).
 */
export function chat(messages, shape = 'openai-chat') {
  const list = Array.from(messages);
  const lc = list.some((m) => typeOf(m) !== undefined);
  return { shape: lc ? 'openai-chat' : shape, messages: lc ? openAI(list) : list };
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The pack's request (`pack.chat`, made from `messages` by `chat`) as
 * LangChain.js messages: each of yours the pack kept, the same object (a
 * copy where the pack added a cache hint or compaction cleared a result),
 * and the pack's own as a SystemMessage (a HumanMessage where the model
 * takes system text only at the top).
 */
export async function toLangChain(pack, messages) {
  if (pack?.chat == null) throw refuse('pack', 'expected a pack assembled from a chat (its `chat` is the request to send)');
  if (pack.chat.shape !== 'openai-chat') throw refuse('pack', `its chat is ${pack.chat.shape}'s; LangChain's messages are OpenAI's (chat(messages))`);
  const { HumanMessage, SystemMessage, coerceMessageLikeToMessage } = await import(
    /* @vite-ignore */ /* webpackIgnore: true */ LANGCHAIN_MESSAGES
  );
  const given = Array.from(messages);
  const converted = openAI(given);
  const body = JSON.parse(pack.chat.body);
  return body.messages.map((sent, k) => {
    const source = pack.chat.sources[k];
    if (source == null) {
      return sent.role === 'user' ? new HumanMessage({ content: sent.content }) : new SystemMessage({ content: sent.content });
    }
    const original = given[source];
    if (same(sent, converted[source])) return original;
    if (typeOf(original) === undefined) return coerceMessageLikeToMessage(sent);
    return new original.constructor({ ...fieldsOf(original), content: sent.content });
  });
}

/** A type name, or a message class (as LangChain.js reads one: the type of one made empty), as a role. */
function roleOf(t, option) {
  const type = typeof t === 'function' ? typeOf(new t({})) : t;
  const role = OPENAI_ROLES[type] ?? (['user', 'assistant', 'system', 'tool'].includes(type) ? type : undefined);
  if (role === undefined) throw refuse(option, `expected message types ('human', 'ai', 'system', 'tool') or message classes, got ${String(t)}`);
  return role;
}

const rolesOf = (types, option) => (types == null ? [] : [types].flat().map((t) => roleOf(t, option)));

/** LangChain.js's counter of a list of messages: a function, or a model's `getNumTokens` summed over contents. */
function listCounter(tokenCounter) {
  if (typeof tokenCounter === 'function') return tokenCounter;
  if (typeof tokenCounter?.getNumTokens === 'function') {
    return async (ms) => (await Promise.all(ms.map((m) => tokenCounter.getNumTokens(m.content)))).reduce((a, b) => a + b, 0);
  }
  return null;
}

/** A LangChain.js message's own fields, as LangChain.js copies one (not its type, nor its `lc_` fields). */
const fieldsOf = (m) => Object.fromEntries(Object.entries(m).filter(([k]) => k !== 'type' && !k.startsWith('lc_')));

/** A copy of `m` as the core cut it. */
function cut(m, partial) {
  const content = partial.blocks != null
    ? m.content.slice(partial.blocks.first, partial.blocks.first + partial.blocks.count)
    : partial.text;
  if (typeOf(m) === undefined) return { ...m, content };
  return new m.constructor({ ...fieldsOf(m), content });
}

/** The user's counter lent as the host's `countMessages`: each list the core weighs, as the user's own messages, in order. */
function lentCounter(count, given, thrown) {
  return async (_tokenizer, lists) => Promise.all(lists.map(async (list) => {
    const at = new Map(list.messages.map((i) => [i, given[i]]));
    if (list.cut != null) at.set(list.cut.message, cut(given[list.cut.message], list.cut));
    let n;
    try {
      n = await count([...at.keys()].sort((a, b) => a - b).map((i) => at.get(i)));
    } catch (e) {
      thrown.push(e);
      throw e;
    }
    if (!Number.isInteger(n) || n < 0) {
      thrown.push(refuse('options.tokenCounter', `expected a whole number of tokens, got ${String(n)}`));
      throw thrown.at(-1);
    }
    return n;
  }));
}

/** LangChain.js's `textSplitter` lent as the host's `splitText`. */
function lentSplitter(textSplitter) {
  const split = typeof textSplitter?.splitText === 'function' ? (t) => textSplitter.splitText(t) : textSplitter;
  if (typeof split !== 'function') throw refuse('options.textSplitter', 'expected a function of a text or a TextSplitter');
  return async (texts) => Promise.all(texts.map(async (t) => ({ pieces: Array.from(await split(t)) })));
}

/** The options `trim` reads (LangChain.js's names, and ctxpack's `model` and `builder`). */
const TRIM_OPTIONS = ['maxTokens', 'tokenCounter', 'model', 'strategy', 'allowPartial', 'startOn', 'includeSystem',
  'endOn', 'textSplitter', 'builder'];

/** An option `trim` does not read would be ignored in silence: refused, naming the one it looks like. */
export function refuseUnknownOptions(options) {
  if (options === null || typeof options !== 'object') {
    throw refuse('options', `expected an object of options, got ${options === null ? 'null' : typeof options}`);
  }
  for (const key of Object.keys(options)) {
    if (TRIM_OPTIONS.includes(key)) continue;
    const camel = key.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
    const hint = TRIM_OPTIONS.includes(camel) ? `; did you mean \`${camel}\`?` : '';
    throw refuse(`options.${key}`, `not an option of trimMessages (${TRIM_OPTIONS.join(', ')})${hint}`);
  }
}

/** A refusal of the core's trim request, named as the caller wrote it: `options.maxTokens`, `messages[3]`. */
function asArgument(e) {
  const v = e?.error?.invalidField;
  if (typeof v?.field === 'string' && v.field.startsWith('trim.')) {
    const option = v.field.slice(5).replace(/^tokenizer/, 'tokenCounter').replace(/^split/, 'textSplitter');
    const field = v.field.startsWith('trim.chat.messages') ? v.field.slice(10) : `options.${option}`;
    v.message = v.message.replace(/\b(max-tokens|allow-partial|start-on|end-on|include-system)\b/g,
      (name) => name.replace(/-(.)/g, (_, c) => c.toUpperCase()));
    e.message = e.message.replace(v.field, field).replace(/: .*$/s, `: ${v.message}`);
    v.field = field;
  }
  return e;
}

/**
 * LangChain.js's `trimMessages(messages, options)`, by ctxpack's core
 * (`Builder#trim`): the same options and messages, returned unchanged (a
 * cut one a copy). `tokenCounter` is LangChain.js's — a function of a
 * list of messages (its count, or a Promise of it), or a model with
 * `getNumTokens` — called with your messages, in order, on every list
 * the core weighs; or a tokenizer ctxpack counts exactly ('o200k-base',
 * the default, 'cl100k-base', `{ named: file }`, or `model: 'gpt-4o'`),
 * each message then counted as it is sent. Beyond LangChain.js's: a tool
 * call is never kept apart from its results, and where nothing would be
 * kept (the newest message alone over `maxTokens`) it throws saying so.
 */
export async function trim(messages, options, makeBuilder) {
  refuseUnknownOptions(options);
  const { maxTokens, model, strategy = 'last', allowPartial = false, startOn, endOn, includeSystem = false, textSplitter } = options;
  if (messages === null || typeof messages !== 'object' || typeof messages[Symbol.iterator] !== 'function') {
    throw refuse('messages', `expected a list of messages, got ${messages === null ? 'null' : typeof messages}`);
  }
  const given = Array.from(messages);
  const tokenCounter = options.tokenCounter ?? (model == null ? 'o200k-base' : undefined);
  const count = listCounter(tokenCounter);
  if (count === null && tokenCounter !== undefined && typeof tokenCounter !== 'string'
      && (tokenCounter === null || typeof tokenCounter !== 'object')) {
    throw refuse('options.tokenCounter', `expected a function of messages, a model or a tokenizer ('o200k-base'), got ${String(tokenCounter)}`);
  }
  const request = {
    chat: { shape: 'openai-chat', messages: openAI(given) },
    maxTokens,
    model,
    tokenizer: count !== null ? { host: 'tokenCounter' } : tokenCounter,
    strategy,
    includeSystem,
    startOn: rolesOf(startOn, 'options.startOn'),
    endOn: rolesOf(endOn, 'options.endOn'),
    allowPartial,
    split: allowPartial && textSplitter != null ? 'host' : 'lines',
  };
  // What the user's counter threw is thrown as it threw.
  const thrown = [];
  const callbacks = {
    countMessages: count === null ? undefined : lentCounter(count, given, thrown),
    splitText: request.split === 'host' ? lentSplitter(textSplitter) : undefined,
  };
  const builder = options.builder ?? await makeBuilder();
  let trimmed;
  try {
    trimmed = await builder.trim(request, callbacks);
  } catch (e) {
    throw thrown[0] ?? asArgument(e);
  }
  return trimmed.kept.map((i) => (trimmed.partial?.message === i ? cut(given[i], trimmed.partial) : given[i]));
}
