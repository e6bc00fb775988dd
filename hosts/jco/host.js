// The ctxpack component transpiled by jco (instantiation mode, so no
// resolve hooks and no module globals: each instance gets its own host
// objects), and a host that drives it.
//
// Two ways in:
// - `instance.json`: the builder and the step protocol with one JSON
//   string each way per step (the WIT's `json` interface), answered here
//   from async callbacks — what the corpus runs through;
// - the typed exports (`instance.builder`) with the typed imports made by
//   `typedImports`, which turns a callback's exception into that call's
//   failure instead of an abort.

import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
// The calls a step may ask for, one per import: the npm package's generated table.
import { CALLS } from '../../packages/ctxpack/src/calls.js';
import { NOT_PROVIDED, wording } from '../../packages/ctxpack/src/errors.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const OUT = path.join(here, '../../target/jco/out');

let compiled = null;

/** Compiles the core modules once per process. */
async function modules() {
  if (!compiled) {
    const { instantiate } = await import(path.join(OUT, 'ctxpack.js'));
    const cache = new Map();
    compiled = {
      instantiate,
      getCoreModule: async (name) => {
        if (!cache.has(name)) {
          cache.set(name, WebAssembly.compile(await readFile(path.join(OUT, name))));
        }
        return cache.get(name);
      },
    };
  }
  return compiled;
}

/** A readable error for a `ctxpack-error` the component gave. */
export class CtxpackError extends Error {
  constructor(error) {
    super(describe(error));
    this.name = 'CtxpackError';
    this.error = error;
  }
}

/** The core's wording of `e` (see packages/ctxpack/src/errors.js). */
function describe(e) {
  return wording(e && e.tag, e && e.val);
}

/** Runs `f`, turning a jco `ComponentError` into a `CtxpackError`. */
export function unwrap(f) {
  try {
    return f();
  } catch (e) {
    if (e && Object.prototype.hasOwnProperty.call(e, 'payload')) {
      const p = e.payload;
      if (p && typeof p.tag === 'string') throw new CtxpackError(p);
      if (p && p.error) throw Object.assign(new CtxpackError(p.error), { failure: p });
    }
    throw e;
  }
}

function failureOf(capability, e) {
  const message = e instanceof HostError ? e.message : `${(e && e.name) || 'Error'}: ${e && e.message !== undefined ? e.message : e}`;
  return { capability, message };
}

/** Throw it in a callback to fail the call with exactly this message. */
export class HostError extends Error {}


/**
 * The typed imports for `host` (an object with any of `retrieve`,
 * `expandGraph`, `recallMemory`, `repositoryState`, `review`,
 * `summarize`, `countTokens`). A callback that throws fails that call; a missing one is
 * not provided. (Typed imports are called synchronously.)
 */
export function typedImports(host) {
  const call = (capability, name, args) => {
    const f = host && host[name];
    try {
      if (typeof f !== 'function') throw new HostError(NOT_PROVIDED);
      return f.apply(host, args);
    } catch (e) {
      // jco makes a thrown object with a `payload` the import's `err`.
      throw { payload: failureOf(capability, e) };
    }
  };
  const imports = { 'ctxpack:context/types': {} };
  for (const [name, { capability }] of Object.entries(CALLS)) {
    const iface = `ctxpack:context/${capability.split('.')[0]}`;
    imports[iface] ??= {};
    imports[iface][name] = (...a) => call(capability, name, a);
  }
  // The transpiled code reads the names without the version; its types
  // name them with it. Both, so either reading finds them.
  for (const [name, value] of Object.entries(imports)) imports[`${name}@0.1.0`] = value;
  return imports;
}

/** A new instance, with its own memory and its own host objects. */
export async function instance(host = {}) {
  const { instantiate, getCoreModule } = await modules();
  return instantiate(getCoreModule, typedImports(host));
}

/** `keep-last` → `keepLast`. */
const camel = (s) => s.replace(/-([a-z0-9])/g, (_, c) => c.toUpperCase());
/** `keepLast` → `keep-last`. */
const kebab = (s) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

async function answer(capability, f) {
  try {
    return { ok: await f() };
  } catch (e) {
    return { err: failureOf(capability, e) };
  }
}

/**
 * Drives a JSON assembly (`json.JsonBuilder#start` / `#handle`) to its
 * end, answering from `host` — the same callbacks as `typedImports`, here
 * given JSON values (kebab-case) and allowed to be async; one round's
 * calls run concurrently. Gives the outcome's text as the component wrote
 * it (`{"pack": …}`, `{"handled": …}` or `{"failed": …}`), and drops
 * the assembly.
 */
export async function drive(assembly, host, context) {
  let done = false;
  try {
    const out = await steps(assembly, host, context);
    done = true;
    return out;
  } finally {
    // Gone from the instance's table now, not when the collector finds it.
    // After a trap the instance cannot be entered to drop it: the trap is
    // the error, not the failed drop.
    try {
      assembly[DISPOSE]?.();
    } catch (e) {
      if (done) throw e;
    }
  }
}

/**
 * The component trapped during a call (a fault in ctxpack, or a limit of
 * the engine such as its memory): its instance was dropped, never to be
 * entered again. `cause` is the trap.
 */
export class ComponentTrapped extends Error {
  constructor(cause) {
    super(`the ctxpack component trapped (${cause?.message ?? cause}): its instance was dropped, and the next call makes a fresh one`, { cause });
    this.name = 'ComponentTrapped';
  }
}

/** Whether `e` is the engine stopping the WebAssembly mid-call. */
const isTrap = (e) => e instanceof WebAssembly.RuntimeError
  || (e instanceof RangeError && /call stack/i.test(e.message));

/**
 * A JSON builder in an instance of its own, replaced when a call traps:
 * that call throws ComponentTrapped, and the next makes a fresh instance
 * and builder from the same configuration and typed host.
 */
export class HeldBuilder {
  #builder = null;

  /** `config`: a builder-config as JSON text; `host`: its typed imports' callbacks. */
  constructor(config = '{}', host = {}) {
    this.config = config;
    this.host = host;
  }

  async #live() {
    if (this.#builder === null) {
      const { json } = await instance(this.host);
      this.#builder = unwrap(() => json.JsonBuilder.create(this.config));
    }
    return this.#builder;
  }

  /** Runs `f` on the builder; a trap drops its instance. */
  async #use(f) {
    const builder = await this.#live();
    try {
      return await f(builder);
    } catch (e) {
      if (!isTrap(e)) throw e;
      this.#builder = null;
      throw new ComponentTrapped(e);
    }
  }

  /** Assembles `request` (JSON text), answering from `host` (see
   * `drive`): the outcome's text. */
  assemble(request, host = {}, context = undefined) {
    return this.#use((b) => drive(unwrap(() => b.start(request)), host, context));
  }
}

const DISPOSE = Symbol.dispose || Symbol.for('dispose');

async function steps(assembly, host, context) {
  let given = '';
  for (;;) {
    const text = unwrap(() => assembly.step(given));
    if (text.startsWith('{"done":')) return text.slice(8, -1);
    const step = JSON.parse(text);
    if (!Array.isArray(step.calls)) throw new Error(`a step this host does not know: ${text.slice(0, 80)}`);
    const answers = await Promise.all(step.calls.map((call) => {
      const [[name, args]] = Object.entries(call);
      const method = camel(name);
      const known = CALLS[method];
      if (known === undefined) throw new Error(`a call this host does not know: ${name}`);
      return answer(known.capability, () => {
        if (typeof host[method] !== 'function') throw new HostError(NOT_PROVIDED);
        const values = known.params.map((p) => args[kebab(p)]);
        return host[method](...(known.context ? [context, ...values] : values));
      });
    }));
    given = JSON.stringify(answers);
  }
}
