// The chat messages users already have, in and out of ctxpack: OpenAI-style
// messages (content as a string or text parts, `tool_calls`,
// `tool_call_id`), messages in Anthropic's blocks (`text`, `thinking`,
// `tool_use`, `tool_result`) and @langchain/core messages in, as a request's
// conversation; a pack's kept conversation out as OpenAI messages, as
// Anthropic's `system` and `messages`, or as the originals that were kept.
// `trimMessages` is LangChain.js's `trimMessages` (the subset that makes
// sense for an exact packer), packed by ctxpack. Nothing here imports
// LangChain: its messages are read by their shape.

import { explainReason } from './explain.js';
import {
  asAnthropic, asOpenAI, isImage, pricer,
} from './images.js';

const LANGCHAIN_MESSAGES = '@langchain/core/messages';

const ROLES = {
  system: 'system', developer: 'system', user: 'user', assistant: 'assistant', tool: 'tool',
  human: 'user', ai: 'assistant',
};

/** A LangChain message's type (`human`, `ai`, …), or undefined. */
function langchainType(m) {
  if (m == null || typeof m !== 'object') return undefined;
  if (typeof m._getType === 'function') return m._getType();
  if (typeof m.getType === 'function') return m.getType();
  return undefined;
}

function refuse(field, message) {
  const e = new TypeError(`\`${field}\`: ${message}`);
  e.field = field;
  return e;
}

/** A message's content as text; a part that is not text is refused. */
function textOf(content, where) {
  const { text, calls, answers } = contentOf(content, where);
  if (calls.length > 0 || answers.length > 0) {
    throw refuse(`${where}.content`, `a '${calls.length > 0 ? 'tool_use' : 'tool_result'}' block belongs in a conversation's message`);
  }
  return text;
}

// Anthropic's blocks and LangChain's standard blocks that carry a
// message's text, by the key that holds it (a model's thinking is sent
// back as it was given, and charged so).
const TEXT_BLOCKS = { text: 'text', thinking: 'thinking', reasoning: 'reasoning' };

/**
 * A message's content as the turn holds it: its text (text parts and
 * blocks, a tool result's content, one per line), the tool calls its
 * `tool_use` blocks make ([id, name, arguments]) and the calls its
 * `tool_result` blocks answer, by id. Any other part is refused, naming
 * it: ctxpack would silently lose it.
 */
function contentOf(content, where, images = null) {
  const out = { text: '', calls: [], answers: [] };
  if (content == null) return out;
  if (typeof content === 'string') return { ...out, text: content };
  if (!Array.isArray(content)) throw refuse(`${where}.content`, `expected a string or a list of content blocks, got ${typeof content}`);
  const texts = [];
  content.forEach((part, j) => {
    const at = `${where}.content[${j}]`;
    const kind = part != null && typeof part === 'object' ? part.type : undefined;
    if (typeof part === 'string') {
      texts.push(part);
    } else if (Object.hasOwn(TEXT_BLOCKS, kind ?? '') && typeof part[TEXT_BLOCKS[kind]] === 'string') {
      texts.push(part[TEXT_BLOCKS[kind]]);
    } else if (kind === 'tool_use' || kind === 'tool_call') {
      // Anthropic's `tool_use` (its `input`), LangChain's standard
      // `tool_call` (its `args`).
      if (typeof part.id !== 'string' || typeof part.name !== 'string') throw refuse(at, `a '${kind}' block needs its call's \`id\` and \`name\``);
      const args = (kind === 'tool_use' ? part.input : part.args) ?? {};
      out.calls.push([part.id, part.name, typeof args === 'string' ? args : JSON.stringify(args)]);
    } else if (images !== null && isImage(part)) {
      images.push([part, at]);
    } else if (kind === 'tool_result') {
      if (typeof part.tool_use_id !== 'string') throw refuse(`${at}.tool_use_id`, 'a tool result answers a call by its id');
      out.answers.push(part.tool_use_id);
      texts.push(textOf(part.content, at));
    } else {
      throw refuse(at, `a '${kind ?? typeof part}' part is not carried: ctxpack packs text, images, tool calls and their results (text, image, tool_use, tool_result, thinking blocks)`);
    }
  });
  out.text = texts.join('\n');
  return out;
}

/** The tool calls an assistant message makes: [id, name, arguments],
 * from its `tool_calls` and its content's `tool_use` blocks (`blocks`;
 * LangChain gives a call both ways, once). */
function callsOf(m, isLangChain, blocks = []) {
  const made = isLangChain
    ? (m.tool_calls ?? []).map((c, j) => {
      if (typeof c?.id !== 'string' || c.id === '') throw refuse(`tool_calls[${j}].id`, 'a tool call needs its id (its results answer it by the id)');
      return [c.id, c.name, JSON.stringify(c.args ?? {})];
    })
    : (m.tool_calls ?? m.toolCalls ?? []).map((c, j) => {
      if (typeof c?.id !== 'string' || c.id === '') throw refuse(`tool_calls[${j}].id`, 'a tool call needs its id (its results answer it by the id)');
      return [c.id, c.function?.name ?? '', c.function?.arguments ?? ''];
    });
  const ids = new Set(made.map(([id]) => id));
  return [...made, ...blocks.filter(([id]) => !ids.has(id))];
}

/**
 * `messages` as a request's conversation, one turn per message, in order.
 * An assistant message's tool calls are written into its text
 * (`[tool call] name(arguments)`: the model is charged for them) and its
 * results share its first call's id, so the call and every result are
 * kept or dropped together. A message's images are charged with it (its
 * `attachedTokens`) as `options.model`'s provider bills them (OpenAI's
 * rule when no model is named), or as `options.imageTokens` gives them. A
 * message of no chat role, a part that is not carried, a tool result
 * without its call's id: a TypeError naming it.
 */
export function conversationOf(messages, options = {}) {
  return turnsOf(messages, 0, pricer(options.model, options.imageTokens, refuse));
}

/** `conversationOf` messages that begin at `offset` in the caller's list
 * (a mistake names the message by its place there), their images priced
 * by `price` (OpenAI's rule when none). */
function turnsOf(messages, offset, price = pricer(undefined, undefined, refuse)) {
  const group = new Map();
  return Array.from(messages, (m, k) => {
    const i = k + offset;
    const where = `messages[${i}]`;
    const type = langchainType(m);
    const isLangChain = type !== undefined;
    if (!isLangChain && (m == null || typeof m !== 'object')) {
      throw refuse(where, `expected an OpenAI-style message or a LangChain message, got ${m === null ? 'null' : typeof m}`);
    }
    const roleName = isLangChain ? type : m.role;
    const role = ROLES[roleName];
    if (role === undefined) throw refuse(`${where}.role`, `'${roleName}' is not a chat role (${Object.keys(ROLES).join(', ')})`);
    const images = [];
    const parts = typeof m.content === 'string' ? { text: m.content, calls: [], answers: [] } : contentOf(m.content, where, images);
    let content = parts.text;
    let toolCallId = null;
    let turnRole = role;
    if (role === 'assistant') {
      let calls;
      try {
        calls = callsOf(m, isLangChain, parts.calls);
      } catch (e) {
        if (e.field === undefined) throw e;
        throw refuse(`${where}.${e.field}`, e.message.slice(e.message.indexOf(': ') + 2));
      }
      if (calls.length > 0) {
        toolCallId = calls[0][0];
        for (const [id] of calls) group.set(id, toolCallId);
        content = [content, ...calls.map(([, name, args]) => `[tool call] ${name}(${args})`)].filter(Boolean).join('\n');
      }
    } else if (parts.calls.length > 0) {
      throw refuse(`${where}.content`, `only an assistant message makes tool calls (a ${role} message has a 'tool_use' block)`);
    } else if (role === 'tool') {
      const answered = m.tool_call_id ?? m.toolCallId;
      if (typeof answered !== 'string' || answered === '') throw refuse(`${where}.tool_call_id`, 'a tool message answers a call by its id');
      toolCallId = group.get(answered) ?? answered;
    } else if (parts.answers.length > 0) {
      // Anthropic's results come in a user message of `tool_result`
      // blocks: a tool turn of the call's unit (it never begins the kept
      // conversation, which would part it from its call).
      if (role !== 'user') throw refuse(`${where}.content`, `a ${role} message cannot hold a 'tool_result' block`);
      turnRole = 'tool';
      toolCallId = group.get(parts.answers[0]) ?? parts.answers[0];
    }
    const turn = { role: turnRole, content, toolCallId };
    if (images.length > 0) turn.attachedTokens = images.reduce((sum, [part, at]) => sum + price(part, at), 0);
    return turn;
  });
}

/** The indices of the request's turns the pack kept, oldest first. */
function keptTurns(pack) {
  return pack.entries
    .filter((e) => e.section === 'conversation-state' && e.id.startsWith('turn-'))
    .map((e) => Number(e.id.slice(5)));
}

/** Refuses what is not a pack, naming it (the arguments swapped). */
function isPack(pack, called) {
  if (pack === null || typeof pack !== 'object' || pack.snapshot === undefined || !Array.isArray(pack.entries)) {
    throw refuse('pack', `expected the pack builder.assemble gave, got ${Array.isArray(pack) ? 'an array' : shown(pack)} (${called}(pack, messages))`);
  }
}

/** The messages of `messages` (the pack's conversation) that the pack kept, unchanged. */
export function keptMessages(pack, messages) {
  isPack(pack, 'keptMessages');
  const list = Array.from(messages);
  // A compacted conversation's summary stands in the place of a turn.
  const madeFrom = pack.snapshot.entries
    .filter((e) => e.section === 'conversation-state' && (e.id.startsWith('turn-') || e.id === 'conversation-summary'))
    .reduce((n, e) => n + (e.run ? e.run.count : 1), 0);
  if (list.length !== madeFrom) {
    throw refuse('messages', `the pack's conversation was made from ${madeFrom} messages, got ${list.length}: give the messages it was made from`);
  }
  const indices = keptTurns(pack);
  const c = pack.compaction;
  if (c === undefined || c === null || c.cleared <= c.turns) return indices.map((i) => list[i]);
  // The pack's own message for each kept turn, in order: a tool result its
  // compaction cleared is sent as the placeholder the pack holds.
  const sent = slotsOf(pack).map((slot, k) => [slot, pack.messages[k]]).filter(([slot]) => slot === null).map(([, m]) => m);
  return indices.map((i, k) => (c.turns <= i && i < c.cleared && sent[k].role === 'tool' ? cleared(list[i], sent[k].content) : list[i]));
}

/** A copy of the tool result `m` with `text` for its result: each `tool_result` block's content, in Anthropic's blocks. */
function cleared(m, text) {
  const blocks = blocksOf(m);
  if (blocks !== undefined) return withContent(m, blocks.map((b) => (b !== null && typeof b === 'object' && b.type === 'tool_result' ? { ...b, content: text } : b)));
  return withContent(m, text);
}

/**
 * Throws, saying why, when `messages` begin with a system message the pack
 * left out: a conversation's turns give way to the budget, the oldest
 * first, and an answer without its instructions is rarely what was meant
 * (`keptMessages` gives the pack's choice as it is).
 */
function systemKept(pack, messages) {
  const list = Array.from(messages);
  if (list.length === 0 || keptTurns(pack).includes(0) || conversationOf(list.slice(0, 1))[0].role !== 'system') return;
  const entry = pack.snapshot.entries.find((e) => e.id === 'turn-0' && e.section === 'conversation-state');
  // The reason's name alone: its numbers may be a run's of several turns.
  const why = entry === undefined ? 'not kept.'
    : explainReason(typeof entry.reason === 'string' ? entry.reason : Object.keys(entry.reason)[0]);
  throw new Error(`\`messages[0]\`, the system message, was left out of the pack: ${why} Give it as the request's `
    + 'systemPrompt to keep it (the assembly then fails, saying so, if it alone is over the budget), or take '
    + 'keptMessages(pack, messages) as it is');
}

/**
 * The pack's messages in order: a system message's content, or null for a
 * kept turn (in the order of `keptTurns`). The entries say which is which:
 * a system message begins the pack, follows a turn, or passes from L0 to
 * the other context (so the context goes after the conversation in a
 * cache-first layout, before it otherwise).
 */
function slotsOf(pack) {
  const slots = [];
  let next = 0;
  let before;
  for (const e of pack.entries) {
    const turn = e.section === 'conversation-state' && e.id.startsWith('turn-');
    const l0 = e.layer === 'l0';
    if (turn) {
      next += 1;
      slots.push(null);
    } else if (before === undefined || before === 'turn' || (before === 'l0' && !l0)) {
      slots.push(pack.messages[next].content);
      next += 1;
    }
    before = turn ? 'turn' : l0 ? 'l0' : 'context';
  }
  return slots;
}

/** A pack's message as OpenAI's shape: `tool_call_id` on a tool result. */
function plain(m) {
  const out = { role: m.role, content: m.content };
  if (m.role === 'tool' && m.toolCallId != null) out.tool_call_id = m.toolCallId;
  return out;
}

/** The content blocks of a message given in Anthropic's shape (a list
 * holding more than text parts), else undefined. */
function blocksOf(m) {
  const content = m?.content;
  if (!Array.isArray(content)) return undefined;
  return content.every((p) => typeof p === 'string' || p?.type === 'text') ? undefined : content;
}

/**
 * An original message as OpenAI's messages: itself (a LangChain message
 * in OpenAI's shape), or, given in blocks, an assistant message with its
 * `tool_use` blocks as `tool_calls` and its text (a thinking block, which
 * OpenAI does not take, left out), and a user message's `tool_result`
 * blocks as tool messages, its text and images after them (images as
 * `image_url` parts).
 */
function openAIOf(m) {
  const type = langchainType(m);
  const role = type === undefined ? ROLES[m.role] : ROLES[type];
  const blocks = blocksOf(m);
  if (blocks !== undefined) {
    const isText = (p) => typeof p === 'string' || p.type === 'text';
    const texts = blocks.filter(isText).map((p) => (typeof p === 'string' ? p : p.text));
    if (role === 'assistant') {
      // Its text; a thinking block, which OpenAI does not take, left out.
      const calls = callsOf(m, type !== undefined, contentOf(blocks, 'message', []).calls);
      const out = { role, content: texts.join('\n') };
      if (calls.length > 0) out.tool_calls = calls.map(([id, name, args]) => ({ id, type: 'function', function: { name, arguments: args } }));
      return [out];
    }
    const out = blocks.filter((p) => p?.type === 'tool_result')
      .map((p) => ({ role: 'tool', tool_call_id: p.tool_use_id, content: textOf(p.content, 'message') }));
    if (blocks.some(isImage)) {
      out.push({ role, content: blocks.filter((p) => isImage(p) || isText(p))
        .map((p) => (isImage(p) ? asOpenAI(p) : { type: 'text', text: typeof p === 'string' ? p : p.text })) });
    } else if (texts.length > 0 || out.length === 0) {
      out.push({ role, content: texts.join('\n') });
    }
    return out;
  }
  if (type === undefined) return [m];
  const out = { role, content: m.content };
  if (role === 'assistant' && m.tool_calls?.length) {
    out.tool_calls = m.tool_calls.map((c) => ({
      id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args ?? {}) },
    }));
  }
  if (role === 'tool') out.tool_call_id = m.tool_call_id;
  return [out];
}

/**
 * OpenAI chat messages: the pack's system messages, then the kept
 * conversation — the original messages when `messages` is given (tool
 * calls intact; one given in Anthropic's blocks in OpenAI's shape, its
 * `tool_use` blocks as `tool_calls` and its `tool_result` blocks as tool
 * messages), otherwise the pack's own turns (refused when they hold tool
 * calls, which only the originals can give back). Given messages that
 * begin with a system message the pack left out, it throws saying why
 * (here, in `toAnthropic` and in `toLangChain`).
 */
export function toOpenAI(pack, messages) {
  return openAIMessages(pack, messages, 'toOpenAI');
}

/** `toOpenAI`, a refusal naming the function `called`. */
function openAIMessages(pack, messages, called) {
  isPack(pack, called);
  if (messages === undefined) {
    if (pack.messages.some((m) => m.toolCallId != null)) {
      throw new Error(`this pack's conversation has tool calls, which it holds as text: give the messages it was made from, ${called}(pack, messages), to get them back as tool calls`);
    }
    const attached = pack.messages.findIndex((m) => m.attachedTokens != null);
    if (attached >= 0) {
      throw new Error(`this pack's message ${attached} was charged ${pack.messages[attached].attachedTokens} tokens of what it sends beside its text (its images), which the pack holds no copy of: give the messages it was made from, ${called}(pack, messages), to send them`);
    }
    return pack.messages.map(plain);
  }
  systemKept(pack, messages);
  const originals = keptMessages(pack, messages);
  let turn = 0;
  return slotsOf(pack).flatMap((slot) => (slot !== null ? [{ role: 'system', content: slot }] : openAIOf(originals[turn++])));
}

/**
 * Anthropic's Messages API shape, `{ system, messages }`: the system text
 * apart, tool calls as `tool_use` blocks and their results as
 * `tool_result` blocks in a user turn, consecutive turns of one role
 * merged; a message given in Anthropic's blocks keeps them as they are.
 * The first message must be the user's: a pack whose kept conversation
 * does not begin so (`conversationStart: 'any-turn'`) is refused, saying
 * so.
 *
 * Cache breakpoints (`cache_control`) mark the prefixes the next turn
 * repeats — the system text, and the conversation that leads before what
 * changes every turn — where they reach the model's fewest cacheable
 * tokens (`snapshot.cachePrefixes`); the system text is then a list of
 * one text block. At most 4 in all, counting any the messages carry.
 */
export function toAnthropic(pack, messages) {
  let system = '';
  const out = [];
  // Where each of the pack's messages ended: null for the system text,
  // else the message and block of `out` it ended in.
  const ends = [];
  const ended = () => ends.push(out.length > 0 ? [out.length - 1, out.at(-1).content.length - 1] : null);
  const add = (role, block) => {
    if (out.length > 0 && out.at(-1).role === role) out.at(-1).content.push(block);
    else out.push({ role, content: [block] });
  };
  const originals = messages === undefined ? keptTurns(pack).map(() => undefined) : keptMessages(pack, messages);
  let converted = openAIMessages(pack, messages, 'toAnthropic');
  let turn = 0;
  let placed = false;
  for (const slot of slotsOf(pack)) {
    if (slot !== null) {
      // The pack's first system message (L0) is the system text; the other
      // context is the next user turn's text, so the system text stays the
      // same turn after turn whatever was retrieved.
      converted = converted.slice(1);
      if (out.length > 0 || placed) add('user', { type: 'text', text: slot });
      else system = [system, slot].filter(Boolean).join('\n\n');
      placed = true;
      ended();
      continue;
    }
    const original = originals[turn++];
    const blocks = original === undefined ? undefined : blocksOf(original);
    if (blocks !== undefined) {
      // As given; LangChain may hold a call in `tool_calls` alone.
      const type = langchainType(original);
      const role = ROLES[type ?? original.role] === 'assistant' ? 'assistant' : 'user';
      for (const block of blocks) {
        add(role, typeof block === 'string' ? { type: 'text', text: block } : isImage(block) ? asAnthropic(block) : block);
      }
      const used = new Set(blocks.map((b) => b?.id));
      for (const [id, name, args] of role === 'assistant' ? callsOf(original, type !== undefined) : []) {
        if (!used.has(id)) add(role, { type: 'tool_use', id, name, input: JSON.parse(args || '{}') });
      }
      converted = converted.slice(openAIOf(original).length);
      ended();
      continue;
    }
    const m = converted.shift();
    const text = textOf(m.content, 'message');
    if (m.role === 'system') {
      system = [system, text].filter(Boolean).join('\n\n');
    } else if (m.role === 'tool') {
      add('user', { type: 'tool_result', tool_use_id: m.tool_call_id, content: text });
    } else if (m.role === 'assistant') {
      if (text) add('assistant', { type: 'text', text });
      for (const c of m.tool_calls ?? []) {
        const args = c.function?.arguments ?? '{}';
        add('assistant', { type: 'tool_use', id: c.id, name: c.function?.name ?? '', input: typeof args === 'string' ? JSON.parse(args) : args });
      }
    } else {
      add('user', { type: 'text', text });
    }
    ended();
  }
  if (out.length === 0) throw new Error("Anthropic's API needs at least one message; this pack kept none of the conversation");
  if (out[0].role !== 'user') {
    throw new Error("Anthropic's API needs the first message to be the user's; this pack's conversation begins with an assistant turn (conversationStart: 'any-turn')");
  }
  const at = breakpointsOf(pack);
  if (at.length === 0) return { system, messages: out };
  const head = system ? [{ type: 'text', text: system }] : [];
  // Every block in order, as a list and a position in it.
  const blocks = [...head.map((_, i) => [head, i]), ...out.flatMap((m) => m.content.map((_, i) => [m.content, i]))];
  const first = [];
  out.reduce((n, m) => { first.push(n); return n + m.content.length; }, head.length);
  const index = (end) => (end === null ? head.length - 1 : first[end[0]] + end[1]);
  const taken = blocks.filter(([where, i]) => where[i] !== null && typeof where[i] === 'object' && 'cache_control' in where[i]).length;
  mark(blocks, at.filter((n) => n > 0 && n <= ends.length).map((n) => index(ends[n - 1])), taken);
  return { system: head.length > 0 ? head : system, messages: out };
}

/**
 * The hash of a pack's first messages, as `snapshot.cachePrefixes` hashes
 * them: each message's role, tool-call id, attached tokens and content,
 * each as its UTF-8 byte length, `:` and its bytes.
 */
async function prefixHash(messages) {
  const utf8 = new TextEncoder();
  const parts = [];
  for (const m of messages) {
    for (const field of [m.role, m.toolCallId ?? '', m.attachedTokens == null ? '' : String(m.attachedTokens), m.content]) {
      const data = utf8.encode(field);
      parts.push(utf8.encode(`${data.length}:`), data);
    }
  }
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => { all.set(p, at); return at + p.length; }, 0);
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', all));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * What a provider's prompt cache could serve of `pack` after `previous`
 * was sent: the longest of `previous`'s cache prefixes
 * (`snapshot.cachePrefixes`) that `pack` begins with byte for byte, or
 * null. Its `tokens` are the tokens served, where `cacheable`.
 */
export async function cachedPrefix(previous, pack) {
  isPack(previous, 'cachedPrefix');
  isPack(pack, 'cachedPrefix');
  const prefixes = [...previous.snapshot.cachePrefixes].sort((a, b) => b.messages - a.messages);
  for (const p of prefixes) {
    if (p.messages <= pack.messages.length && await prefixHash(pack.messages.slice(0, p.messages)) === p.hash) return p;
  }
  return null;
}

// Anthropic's limits on cache breakpoints: at most 4 a request, and a
// breakpoint finds an earlier turn's cache within 20 blocks before it.
const BREAKPOINTS = 4;
const LOOK_BACK = 20;

/**
 * How many of the pack's messages precede each cache breakpoint: its
 * stable and history prefixes (`snapshot.cachePrefixes`) that reach the
 * fewest tokens the model's provider caches.
 */
function breakpointsOf(pack) {
  const ends = (pack.snapshot.cachePrefixes ?? [])
    .filter((p) => p.cacheable && (p.boundary === 'stable' || p.boundary === 'history'))
    .map((p) => p.messages);
  return [...new Set(ends)].sort((a, b) => a - b);
}

/** Whether an Anthropic block can carry `cache_control`. */
function takesBreakpoint(block) {
  return block !== null && typeof block === 'object' && block.type !== 'thinking' && block.type !== 'redacted_thinking'
    && !(block.type === 'text' && !block.text);
}

/**
 * Puts `cache_control` on the blocks at `at` (indices into `blocks`, each
 * a list and a position in it), and, where a breakpoint lies more than
 * `LOOK_BACK` blocks after the one before, on blocks every `LOOK_BACK`
 * back from it, so a turn that adds many blocks still finds the last
 * turn's cache; at most `BREAKPOINTS` in all, `taken` of them by the
 * messages as given, the boundaries before the blocks between them. A
 * block that cannot hold one passes it to the one before.
 */
function mark(blocks, at, taken) {
  const rungs = [];
  let before = -1;
  for (const end of at) {
    let rung = end;
    while (rung - before > LOOK_BACK && rung - LOOK_BACK > before) {
      rung -= LOOK_BACK;
      rungs.push(rung);
    }
    before = end;
  }
  // The boundaries first, the latest first, then the rungs between them.
  const latest = [...[...at].sort((a, b) => b - a), ...rungs.sort((a, b) => b - a)]
    .slice(0, Math.max(0, BREAKPOINTS - taken));
  for (let k of latest) {
    for (; k >= 0; k--) {
      const [where, i] = blocks[k];
      if (!takesBreakpoint(where[i])) continue;
      if (!('cache_control' in where[i])) where[i] = { ...where[i], cache_control: { type: 'ephemeral' } };
      break;
    }
  }
}

/**
 * LangChain messages (needs @langchain/core, imported when called): the
 * pack's system messages, then the kept originals when `messages` are
 * LangChain's, otherwise the OpenAI messages `toOpenAI` gives, made into
 * LangChain's (tool calls and results included). For a pack made for a
 * Claude model (`model: 'claude-…'`), the context after a turn is a user
 * message rather than a system one (Anthropic takes system text only at
 * the top), and the messages that end the prefixes the next turn repeats
 * carry Anthropic's `cache_control` (their content then a list of
 * blocks), as `toAnthropic` marks them; the originals given are copied,
 * never changed.
 */
export async function toLangChain(pack, messages) {
  // Out of bundlers' sight: the package does not carry LangChain.
  const { HumanMessage, SystemMessage, coerceMessageLikeToMessage } = await import(
    /* @vite-ignore */ /* webpackIgnore: true */ LANGCHAIN_MESSAGES
  );
  // Per pack message, the LangChain messages it becomes.
  let out;
  if (messages !== undefined && Array.from(messages).every((m) => langchainType(m) !== undefined)) {
    systemKept(pack, messages);
    const originals = keptMessages(pack, messages);
    let turn = 0;
    out = slotsOf(pack).map((slot) => [slot !== null ? new SystemMessage(slot) : originals[turn++]]);
  } else {
    let converted = openAIMessages(pack, messages, 'toLangChain');
    const originals = messages === undefined ? keptTurns(pack).map(() => undefined) : keptMessages(pack, messages);
    let turn = 0;
    out = slotsOf(pack).map((slot) => {
      const original = slot === null ? originals[turn++] : undefined;
      const n = original === undefined ? 1 : openAIOf(original).length;
      const these = converted.slice(0, n).map((m) => coerceMessageLikeToMessage(m));
      converted = converted.slice(n);
      return these;
    });
  }
  if ((pack.snapshot.model?.profile.name ?? '').toLowerCase().startsWith('claude')) {
    // Anthropic takes system text only at the top (ChatAnthropic refuses
    // a system message after a turn): the context that follows a turn is
    // a user message, which ChatAnthropic merges into the next turn, as
    // toAnthropic makes it a text block of that turn.
    let spoken = false;
    slotsOf(pack).forEach((slot, k) => {
      if (slot !== null && spoken) out[k] = [new HumanMessage({ content: [{ type: 'text', text: slot }] })];
      spoken ||= slot === null;
    });
    const given = out.flat().flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((b) => b !== null && typeof b === 'object' && 'cache_control' in b).length;
    const at = breakpointsOf(pack).sort((a, b) => b - a).slice(0, Math.max(0, BREAKPOINTS - given));
    for (const n of at) markLangChain(out.slice(0, n));
  }
  return out.flat();
}

/**
 * Puts `cache_control` on the last block of the last message in `head`
 * that has one to take it, on a copy of that message.
 */
function markLangChain(head) {
  for (const ms of [...head].reverse()) {
    for (let k = ms.length - 1; k >= 0; k--) {
      const m = ms[k];
      const content = Array.isArray(m.content) ? [...m.content] : m.content ? [{ type: 'text', text: m.content }] : [];
      for (let i = content.length - 1; i >= 0; i--) {
        const b = typeof content[i] === 'string' && content[i] ? { type: 'text', text: content[i] } : content[i];
        if (!takesBreakpoint(b)) continue;
        if (!('cache_control' in b)) {
          content[i] = { ...b, cache_control: { type: 'ephemeral' } };
          const fields = { content, additional_kwargs: m.additional_kwargs, response_metadata: m.response_metadata, id: m.id, name: m.name };
          if (m.tool_calls !== undefined) fields.tool_calls = m.tool_calls;
          if (m.tool_call_id !== undefined) fields.tool_call_id = m.tool_call_id;
          ms[k] = new m.constructor(fields);
        }
        return;
      }
    }
  }
}

/**
 * LangChain.js's `trimMessages(messages, options)`, packed by ctxpack
 * (`options.builder`, else the one `makeBuilder` gives: index.js's
 * `trimMessages` makes a default Builder): the newest messages that fit
 * `maxTokens`, returned unchanged
 * and in order, a tool call never apart from its results. `tokenCounter`
 * is a tokenizer ctxpack counts exactly (`'o200k-base'`, the default,
 * `'cl100k-base'`, `{ named: file }`, `{ charsPerToken: n }`), or
 * LangChain.js's: a function of a list of messages (its count, or a
 * Promise of it), or a model with `getNumTokens(content)` (a message's
 * count, summed); it is called with your messages as you gave them, the
 * kept ones count within `maxTokens` as it counts them, and
 * `entryOverhead` is then 0 unless given. `model` names the model the messages are for (`'gpt-4o'`,
 * `'qwen3-8b'`): its tokenizer and its chat format's `entryOverhead` are
 * then the defaults. `startOn: 'human'` makes the
 * kept messages begin on a user turn; `includeSystem` keeps a first
 * system message whatever happens. Counted as the messages are sent:
 * each message's content plus `entryOverhead` (no role header, no
 * separator: neither is sent), using every token of `maxTokens` a
 * next-older message fits in. `endOn` drops the messages after
 * the last one of its types (`'human'`, `'ai'`, … or message classes)
 * first, as LangChain.js does. `strategy: 'first'` keeps the oldest
 * messages instead, as LangChain.js's does (without `startOn` or
 * `includeSystem`, which it refuses too). `allowPartial` then cuts the
 * next message as LangChain's does — the newest end of the next-older one
 * (the oldest start of the next one with `strategy: 'first'`), whole
 * blocks of a list content first, then the splits of `textSplitter` (a
 * function or a TextSplitter; lines by default), as much as fits —
 * except a message of a tool call's unit, which is never cut.
 */
export async function trim(messages, options, makeBuilder) {
  refuseUnknownOptions(options);
  const {
    maxTokens, model, strategy = 'last', allowPartial = false,
    startOn = null, includeSystem = false, entryOverhead, endOn, textSplitter, imageTokens, builder,
  } = options;
  // Without a model, o200k; with one, the model's tokenizer and overhead.
  const tokenCounter = options.tokenCounter ?? (model == null ? 'o200k-base' : undefined);
  if (messages === null || typeof messages !== 'object' || typeof messages[Symbol.iterator] !== 'function') {
    throw refuse('messages', `expected a list of messages, got ${messages === null ? 'null' : typeof messages}`);
  }
  if (!isU32(maxTokens)) throw refuse('options.maxTokens', `expected a whole number of tokens up to ${U32_MAX}, got ${shown(maxTokens)}`);
  for (const [name, flag] of [['allowPartial', allowPartial], ['includeSystem', includeSystem]]) {
    if (typeof flag !== 'boolean') throw refuse(`options.${name}`, `expected true or false, got ${shown(flag)}`);
  }
  if (tokenCounter !== undefined && (!['string', 'object', 'function'].includes(typeof tokenCounter) || tokenCounter === null)) {
    throw refuse('options.tokenCounter', `expected a tokenizer ('o200k-base', { charsPerToken: 4 }, …), a function of messages or a model, got ${shown(tokenCounter)}`);
  }
  if (model != null && typeof model !== 'string') throw refuse('options.model', `expected a model's name, got ${JSON.stringify(model)}`);
  if (entryOverhead !== undefined && !isU32(entryOverhead)) throw refuse('options.entryOverhead', `expected a whole number of tokens up to ${U32_MAX}, got ${JSON.stringify(entryOverhead)}`);
  if (strategy !== 'last' && strategy !== 'first') {
    throw refuse('options.strategy', `'last' (the newest messages) or 'first' (the oldest), got ${JSON.stringify(strategy)}`);
  }
  if (strategy === 'first' && (startOn != null || includeSystem)) {
    // As LangChain.js's.
    throw refuse(startOn != null ? 'options.startOn' : 'options.includeSystem', "only valid with strategy: 'last'");
  }
  // textSplitter is used, as LangChain.js uses it, only with allowPartial.
  const split = allowPartial ? splitterOf(textSplitter) : null;
  const countsMessages = typeof tokenCounter === 'function' || typeof tokenCounter?.getNumTokens === 'function';
  // A message's images, as its model's provider bills them (a counter of
  // messages counts them itself).
  const price = countsMessages ? () => 0 : pricer(model, imageTokens, refuse);
  // As LangChain.js's, a message class stands for its type.
  const starts = startOn == null ? [] : typesOf([startOn].flat(), 'options.startOn');
  if (starts.some((s) => s !== 'human' && s !== 'user')) {
    throw refuse('options.startOn', `only a user turn ('human') can begin the kept messages, got ${JSON.stringify(startOn)}`);
  }
  let rest = Array.from(messages);
  if (strategy === 'first') {
    return first(rest, maxTokens, countsMessages ? tokenCounter : null, { tokenCounter, model, entryOverhead, price }, endOn,
      builder ?? await makeBuilder(), split);
  }
  if (endOn != null) {
    // As LangChain.js: the messages after the last of endOn's types are
    // dropped first.
    const types = typesOf(endOn);
    while (rest.length > 0 && !types.includes(typeOf(rest[rest.length - 1]))) rest = rest.slice(0, -1);
  }
  let head = [];
  let systemPrompt = '';
  if (includeSystem && rest.length > 0 && conversationOf(rest.slice(0, 1))[0].role === 'system') {
    [systemPrompt] = conversationOf(rest.slice(0, 1)).map((t) => t.content);
    head = rest.slice(0, 1);
    rest = rest.slice(1);
  }
  // Only the newest messages that could fit are converted and sent: a
  // suffix a cheap estimate puts well over the budget, grown until the
  // kept run ends at a turn left out over the budget (an older one then
  // cannot be kept either).
  const made = builder ?? await makeBuilder();
  let from = suffixStart(rest, maxTokens);
  let sent;
  let pack;
  for (;;) {
    sent = rest.slice(from);
    // With allowPartial, the run LangChain.js's finds before startOn cuts
    // it (a message cut to fit may begin it).
    pack = await trimPack(sent, from + head.length, {
      head, systemPrompt, maxTokens, tokenCounter, countsMessages, model, entryOverhead, starts: split ? [] : starts, price,
    }, made);
    if (from === 0 || stoppedByBudget(pack, sent.length)) break;
    from = Math.max(0, rest.length - 2 * sent.length);
  }
  const out = keptMessages(pack, sent);
  const before = from + (out.length > 0 ? Math.min(...keptTurns(pack)) : sent.length) - 1;
  if (split !== null && before >= 0) {
    // allowPartial: the end of the next-older message, as much as fits
    // beside the kept ones (and the system message).
    const count = counterOf(countsMessages ? tokenCounter : null, { tokenCounter, model, entryOverhead, price }, made);
    const room = maxTokens - (head.length > 0 ? await count(head) : 0);
    const cut = await partial(rest[before], out, room, count, split, true);
    if (cut !== null) out.unshift(cut);
  }
  // As LangChain.js's: the kept messages begin on a user turn even when
  // all of them fit (a leading system message goes, unless includeSystem
  // keeps it).
  while (starts.length > 0 && out.length > 0 && typeOf(out[0]) !== 'human') out.shift();
  return [...head, ...out];
}


/** Where the newest messages begin that a cheap estimate (a token per
 * eight characters, and one a message) puts at twice `maxTokens` and more. */
function suffixStart(messages, maxTokens) {
  let estimate = 0;
  let start = messages.length;
  while (start > 0 && estimate <= 2 * maxTokens + 64) {
    start -= 1;
    const content = messages[start]?.content;
    estimate += Math.floor((typeof content === 'string' ? content.length : JSON.stringify(content ?? '').length) / 8) + 1;
  }
  return start;
}

/** Whether the turns before the pack's kept conversation end, past those
 * left out before the first user turn, at one left out over the budget:
 * no older message could then be kept. */
function stoppedByBudget(pack, sent) {
  const reasons = new Map();
  for (const e of pack.snapshot.entries) {
    if (!e.id.startsWith('turn-') || e.section !== 'conversation-state') continue;
    const first = Number(e.id.slice(5));
    const last = e.run ? Number(e.run.lastId.slice(5)) : first;
    for (let t = first; t <= last; t += 1) reasons.set(t, e.reason);
  }
  const kept = keptTurns(pack);
  let before = (kept.length > 0 ? Math.min(...kept) : sent) - 1;
  while (before >= 0 && reasons.get(before) === 'before-user-turn') before -= 1;
  return before >= 0 && reasons.get(before)?.overBudget !== undefined;
}

/** `messages` (which begin at `offset` in the caller's list) trimmed by
 * the core, as `trimMessages` asks. */
async function trimPack(messages, offset, options, builder) {
  const {
    head, maxTokens, tokenCounter, countsMessages, model, entryOverhead, starts,
  } = options;
  let turns = turnsOf(messages, offset, options.price);
  let systemPrompt = options.systemPrompt;
  let counter = null;
  if (countsMessages) {
    // Sent as the core would write them, so that its texts can be told
    // back to the messages they came from (see CountedAsMessages).
    turns = turns.map((t) => ({ ...t, content: written(t.content) }));
    systemPrompt = written(systemPrompt);
    counter = new CountedAsMessages(tokenCounter, messages, turns, head[0]);
  }
  const base = counter === null ? 0 : await counter.countBase();
  let held = 0;
  if (counter !== null) {
    // A content several messages send is counted as the least of them,
    // and each turn is charged the rest of its own beside it.
    const extras = await Promise.all(turns.map((t, i) => counter.extra(messages[i], t.content)));
    turns = turns.map((t, i) => (extras[i] > 0 ? { ...t, attachedTokens: extras[i] } : t));
    // What the system message costs beyond its text's count, always sent.
    held = head.length > 0 ? await counter.extra(head[0], systemPrompt) : 0;
  }
  let pack;
  try {
    pack = await builder.assemble({
      conversation: turns,
      budget: Math.max(maxTokens - base - held, 0),
      tokenizer: counter === null ? tokenCounter : { host: 'tokenCounter' },
      model,
      systemPrompt,
      entryOverhead: counter !== null && entryOverhead === undefined ? 0 : entryOverhead,
      conversationStart: starts.length > 0 ? 'user-turn' : 'any-turn',
      form: 'messages',
      // As LangChain.js's trim does, the newest turns that fit, turn by
      // turn: not the steps of a cache-first layout.
      layout: 'context-first',
    }, counter === null ? undefined : { countTokens: (_t, texts) => counter.countTokens(texts) });
  } catch (e) {
    if (counter?.failure != null) throw counter.failure;
    // The system message kept with includeSystem is alone over it.
    const short = e?.error?.mandatoryOverBudget;
    if (short != null && head.length > 0) {
      const need = short.mandatoryTokens + base + held;
      throw refuse('options.maxTokens', `the system message alone is ${need} tokens as counted, over maxTokens (${maxTokens}); `
        + "ctxpack never goes over maxTokens (LangChain.js's trimMessages keeps it anyway): raise maxTokens, or leave includeSystem off");
    }
    if (counter === null && e?.error?.hostFailed?.capability === 'counter.count-tokens') {
      throw refuse('options.tokenCounter', `'${model}' is counted by its provider: give tokenCounter a function of messages or a model that counts as it does`);
    }
    throw asArgument(e);
  }
  return pack;
}

/** The blank line before a rendered message: where the whole rendered
 * conversation is cut back into its messages. */
const BEFORE_MESSAGE = /\n\n(?=\[(?:user|assistant|system|tool)\] )/;

/** `text` without what the core removes from every text it writes:
 * control characters other than tab and line breaks, and tag characters.
 * The drop-ins send it so, and the core's texts then differ from it only
 * where it turned the opening bracket of a tag-like structure into `(`,
 * character for character. */
const written = (text) => text.replace(/(?![\t\n\r])[\p{Cc}\u{E0000}-\u{E007F}]/gu, '');

/** Whether `text` is `given` as the core writes it: the same characters
 * but where `text` has `(` for an opening bracket. */
function defused(text, given) {
  const a = Array.from(text);
  const b = Array.from(given);
  return a.length === b.length && a.every((c, i) => c === b[i] || c === '(');
}

/**
 * `strategy: 'first'`: the longest run of the oldest messages whose count
 * is within `maxTokens`, as LangChain.js's, a tool call never apart from
 * its results (the run ends before a call whose results do not all fit),
 * a result whose call is not before it never kept, then cut back to the
 * last message of `endOn`'s types. A counter of messages counts each run
 * it weighs, as LangChain.js's does; a tokenizer counts each message as
 * it is sent, in one pass of the core.
 */
async function first(messages, maxTokens, tokenCounter, counting, endOn, builder, split) {
  const turns = turnsOf(messages, 0, counting.price);
  // Where a run may end: not inside a tool call's unit.
  const lastOf = new Map();
  turns.forEach((t, i) => { if (t.toolCallId != null) lastOf.set(t.toolCallId, i); });
  const ends = Array(turns.length + 1).fill(true);
  const orphan = Array(turns.length).fill(false);
  const opened = new Set();
  turns.forEach((t, i) => {
    const id = t.toolCallId;
    if (id == null) return;
    if (t.role === 'tool' && !opened.has(id)) {
      orphan[i] = true;
      return;
    }
    opened.add(id);
    for (let k = i + 1; k <= lastOf.get(id); k += 1) ends[k] = false;
  });
  const keep = (k) => messages.slice(0, k).filter((_, i) => !orphan[i]);
  let count;
  if (tokenCounter !== null) {
    const counter = new CountedAsMessages(tokenCounter, [], [], undefined);
    count = async (k) => counter.checked(await counter.countList(keep(k)));
  } else {
    // Each message as it is sent: one pass of the core counts them all.
    const pack = await counted(turns, counting, builder);
    const tokens = new Map(pack.entries.filter((e) => e.id.startsWith('turn-'))
      .map((e) => [Number(e.id.slice(5)), e.tokens]));
    const own = [...tokens.values()].reduce((a, b) => a + b, 0);
    const overhead = tokens.size === 0 ? 0 : Math.floor((pack.snapshot.messageTokens - own) / tokens.size);
    const prefix = [0];
    turns.forEach((_, i) => prefix.push(prefix[i] + (tokens.has(i) ? tokens.get(i) + overhead : 0)));
    count = async (k) => prefix[k];
  }
  // The longest run within the budget (counts grow with the run).
  let low = 0;
  let high = messages.length;
  if (await count(high) > maxTokens) {
    high -= 1;
    while (low < high) {
      const mid = Math.floor((low + high + 1) / 2);
      if (await count(mid) <= maxTokens) low = mid;
      else high = mid - 1;
    }
  }
  let idx = high;
  const types = endOn == null ? null : typesOf(endOn);
  while (idx > 0 && !ends[idx]) idx -= 1;
  if (split !== null && idx < messages.length) {
    // allowPartial: the start of the next message, as much as fits.
    const cut = await partial(messages[idx], keep(idx), maxTokens, counterOf(tokenCounter, counting, builder), split, false);
    if (cut !== null && (types === null || types.includes(typeOf(cut)))) return [...keep(idx), cut];
  }
  // As LangChain.js's: cut back to the last message of endOn's types.
  while (types !== null && idx > 0 && !types.includes(typeOf(messages[idx - 1]))) {
    idx -= 1;
    while (idx > 0 && !ends[idx]) idx -= 1;
  }
  return keep(idx);
}

/** A count of a list of messages as the trim counts it: the caller's
 * counter (LangChain.js's), or each message as it is sent — its content
 * and overhead — by the core. */
function counterOf(tokenCounter, counting, builder) {
  if (tokenCounter !== null) {
    const counter = new CountedAsMessages(tokenCounter, [], [], undefined);
    return async (list) => counter.checked(await counter.countList(list));
  }
  return async (list) => (list.length === 0 ? 0 : (await counted(turnsOf(list, 0, counting.price), counting, builder)).snapshot.messageTokens);
}

/** LangChain.js's default `textSplitter`: lines, each with its line break. */
function lines(text) {
  const splits = text.split('\n');
  return [...splits.slice(0, -1).map((t) => `${t}\n`), splits[splits.length - 1]];
}

/** `textSplitter` as a function of a text: a LangChain.js TextSplitter
 * (its `splitText`) or a function; lines when none. */
function splitterOf(textSplitter) {
  if (textSplitter == null) return async (text) => lines(text);
  if (typeof textSplitter.splitText === 'function') return (text) => textSplitter.splitText(text);
  if (typeof textSplitter === 'function') return async (text) => textSplitter(text);
  throw refuse('options.textSplitter', `expected a function of a text or a LangChain.js TextSplitter, got ${typeof textSplitter}`);
}

/** A copy of `m` holding `content` (a LangChain.js message as its own class). */
function withContent(m, content) {
  if (langchainType(m) === undefined) return { ...m, content };
  const fields = Object.fromEntries(Object.entries(m).filter(([k]) => k !== 'type' && !k.startsWith('lc_')));
  return new m.constructor({ ...fields, content });
}

/**
 * `allowPartial`: the most of message `m` that fits in `room` beside
 * `kept`, as LangChain's trim cuts it — whole blocks of a list content
 * first (those at the end when `keepEnd`, as the newest messages are
 * kept, else those at the start), then the splits of its text; null when
 * nothing of it fits. A message of a tool call's unit is never cut (its
 * call or results would be parted).
 */
async function partial(m, kept, room, count, split, keepEnd) {
  if (conversationOf([m])[0].toolCallId != null) return null;
  const { content } = m;
  let text = content;
  if (Array.isArray(content)) {
    for (let k = content.length - 1; k > 0; k -= 1) {
      const cut = withContent(m, keepEnd ? content.slice(content.length - k) : content.slice(0, k));
      if (await count(keepEnd ? [cut, ...kept] : [...kept, cut]) <= room) return cut;
    }
    // Then the text of the one block left (the last when the end is
    // kept), if it is text.
    const last = keepEnd ? content[content.length - 1] : content[0];
    text = typeof last === 'string' ? last : last?.type === 'text' ? last.text : undefined;
  }
  if (typeof text !== 'string' || text === '') return null;
  const splits = await split(text);
  if (!Array.isArray(splits) || !splits.every((t) => typeof t === 'string')) {
    throw refuse('options.textSplitter', 'expected a list of texts');
  }
  const base = await count(kept);
  const taken = (k) => withContent(m, (keepEnd ? splits.slice(splits.length - k) : splits.slice(0, k)).join(''));
  let low = 0;
  let high = splits.length;
  while (low < high) {
    const mid = Math.floor((low + high + 1) / 2);
    if (base + await count([taken(mid)]) <= room) low = mid;
    else high = mid - 1;
  }
  return low > 0 ? taken(low) : null;
}

/** `turns` assembled whole, each counted as the message it is sent as:
 * the model's tokenizer and overhead taken from a first, empty assembly
 * when `counting` names a model. */
async function counted(turns, { tokenCounter, model, entryOverhead }, builder) {
  let tokenizer = tokenCounter;
  let overhead = entryOverhead;
  if (model != null) {
    const probe = await builder.assemble({ model, tokenizer, entryOverhead, form: 'messages' });
    tokenizer = probe.snapshot.tokenizer;
    if (overhead === undefined) overhead = probe.snapshot.model?.profile.messageOverhead;
  }
  try {
    return await builder.assemble({
      conversation: turns, budget: U32_MAX, tokenizer, entryOverhead: overhead, conversationStart: 'any-turn', form: 'messages',
    });
  } catch (e) {
    throw asArgument(e);
  }
}

/**
 * A LangChain.js `tokenCounter` (a function of a list of messages, or a
 * model's `getNumTokens`), lent as the host's counter. The core asks for
 * the count of texts: a message's content (what is sent), the system
 * prompt and, for the flat text it records beside the messages, a message
 * as it is rendered (`[role] content`), the blank line that joins two
 * (never sent: no tokens) and the text around a join. A content that
 * several messages share counts as the costliest of them (a counter may
 * charge roles apart). Each is counted
 * as the messages it stands for, the caller's own, as they were given;
 * the whole text as the list of its messages — cut before each message's
 * header, each part found by its text (the messages are sent as the core
 * writes them, control characters removed) or, where the core defused a
 * tag-like structure in it, by its role and the rest of its characters —;
 * any other text
 * (none is asked when nothing is cut) as one user message holding it. A
 * count a counter adds once per list (the empty list's, `base`) is taken
 * off every count and off the budget once, so that counts add up as the
 * list's do.
 */
class CountedAsMessages {
  constructor(tokenCounter, messages, turns, system) {
    this.countList = typeof tokenCounter === 'function'
      ? async (list) => tokenCounter(list)
      : async (list) => {
        const counts = await Promise.all(list.map((m) => tokenCounter.getNumTokens(m.content)));
        return counts.reduce((a, b) => a + b, 0);
      };
    this.langchain = messages.some((m) => langchainType(m) !== undefined);
    // Each message by the texts the core writes it as (`turns` are already
    // `written`), exactly; and by role ('' for a content alone) and length
    // in characters, for a text the core defused.
    this.byText = new Map();
    this.byLength = new Map();
    const all = turns.map((t, i) => [messages[i], t.role, t.content]);
    if (system !== undefined) all.unshift([system, '', written(conversationOf([system])[0].content)]);
    const add = (key, m) => {
      if (!this.byText.has(key)) this.byText.set(key, m);
    };
    const index = (role, content, m) => {
      const key = `${role}\n${Array.from(content).length}`;
      if (!this.byLength.has(key)) this.byLength.set(key, []);
      this.byLength.get(key).push([content, m]);
    };
    for (const [m, role, content] of all) {
      if (role) add(`[${role}] ${content}`, m);
      index(role, content, m);
    }
    // The messages each content is sent as.
    this.sharing = new Map();
    for (const [m, role, content] of all) {
      add(content, m);
      if (!this.sharing.has(content)) this.sharing.set(content, []);
      this.sharing.get(content).push(m);
      if (role) index('', content, m);
    }
    // The most parts one message's text is cut into.
    this.widest = all.reduce((most, [, , c]) => Math.max(most, c.split(BEFORE_MESSAGE).length), 1);
    this.base = 0;
    this.system = system;
    this.counted = new Map();
    this.failure = null;
  }

  /** The count of no messages (a counter that cannot give it adds nothing). */
  async countBase() {
    try {
      const n = await this.countList([]);
      this.base = Number.isInteger(n) && n >= 0 ? n : 0;
    } catch {
      this.base = 0;
    }
    return this.base;
  }

  async countTokens(texts) {
    try {
      return await Promise.all(texts.map((t) => this.count(t)));
    } catch (e) {
      // Kept, so that trimMessages throws it as the caller's counter
      // threw it (the assembly only records a failed call).
      this.failure = e;
      throw e;
    }
  }

  async count(text) {
    // The blank line that joins two messages is never sent; a message of
    // whitespace is.
    if (text === '\n\n' || (text.trim() === '' && this.messageOf(text) === undefined)) return 0;
    const shared = await this.shared(text);
    if (shared !== null) return Math.min(...shared.values());
    return this.checked(await this.countList(this.messagesOf(text) ?? [await this.madeUp(text)])) - this.base;
  }

  /** The count of each message that sends `content`, when several do (a
   * counter may charge roles apart: an empty AI message more than an empty
   * human one); null when one does. */
  async shared(content) {
    const sharers = this.sharing.get(content) ?? [];
    if (sharers.length < 2) return null;
    if (!this.counted.has(content)) {
      const counts = await Promise.all(sharers.map(async (m) => this.checked(await this.countList([m])) - this.base));
      this.counted.set(content, new Map(sharers.map((m, i) => [m, counts[i]])));
    }
    return this.counted.get(content);
  }

  /** What message `m` costs beyond its `content`'s count (the least of
   * those that send it), so that each is charged its own exactly: a turn's
   * attached tokens; the system message's is taken off the budget (it is
   * always kept). */
  async extra(m, content) {
    const shared = await this.shared(content);
    return shared === null ? 0 : shared.get(m) - Math.min(...shared.values());
  }

  /** A count as given, no less than `base`. */
  checked(n) {
    if (!Number.isInteger(n) || n < 0) {
      throw refuse('options.tokenCounter', `expected a whole number of tokens, got ${JSON.stringify(n)}`);
    }
    return Math.max(n, this.base);
  }

  /** The message `text` renders, if one does. */
  messageOf(text) {
    const found = this.byText.get(text);
    if (found !== undefined) return found;
    const header = /^\[(user|assistant|system|tool)\] /.exec(text);
    const [role, body] = header === null ? ['', text] : [header[1], text.slice(header[0].length)];
    const candidates = this.byLength.get(`${role}\n${Array.from(body).length}`) ?? [];
    return candidates.find(([content]) => defused(body, content))?.[1];
  }

  /** The messages `text` renders, in order; null when it renders none (a cut text). */
  messagesOf(text) {
    const one = this.messageOf(text);
    if (one !== undefined) return [one];
    const parts = text.split(BEFORE_MESSAGE);
    // back[j]: where the last message of parts[:j] begins, and that message
    // (a message's content may hold what looks like a header).
    const back = new Array(parts.length + 1).fill(null);
    back[0] = [0, null];
    for (let i = 0; i < parts.length; i += 1) {
      if (back[i] === null) continue;
      for (let j = i + 1; j <= Math.min(parts.length, i + this.widest); j += 1) {
        const m = this.messageOf(parts.slice(i, j).join('\n\n'));
        if (m !== undefined && back[j] === null) back[j] = [i, m];
      }
    }
    if (back[parts.length] !== null) {
      const out = [];
      for (let j = parts.length; j > 0; j = back[j][0]) out.push(back[j][1]);
      return out.reverse();
    }
    return null;
  }

  /** One user message holding `text`, of the caller's kind. */
  async madeUp(text) {
    if (!this.langchain) return { role: 'user', content: text };
    const { HumanMessage } = await import(
      /* @vite-ignore */ /* webpackIgnore: true */ LANGCHAIN_MESSAGES
    );
    return new HumanMessage(text);
  }
}

/** LangChain's message types, by the roles a plain message gives (read as
 * the conversation reads them, `ROLES`). */
const TYPES = Object.fromEntries(Object.entries(ROLES)
  .map(([name, role]) => [name, { user: 'human', assistant: 'ai' }[role] ?? role]));

/** A message's LangChain type (`'human'`, `'ai'`, …). */
const typeOf = (m) => langchainType(m) ?? TYPES[m?.role];

/** The type names `types` stands for: names, or message classes (as
 * LangChain.js reads a class: the type of one made empty). */
function typesOf(types, option = 'options.endOn') {
  return [types].flat().map((t) => {
    if (typeof t === 'string') return t;
    if (typeof t === 'function') {
      const type = langchainType(new t({}));
      if (type !== undefined) return type;
    }
    throw refuse(option, `expected message type names ('human', 'ai', …) or message classes, got ${String(t)}`);
  });
}

/** The options `trim` reads (LangChain.js's names, and `builder`). */
const TRIM_OPTIONS = [
  'maxTokens', 'tokenCounter', 'model', 'strategy', 'allowPartial', 'startOn', 'includeSystem',
  'entryOverhead', 'endOn', 'textSplitter', 'imageTokens', 'builder',
];

/**
 * An option `trim` does not read would be ignored in silence (the
 * Python spelling `include_system` kept no system message): refused,
 * naming the option it looks like.
 */
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

/** A value in an error, its type plain: a string quoted, NaN as NaN. */
const shown = (v) => (typeof v === 'string' ? JSON.stringify(v) : String(v));

const U32_MAX = 0xffffffff;
const isU32 = (v) => Number.isInteger(v) && v >= 0 && v <= U32_MAX;

/** The request fields `trim` fills from its options, by option. */
const OPTIONS = {
  'request.tokenizer': 'options.tokenCounter',
  'request.budget': 'options.maxTokens',
  'request.model': 'options.model',
};

/**
 * A refusal of a request field `trim` filled from an option, as a
 * refusal of that option (`options.tokenCounter`, not
 * `request.tokenizer`): the caller never wrote the request.
 */
function asArgument(e) {
  const field = e?.error?.invalidField?.field;
  const from = typeof field === 'string'
    ? Object.keys(OPTIONS).find((k) => field === k || field.startsWith(`${k}.`))
    : undefined;
  return from === undefined ? e : refuse(OPTIONS[from] + field.slice(from.length), e.error.invalidField.message);
}
