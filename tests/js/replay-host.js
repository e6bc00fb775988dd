// The scenario stores, replayed. There is one scenario host, in Rust
// (crates/ctxpack-scenario's InMemoryHost); `cargo run -p
// ctxpack-conformance --bin generated` records what it was asked and
// answered for every scenario (NAME.calls.json: the calls as a step writes
// them, the answers as a step reads them). This host answers each call
// with the recorded answer after checking the call is the recorded one,
// with the callbacks the package's generated table of calls names.

import { CALLS } from '../../packages/ctxpack/src/calls.js';

/** `expandGraph` → `expand-graph`. */
export const kebab = (s) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** JSON with its null fields left out (an absent option is either). */
export function withoutNulls(v) {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, withoutNulls(x)]));
}

/** A JSON value's text with its object keys sorted, to compare by. */
export function canonical(v) {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
}

/**
 * Answers every call as the Rust scenario host did, in order per call,
 * given the calls' arguments as JSON (kebab-case), as the jco host's
 * JSON driver passes them. `HostError` is the host's error for a failed
 * call. `calls` counts the calls by capability, as the expected files do;
 * `check()` throws if a call was not the recorded one or a recorded call
 * was never made.
 */
export class ReplayHost {
  constructor(recorded, { HostError }) {
    this.queues = new Map(Object.keys(CALLS).map((m) => [kebab(m), []]));
    for (const { call, answer } of recorded) {
      const [[name, args]] = Object.entries(call);
      this.queues.get(name).push({ args, answer });
    }
    this.calls = {};
    this.wrong = [];
    for (const [method, known] of Object.entries(CALLS)) {
      this[method] = (...values) => this.replay(kebab(method), known, known.context ? values.slice(1) : values, HostError);
    }
  }

  replay(name, known, values, HostError) {
    this.calls[known.capability] = (this.calls[known.capability] || 0) + 1;
    const next = this.queues.get(name).shift();
    if (next === undefined) {
      this.wrong.push(`${known.capability}: asked more often than the Rust host was`);
      throw new HostError('not in the recording');
    }
    const asked = Object.fromEntries(known.params.map((p, i) => [kebab(p), values[i]]));
    if (canonical(withoutNulls(asked)) !== canonical(withoutNulls(next.args))) {
      this.wrong.push(`${known.capability}: asked ${canonical(asked)}, the Rust host was asked ${canonical(next.args)}`);
    }
    if (next.answer.err) {
      if (next.answer.err.capability !== known.capability) this.wrong.push(`${known.capability}: answered as ${next.answer.err.capability}`);
      throw new HostError(next.answer.err.message);
    }
    return next.answer.ok;
  }

  /** This host's callbacks for a builder whose profile calls `sources`. */
  lend(sources) {
    return Object.fromEntries(Object.entries(CALLS)
      .filter(([, k]) => !k.capability.startsWith('sources.') || sources.includes(k.capability))
      .map(([m]) => [m, this[m]]));
  }

  check() {
    if (this.wrong.length) throw new Error(this.wrong.join('\n'));
    const unasked = [...this.queues].flatMap(([name, q]) => q.map(() => name));
    if (unasked.length) throw new Error(`the Rust host was asked calls this host never made: ${unasked.join(', ')}`);
  }
}
