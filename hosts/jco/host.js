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

function describe(e) {
  const v = e && e.val;
  switch (e && e.tag) {
    case 'invalid-field':
      return `invalid field \`${v.field}\`: ${v.message}`;
    case 'mandatory-over-budget':
      return `mandatory layer needs ${v.mandatoryTokens} tokens but the budget is ${v.budget}`;
    case 'host-failed':
      return `host import \`${v.capability}\` failed: ${v.message}`;
    default:
      return `${e && e.tag}: ${typeof v === 'string' ? v : JSON.stringify(v)}`;
  }
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

const NOT_PROVIDED = 'not provided by this host';

/**
 * The typed imports for `host` (an object with any of `retrieve`,
 * `expandGraph`, `recallMemory`, `repositoryState`, `review`,
 * `summarize`). A callback that throws fails that call; a missing one is
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
  const imports = {
    'ctxpack:context/types': {},
    'ctxpack:context/sources': {
      retrieve: (...a) => call('sources.retrieve', 'retrieve', a),
      expandGraph: (...a) => call('sources.expand-graph', 'expandGraph', a),
      recallMemory: (...a) => call('sources.recall-memory', 'recallMemory', a),
      repositoryState: (...a) => call('sources.repository-state', 'repositoryState', a),
    },
    'ctxpack:context/policy': {
      review: (...a) => call('policy.review', 'review', a),
    },
    'ctxpack:context/summarizer': {
      summarize: (...a) => call('summarizer.summarize', 'summarize', a),
    },
  };
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

const SOURCES = {
  retrieve: ['sources.retrieve', 'retrieve', (c, a) => [c, a.query, a.limit]],
  'expand-graph': ['sources.expand-graph', 'expandGraph', (c, a) => [c, a['item-ids'], a.depth]],
  'recall-memory': ['sources.recall-memory', 'recallMemory', (c, a) => [c, a['user-id'], a.query, a.limit]],
  'repository-state': ['sources.repository-state', 'repositoryState', (c) => [c]],
};

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
  try {
    return await steps(assembly, host, context);
  } finally {
    // Gone from the instance's table now, not when the collector finds it.
    assembly[DISPOSE]?.();
  }
}

const DISPOSE = Symbol.dispose || Symbol.for('dispose');

async function steps(assembly, host, context) {
  let given = '';
  for (;;) {
    const text = unwrap(() => assembly.step(given));
    if (text.startsWith('{"done":')) return text.slice(8, -1);
    const step = JSON.parse(text);
    if (step.sources) {
      const answers = await Promise.all(step.sources.map((call) => {
        const [name, args] = typeof call === 'string' ? [call, {}] : Object.entries(call)[0];
        const [capability, method, argsOf] = SOURCES[name];
        return answer(capability, () => {
          if (typeof host[method] !== 'function') throw new HostError(NOT_PROVIDED);
          return host[method](...argsOf(context, args));
        });
      }));
      given = JSON.stringify(answers);
    } else if (step.review) {
      given = JSON.stringify(await answer('policy.review', () => {
        if (typeof host.review !== 'function') throw new HostError(NOT_PROVIDED);
        return host.review(context, step.review);
      }));
    } else {
      const { requests, tokenizer } = step.summaries;
      given = JSON.stringify(await answer('summarizer.summarize', () => {
        if (typeof host.summarize !== 'function') throw new HostError(NOT_PROVIDED);
        return host.summarize(requests, tokenizer);
      }));
    }
  }
}
