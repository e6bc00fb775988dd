// The JavaScript scenario host (tests/js/scenario-host.js) is what the
// playground edits scenarios live with and what the npm package's and the
// browser's corpus runs answer from. It must be the Rust scenario host
// over again: fed every call the Rust host was recorded answering — the
// corpus's and the generator's, every answer shape — it gives the
// recorded answer, call for call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { HostError } from '../host.js';
import { ScenarioHost } from '../../../tests/js/scenario-host.js';
import { canonical, kebab, withoutNulls } from '../../../tests/js/replay-host.js';
import { CALLS } from '../../../packages/ctxpack/src/calls.js';
import { generated, recording, root } from './scenario-host.js';

const camel = (s) => s.replace(/-([a-z0-9])/g, (_, c) => c.toUpperCase());

/** What `host` answers to a recorded call, as a step reads it. */
function answer(host, call, context) {
  const [[name, args]] = Object.entries(call);
  const known = CALLS[camel(name)];
  const values = known.params.map((p) => args[kebab(p)]);
  try {
    return { ok: host[camel(name)](...(known.context ? [context, ...values] : values)) };
  } catch (e) {
    if (!(e instanceof HostError)) throw e;
    return { err: { capability: known.capability, message: e.message } };
  }
}

function files() {
  const corpus = readdirSync(path.join(root, 'tests/scenarios')).filter((n) => n.endsWith('.json'))
    .map((n) => path.join(root, 'tests/scenarios', n));
  const made = existsSync(generated)
    ? readdirSync(generated).filter((n) => /^(seed|edge)-\d+\.json$/.test(n)).map((n) => path.join(generated, n))
    : [];
  return [...corpus, ...made];
}

test('the JavaScript scenario host answers every recorded call as the Rust one did', () => {
  let calls = 0;
  const shapes = new Set();
  for (const file of files()) {
    const scenario = JSON.parse(readFileSync(file, 'utf8'));
    const host = new ScenarioHost(scenario.host, { HostError });
    for (const [i, r] of recording(file).entries()) {
      const got = answer(host, r.call, scenario.request?.context ?? {});
      assert.equal(canonical(withoutNulls(got)), canonical(withoutNulls(r.answer)),
        `${path.basename(file)}, call ${i} (${Object.keys(r.call)[0]})`);
      calls += 1;
      shapes.add(`${Object.keys(r.call)[0]} ${Object.keys(r.answer)[0]}`);
    }
  }
  // Every capability the scenarios call was answered, and failed,
  // somewhere; the six the corpus has always called among them.
  const called = new Set([...shapes].map((s) => s.split(' ')[0]));
  for (const name of called) {
    assert.ok(shapes.has(`${name} ok`) && shapes.has(`${name} err`), `${name}: ${[...shapes].join(', ')}`);
  }
  assert.ok(called.size >= 6, [...called].join(', '));
  assert.ok(calls > 400, `${calls} calls`);
});
