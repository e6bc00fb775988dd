// A trap (here the engine's memory limit, as a fault in ctxpack would
// be) replaces the WebAssembly module: the call that trapped throws
// ComponentTrapped naming the trap, and every later call works — on the
// same Builder and Router (made again from their configuration), and on
// new ones. Run in a child Node whose WebAssembly memory is capped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const INDEX = fileURLToPath(new URL('../src/index.js', import.meta.url));

const CHILD = `
import { Builder, Router, ComponentTrapped, CtxpackError, countTokens } from ${JSON.stringify(INDEX)};
const out = {};
const b = await Builder.create({});
const r = await Router.create(
  'threshold: 0.5\\nroutes:\\n  - { name: weather, skill: forecast, rules: [{ keywords: [rain], weight: 0.9 }] }\\n');
out.before = b.countTexts(['hello world']);
try {
  b.countTexts(['word '.repeat(20_000_000)]);
  out.big = 'counted';
} catch (e) {
  out.big = { name: e.name, trapped: e instanceof ComponentTrapped, message: e.message, cause: String(e.cause) };
}
out.after = b.countTexts(['hello world']);
out.assembled = typeof (await b.assemble({ tokenizer: 'o200k-base', query: 'q', budget: 50 })).text;
out.routed = r.route('Will it rain tomorrow?').route;
out.fresh = await countTokens('hello world');
try {
  await b.assemble({ tokenizer: 'o200k-base', budget: -1 });
} catch (e) {
  out.refused = e instanceof CtxpackError;
}
console.log(JSON.stringify(out));
`;

test('a trapped module is replaced and the next call works', () => {
  // 1024 pages of 64 KiB: 64 MiB, less than counting 100 MB of text needs.
  const child = spawnSync(process.execPath, ['--wasm-max-mem-pages=1024', '--input-type=module', '-e', CHILD], {
    encoding: 'utf8',
  });
  assert.equal(child.status, 0, child.stderr);
  const out = JSON.parse(child.stdout.trim().split('\n').pop());
  assert.deepEqual(out.before, [2]);
  assert.equal(out.big.name, 'ComponentTrapped', JSON.stringify(out.big));
  assert.equal(out.big.trapped, true);
  assert.match(out.big.message, /trapped \(unreachable\); it was replaced/);
  assert.match(out.big.cause, /RuntimeError/);
  assert.deepEqual(out.after, [2]);
  assert.equal(out.assembled, 'string');
  assert.equal(out.routed, 'weather');
  assert.equal(out.fresh, 2);
  assert.equal(out.refused, true);
});
