// An instance that traps (here on the engine's memory limit, as on a
// fault in ctxpack) is dropped, never entered again: the call throws
// ComponentTrapped naming the trap, and the next call on the same
// HeldBuilder gets a fresh instance. Run in a child Node whose
// WebAssembly memory is capped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const HOST = fileURLToPath(new URL('../host.js', import.meta.url));

const CHILD = `
import { HeldBuilder, ComponentTrapped } from ${JSON.stringify(HOST)};
const out = {};
const b = new HeldBuilder('{}');
const request = (system) => JSON.stringify({ tokenizer: 'o200k-base', query: 'q', budget: 50, 'system-prompt': system });
out.before = Object.keys(JSON.parse(await b.assemble(request('Be brief.'))));
try {
  await b.assemble(request('word '.repeat(20_000_000)));
  out.big = 'assembled';
} catch (e) {
  out.big = { name: e.name, trapped: e instanceof ComponentTrapped, message: e.message, cause: String(e.cause) };
}
out.after = Object.keys(JSON.parse(await b.assemble(request('Be brief.'))));
console.log(JSON.stringify(out));
`;

test('a trapped instance is dropped and the next call gets a fresh one', () => {
  // 1024 pages of 64 KiB: 64 MiB, less than a 100 MB request needs.
  const child = spawnSync(process.execPath, ['--wasm-max-mem-pages=1024', '--input-type=module', '-e', CHILD], {
    encoding: 'utf8',
  });
  assert.equal(child.status, 0, child.stderr);
  const out = JSON.parse(child.stdout.trim().split('\n').pop());
  assert.deepEqual(out.before, ['pack']);
  assert.equal(out.big.name, 'ComponentTrapped', JSON.stringify(out.big));
  assert.equal(out.big.trapped, true);
  assert.match(out.big.message, /trapped .*: its instance was dropped/);
  assert.match(out.big.cause, /RuntimeError/);
  assert.deepEqual(out.after, ['pack']);
});
