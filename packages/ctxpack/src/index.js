// ctxpack for JavaScript and TypeScript: what goes into an LLM's context
// window, within an exact token budget, with the reason every candidate
// was taken or dropped. The Rust core runs as WebAssembly (wasm-bindgen);
// the stores stay yours, lent as callbacks that may return Promises.
//
// The values are the WIT's types with camelCase fields (see types.d.ts);
// enum names and variant names written as strings keep their kebab-case
// ("over-budget", "o200k-base").
import initWasm, {
  Builder as RawBuilder,
  Router as RawRouter,
  diffSnapshots as rawDiff,
  __wbg_reset_state as resetModule,
} from '../dist/ctxpack_web.js';

import { refuseUnknownOptions, trim } from './chat.js';
import { explainReason } from './explain.js';

export { explainReason };

export { chat, toLangChain } from './chat.js';
import { CALLS, DEFAULT_PROFILE, PROFILES } from './calls.js';
import { NOT_PROVIDED, wording } from './errors.js';

const isNode = typeof process !== 'undefined' && process.versions != null && process.versions.node != null;

const NODE_FS = 'node:fs/promises';
let ready = null;

/**
 * Loads the WebAssembly module once. `source` is what wasm-bindgen's
 * init takes (a URL, a Response, bytes or a compiled WebAssembly.Module);
 * by default the `.wasm` beside this file, read from disk under Node and
 * fetched in a browser. Every factory awaits it.
 */
export function init(source) {
  if (ready === null) {
    ready = (async () => {
      let module = source;
      if (module === undefined && isNode) {
        // Out of a bundler's sight: a browser build has no use for it.
        const { readFile } = process.getBuiltinModule?.(NODE_FS)
          ?? await import(/* @vite-ignore */ /* webpackIgnore: true */ NODE_FS);
        module = await readFile(new URL('../dist/ctxpack_web_bg.wasm', import.meta.url));
      }
      await initWasm(module === undefined ? undefined : { module_or_path: module });
    })();
    ready.catch(() => { ready = null; });
  }
  return ready;
}

/** `keep-last` → `keepLast`. */
const camel = (s) => s.replace(/-([a-z0-9])/g, (_, c) => c.toUpperCase());

/**
 * The core names fields as the WIT spells them and says where in the JSON
 * text it stopped: the error as the caller spells it, its field path and
 * the field names of its message camelCased (value names, such as an
 * unknown variant's, keep theirs), without a position in text the caller
 * never wrote. Changes `error` in place and gives it back.
 */
function respell(error) {
  const v = error?.invalidField;
  if (v && typeof v.field === 'string' && typeof v.message === 'string') {
    v.field = camel(v.field);
    v.message = v.message.replace(/ at line \d+ column \d+$/, '');
    if (/^(unknown|missing) field `/.test(v.message)) {
      v.message = v.message.replace(/`([^`]*)`/g, (_, name) => `\`${camel(name)}\``);
    }
  }
  return error;
}

/** The core's wording of `error` (see errors.js). */
function describe(error) {
  if (typeof error === 'string') return error;
  const [[tag, v]] = Object.entries(error);
  return wording(tag, v);
}

/** A refusal from ctxpack: `.error` is the typed `CtxpackError` value. */
export class CtxpackError extends Error {
  constructor(error) {
    super(describe(error));
    this.name = 'CtxpackError';
    this.error = error;
  }
}

/**
 * An assembly that gave no pack: `.failure` says why and carries the
 * failed snapshot (`.snapshot`) when the assembly had begun.
 */
export class AssemblyFailed extends CtxpackError {
  constructor(failure) {
    super(failure.error);
    this.name = 'AssemblyFailed';
    this.failure = failure;
  }

  get snapshot() {
    return this.failure.snapshot;
  }
}

/**
 * Throw it from a callback for that call to fail with exactly `message`
 * (any other throw fails it with "Name: message").
 */
export class HostError extends Error {
  constructor(message) {
    super(message);
    this.name = 'HostError';
  }
}

/** The error a wasm-bindgen export threw (a ctxpack-error as JSON). */
function refusal(thrown) {
  if (isTrap(thrown)) return replaced(thrown);
  if (typeof thrown !== 'string') return thrown;
  let error;
  try {
    error = respell(JSON.parse(thrown));
  } catch {
    error = thrown;
  }
  return new CtxpackError(error);
}

/**
 * The WebAssembly trapped: a fault in ctxpack (a bug: please report it
 * with the input), or a limit of the engine such as its memory. The module
 * was replaced with a fresh instance: the next call works, and a Builder
 * or Router made before is made again from its configuration on its next
 * use (a builder's counts made so far are gone). `cause` is the trap.
 */
export class ComponentTrapped extends Error {
  constructor(cause, resetError) {
    super(resetError === undefined
      ? `ctxpack's WebAssembly trapped (${cause?.message ?? cause}); it was replaced, and the next call gets a fresh instance`
      : `ctxpack's WebAssembly trapped (${cause?.message ?? cause}) and could not be replaced (${resetError?.message ?? resetError}): load the package again`,
    { cause });
    this.name = 'ComponentTrapped';
  }
}

/** Whether `e` is the engine stopping the WebAssembly mid-call. */
function isTrap(e) {
  return e instanceof WebAssembly.RuntimeError
    || (e instanceof RangeError && /call stack/i.test(e.message));
}

/** How many times the module has been replaced after a trap. */
let generation = 0;

/** Replaces the trapped module (every object made in it is stale). */
function replaced(trap) {
  generation += 1;
  try {
    resetModule();
  } catch (e) {
    return new ComponentTrapped(trap, e);
  }
  return new ComponentTrapped(trap);
}

/** How each Builder and Router is made again after a trap. */
const makers = new WeakMap();

/** `wrapper`'s object in the module now: made again if the module was
 * replaced since it was made. */
function live(wrapper) {
  const m = makers.get(wrapper);
  if (m !== undefined && m.generation !== generation) {
    wrapper.raw = call(m.make);
    m.generation = generation;
  }
  return wrapper.raw;
}

/** Remembers how `wrapper`'s object is made, and makes it. */
function made(wrapper, make) {
  makers.set(wrapper, { make, generation });
  return wrapper;
}

/** Frees `raw` unless the module it lived in was replaced (gone with it). */
function free(raw, since) {
  if (since === generation) raw.free();
}

function call(f) {
  try {
    return f();
  } catch (e) {
    throw refusal(e);
  }
}

const utf8 = new TextEncoder();
const NOTHING = new Uint8Array(0);

/** JSON of a caller's value as UTF-8; `undefined` fields are left out. A
 * chat's messages (the provider's, in the provider's spelling) are
 * written as JSON text, so that the camelCase respelling of the request's
 * keys never reaches them. */
function json(value, field) {
  if (value === undefined) return utf8.encode('{}');
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new CtxpackError({ invalidField: { field, message: `expected an object, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}` } });
  }
  const c = value.chat;
  if (c != null && typeof c === 'object' && c.messages !== undefined && typeof c.messages !== 'string') {
    value = { ...value, chat: { ...c, messages: JSON.stringify(c.messages) } };
  }
  return utf8.encode(JSON.stringify(value));
}


/** What a host without a callback of its own answers: a host without a
 * policy engine allows every item. */
const DEFAULTS = {
  review: (context, items) => items.map(() => 'allow'),
};

const isThenable = (v) => v != null && typeof v.then === 'function';

/**
 * What a callback throws that is a mistake in its code, not its store
 * failing (`undefined.id`, a misspelt variable): thrown at the caller as
 * it was thrown, never recorded as a degraded source.
 */
const isMistake = (e) => e instanceof TypeError || e instanceof ReferenceError;

function failureOf(capability, e) {
  const message = e instanceof HostError ? e.message
    : e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return { err: { capability, message } };
}

/**
 * Runs each thunk: its value or its failure, as `{ok}` or `{err}`. When a
 * thunk gives a Promise, the answers come as one Promise for all.
 */
function settle(calls) {
  const results = calls.map(([capability, thunk]) => {
    if (thunk === null) return { err: { capability, message: NOT_PROVIDED } };
    const failed = (e) => {
      if (isMistake(e)) throw e;
      return failureOf(capability, e);
    };
    try {
      const v = thunk();
      return isThenable(v) ? Promise.resolve(v).then((ok) => ({ ok }), failed) : { ok: v };
    } catch (e) {
      return failed(e);
    }
  });
  return results.some(isThenable) ? Promise.all(results) : results;
}

/** An answer the core refused: the field named after the callback. */
function answerRefused(e, names) {
  const field = e.error?.invalidField?.field;
  if (typeof field === 'string') {
    const m = /^answer(?:\[(\d+)\])?(?:\.(?:ok|err))?(.*)$/.exec(field);
    if (m) {
      const name = m[1] === undefined ? names[0] : names[Number(m[1])];
      e.error.invalidField.field = `${name}()${m[2]}`;
      e.message = describe(e.error);
    }
  }
  return e;
}

/**
 * Drives an assembly to its outcome's JSON text (`{"pack": …}`, …); with
 * `apart`, to `[text, snapshot]`: the snapshot's own text, `null` in its
 * place in the outcome.
 */
async function drive(raw, callbacks, context, apart = false) {
  let answer = NOTHING;
  let asked = [];
  for (;;) {
    let text;
    try {
      text = raw.step(answer, apart);
    } catch (e) {
      throw answerRefused(refusal(e), asked);
    }
    if (text.startsWith('{"done":')) return apart ? [text.slice(8, -1), call(() => raw.snapshot())] : text.slice(8, -1);
    const step = JSON.parse(text);
    if (!Array.isArray(step.calls)) {
      throw new CtxpackError({ stepMismatch: `a step this package does not know: ${text.slice(0, 80)}` });
    }
    asked = [];
    const calls = step.calls.map((call) => {
      const [[name, args]] = Object.entries(call);
      const known = CALLS[name];
      if (known === undefined) {
        throw new CtxpackError({ stepMismatch: `a call this package does not know: ${name}` });
      }
      asked.push(name);
      const f = callbacks[name] ?? DEFAULTS[name];
      if (typeof f !== 'function') return [known.capability, null];
      const values = known.params.map((p) => args[p]);
      if (known.context) values.unshift(context);
      return [known.capability, () => f.apply(callbacks, values)];
    });
    let results = settle(calls);
    if (isThenable(results)) results = await results;
    answer = utf8.encode(answerText(results, asked));
  }
}

/**
 * The answers' JSON text. A typed array (`Uint32Array` counts) is sent as
 * the array it holds; a BigInt, which JSON cannot hold, is refused naming
 * the callback that answered it.
 */
function answerText(results, names) {
  for (const r of results) {
    if (ArrayBuffer.isView(r.ok)) r.ok = Array.from(r.ok, Number);
  }
  try {
    return JSON.stringify(results);
  } catch (e) {
    if (!(e instanceof TypeError) || !/BigInt/.test(e.message)) throw e;
    const at = results.findIndex((r) => {
      try {
        JSON.stringify(r);
        return false;
      } catch {
        return true;
      }
    });
    throw new TypeError(`${names[at] ?? names[0]}(): answered a BigInt, which is not sent; answer Numbers`);
  }
}

/**
 * The outcome, read: the pack (or handling); its snapshot — 10k entries
 * for a 10k-candidate pack — is read from its text when first looked at.
 */
function outcome([text, snapshotText]) {
  const reply = JSON.parse(text);
  const holder = reply.pack ?? reply.failed ?? reply.handled?.dispatch?.fallback?.pack;
  if (holder && snapshotText != null) {
    let snapshot;
    Object.defineProperty(holder, 'snapshot', {
      enumerable: true,
      configurable: true,
      get() {
        if (snapshot === undefined) snapshot = JSON.parse(snapshotText);
        return snapshot;
      },
      set(value) {
        snapshot = value;
      },
    });
  }
  if (reply.failed) {
    respell(reply.failed.error);
    throw new AssemblyFailed(reply.failed);
  }
  return reply.pack ?? reply.handled ?? reply.trimmed;
}

/** Which sources each profile may call: `PROFILES['rag']` is `['sources.retrieve']`. */
export { PROFILES };

/** The profile a configuration names, as PROFILES keys it (kebab-case). */
function profileOf(config) {
  const p = config?.profile;
  const name = p == null ? DEFAULT_PROFILE : typeof p === 'string' ? p : Object.keys(p)[0];
  return Object.keys(PROFILES).find((k) => k === name || camel(k) === name) ?? name;
}

/**
 * Callbacks that cannot be lent are a mistake that would pass silently
 * (every call "not provided", a degraded pack): a function where an object
 * of callbacks is wanted, or a method one or two letters from a callback's
 * name (`retreive`) while that callback is missing, throws a TypeError
 * naming both.
 */
function refuseMisspelt(callbacks) {
  if (callbacks == null) return;
  const known = Object.keys(CALLS);
  if (typeof callbacks === 'function') {
    throw new TypeError(`callbacks: a function cannot lend ${known.join(', ')}; pass an object with those methods`);
  }
  const missing = known.filter((name) => typeof callbacks[name] !== 'function');
  const names = new Set();
  for (let o = callbacks; o != null && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const name of Object.getOwnPropertyNames(o)) names.add(name);
  }
  for (const name of names) {
    const near = missing.find((m) => lettersApart(name, m) <= 2);
    if (near !== undefined && name !== 'constructor' && typeof callbacks[name] === 'function') {
      throw new TypeError(`callbacks.${name}: ctxpack calls callbacks.${near}(), which this object does not have — a misspelling?`);
    }
  }
}

/** Edits (a letter put in, left out, changed, or two swapped) from `a` to `b`. */
function lettersApart(a, b) {
  let before = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const row = [i];
    for (let j = 1; j <= b.length; j += 1) {
      let d = Math.min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2] + 1);
      row.push(d);
    }
    before = prev;
    prev = row;
  }
  return prev[b.length];
}

/**
 * The callbacks of one call: those given for it, then the builder's for
 * what it does not give (an assembly given only `countTokens` still asks
 * the builder's stores). Each is called on the object that lent it.
 */
function lent(given, held) {
  if (given == null) return held;
  const out = {};
  for (const name of Object.keys(CALLS)) {
    for (const from of [given, held]) {
      if (from != null && typeof from[name] === 'function') {
        out[name] = (...args) => from[name](...args);
        break;
      }
    }
  }
  return out;
}

/**
 * Lending a source the builder's profile never calls is a mistake (it
 * would silently never be asked): refused, naming the profiles that do.
 */
function refuseUnused(profile, callbacks) {
  const calls = PROFILES[profile];
  if (calls === undefined || callbacks == null) return; // the core names a wrong profile
  for (const [name, known] of Object.entries(CALLS)) {
    if (!known.capability.startsWith('sources.') || typeof callbacks[name] !== 'function') continue;
    if (calls.includes(known.capability)) continue;
    const would = Object.keys(PROFILES).filter((p) => PROFILES[p].includes(known.capability));
    throw new CtxpackError({
      invalidField: {
        field: `callbacks.${name}`,
        message: `the builder's profile \`${camel(profile)}\` never calls it; `
          + `${would.map((p) => `\`${camel(p)}\``).join(' or ')} would (config.profile)`,
      },
    });
  }
}

/**
 * A router: a pure function of the raw query, compiled once from its YAML
 * or JSON configuration (the router's file, in its own spelling).
 */
export class Router {
  constructor(raw) {
    this.raw = raw;
  }

  static async create(config, format = 'yaml') {
    await init();
    const make = () => new RawRouter(config, format);
    return made(new Router(call(make)), make);
  }

  /** The routing decision on a raw query. */
  route(query) {
    return JSON.parse(call(() => live(this).route(query)));
  }

  /** Releases the router's memory now (it is released when collected otherwise). */
  free() {
    free(this.raw, makers.get(this)?.generation ?? generation);
  }
}

/**
 * A context builder: a configuration and the callbacks that lend it your
 * stores. Construct it once and reuse it: it keeps the token counts it
 * has made between assemblies.
 */
export class Builder {
  constructor(raw, callbacks, profile = DEFAULT_PROFILE) {
    this.raw = raw;
    this.callbacks = callbacks ?? {};
    this.profile = profile;
  }

  /**
   * `config` is a BuilderConfig (`{}` or nothing: every default);
   * `callbacks` is an object with any of retrieve, expandGraph,
   * recallMemory, repositoryState, review (by default every item is
   * allowed), summarize and countTokens (the counter of a request whose
   * tokenizer is `{host: name}`, or whose model's profile counts with the
   * host: `countTokens(tokenizer, texts)` answers one count per text). A
   * callback it lacks is a source this host does not provide; one the configuration's profile never calls is refused.
   * Throws a CtxpackError naming a wrong field.
   */
  static async create(config, callbacks) {
    await init();
    const text = json(config, 'config');
    const make = () => new RawBuilder(text);
    const builder = made(new Builder(call(make), callbacks, profileOf(config)), make);
    refuseMisspelt(callbacks);
    refuseUnused(builder.profile, callbacks);
    return builder;
  }

  /** Runs the assembly `start` gives to its outcome (see `drive`). */
  async #run(start, request, callbacks, apart, field = 'request') {
    refuseMisspelt(callbacks);
    const lenders = lent(callbacks, this.callbacks);
    refuseUnused(this.profile, lenders);
    const text = json(request, field);
    const raw = call(() => start(text));
    const since = generation;
    try {
      return await drive(raw, lenders, request?.context, apart);
    } finally {
      free(raw, since);
    }
  }

  /**
   * Counts a CountRequest's texts, and its chat as a request sends it,
   * exactly as an assembly charges them: `{ texts, messages, total, … }`
   * (`builder.count({ model: 'gpt-4o', chat: { shape: 'openai-chat',
   * messages } }).total`). Throws a CtxpackError naming a wrong field.
   */
  count(request) {
    return JSON.parse(call(() => live(this).count(json(request, 'count'))));
  }

  /**
   * Each text's tokens, as `count` counts them, with `options.model` or
   * `options.tokenizer` ('o200k-base' when neither is given): the texts
   * cross as their bytes, never written into JSON.
   */
  countTexts(texts, options = {}) {
    const list = Array.from(texts);
    const parts = list.map((t, i) => {
      if (typeof t !== 'string') throw new TypeError(`texts[${i}]: expected a string, got ${typeof t}`);
      return utf8.encode(t);
    });
    const bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    const ends = new Uint32Array(parts.length);
    let at = 0;
    parts.forEach((p, i) => {
      bytes.set(p, at);
      at += p.length;
      ends[i] = at;
    });
    const { model, tokenizer = model == null ? 'o200k-base' : undefined } = options;
    return Array.from(call(() => live(this).countTexts(json({ model, tokenizer }, 'count'), bytes, ends)));
  }

  /**
   * Trims a chat to a budget as LangChain's trimMessages does, exactly
   * (a TrimRequest; see `trimMessages` for LangChain.js's own options and
   * messages). With `tokenizer: { host: name }`,
   * `callbacks.countMessages(name, lists)` counts each list of messages
   * (the chat's messages by index, and a cut one); with `split: 'host'`,
   * `callbacks.splitText(texts)` splits each text into the pieces a cut
   * message may keep. Resolves to the Trimmed: `kept`, `partial`,
   * `messages` (JSON text) and `tokens`.
   */
  async trim(request, callbacks) {
    try {
      return outcome([await this.#run((text) => live(this).trim(text), request, callbacks ?? {}, false, 'trim'), null]);
    } catch (e) {
      // A trim has no snapshot: its failure is the error alone.
      throw e instanceof AssemblyFailed ? new CtxpackError(e.error) : e;
    }
  }

  /**
   * The outcome as the core wrote it: JSON text with camelCase keys
   * (`{"pack": …}` or `{"failed": …}`), for storing or sending on
   * without reading it.
   */
  assembleText(request, callbacks) {
    return this.#run((text) => live(this).start(text), request, callbacks, false);
  }

  /**
   * Assembles a ContextPack for `request` within its budget. Rejects with
   * AssemblyFailed (carrying the failed snapshot) when there is no pack,
   * and with a CtxpackError naming the field for a wrong request.
   */
  async assemble(request, callbacks) {
    return outcome(await this.#run((text) => live(this).start(text), request, callbacks, true));
  }

  /** `handle`'s outcome as the core wrote it (see assembleText). */
  handleText(router, request, callbacks) {
    return this.#run((text) => live(this).handle(live(router), text), request, callbacks, false);
  }

  /**
   * Routes `request.query`; a confident route without a reference cue is
   * dispatched to its skill asking nothing, any other is assembled and
   * dispatched to the fallback skill. Resolves to the Handling.
   */
  async handle(router, request, callbacks) {
    return outcome(await this.#run((text) => live(this).handle(live(router), text), request, callbacks, true));
  }

  /** Releases the builder's memory now (it is released when collected otherwise). */
  free() {
    free(this.raw, makers.get(this)?.generation ?? generation);
  }
}

/**
 * The tokenizer file a model ships, for a BuilderConfig's `tokenizers`:
 * its text, or its bytes as read (a Node Buffer, a fetched ArrayBuffer, a
 * browser File's bytes). A request then counts with it as
 * `{ named: name }`, exactly as the file's reference implementation does:
 * a Hugging Face tokenizer.json with a byte-level BPE model (Llama 3.x,
 * Qwen 2.5 and 3, Phi-4), Mistral's tekken.json, or a tiktoken rank file,
 * whose `pattern` must be named ('llama3', 'qwen', 'o200k', …). The file
 * is read when the builder is created: one the counting does not follow
 * is refused there, naming what.
 */
export function tokenizerFile(name, file, pattern = null) {
  if (typeof name !== 'string') throw new TypeError('tokenizerFile: `name` must be a string');
  if (typeof file === 'string') return { name, text: file, pattern };
  const bytes = file instanceof ArrayBuffer ? new Uint8Array(file) : file;
  if (!ArrayBuffer.isView(bytes)) {
    throw new TypeError('tokenizerFile: `file` must be the file\'s text or its bytes');
  }
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new TypeError(`tokenizerFile: \`file\` (${name.slice(0, 60)}) is not UTF-8 text: every file ctxpack reads is text (a SentencePiece .model is binary, and not read)`);
  }
  return { name, text, pattern };
}

let counting = null;

/**
 * The tokens of `text` as `options.tokenizer` ('o200k-base' when neither
 * is given) or `options.model`'s profile counts it: one call, the same
 * number as every host and every assembly.
 */
export async function countTokens(text, options = {}) {
  if (typeof text !== 'string') throw new TypeError(`text: expected a string, got ${typeof text}`);
  counting ??= Builder.create();
  counting.catch(() => { counting = null; });
  return (await counting).countTexts([text], options)[0];
}

/**
 * What changed between two snapshots — entered, left, moved, changed
 * tokens — with each candidate's reason before and after.
 */
export async function diffSnapshots(before, after) {
  await init();
  return JSON.parse(call(() => rawDiff(json(before, 'before'), json(after, 'after'))));
}


/** LangChain.js's runnables, where they load at once (Node: the package
 * is required where the user's LangChain is); null elsewhere. */
function runnables() {
  try {
    const { createRequire } = (isNode && process.getBuiltinModule?.('node:module')) || {};
    return createRequire?.(import.meta.url)('@langchain/core/runnables') ?? null;
  } catch {
    return null;
  }
}

/**
 * LangChain.js's `trimMessages(messages, options)`, by ctxpack's core: the
 * newest messages that fit `options.maxTokens`, unchanged (see chat.js).
 * Without `options.builder`, a Builder with every default. Given only the
 * options, as LangChain.js's, a trimmer for a chain: LangChain's
 * RunnableLambda (`trim_messages`) of the messages or a prompt's value
 * where LangChain.js loads at once (Node), else a function with `invoke`
 * and `batch` (`pipe` takes it as a RunnableLambda); an unknown option
 * refused now and its Builder made once.
 */
export function trimMessages(messages, options) {
  const given = messages != null && typeof messages === 'object' && typeof messages[Symbol.iterator] !== 'function';
  if (given && options === undefined) {
    const fixed = { ...messages };
    refuseUnknownOptions(fixed);
    let made;
    const make = () => (made ??= Builder.create());
    // A prompt's value (`prompt.pipe(trimmer)`) gives its messages.
    const messagesOf = (input) => (typeof input?.toChatMessages === 'function' ? input.toChatMessages() : input);
    const trimmer = (input) => trim(messagesOf(input), fixed, make);
    const lc = runnables();
    if (lc?.RunnableLambda) return lc.RunnableLambda.from(trimmer).withConfig({ runName: 'trim_messages' });
    trimmer.invoke = trimmer;
    trimmer.batch = (inputs) => Promise.all(Array.from(inputs, trimmer));
    return trimmer;
  }
  return trim(messages, options ?? {}, () => Builder.create());
}
