// The README's quickstart, run as written: its snapshot id is the native
// one for the same request (tests/expected/readme-quickstart.json).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '../../..');

test('the README quickstart prints the native snapshot id', () => {
  const readme = readFileSync(path.join(here, '../README.md'), 'utf8');
  const code = /```js\n([\s\S]*?)```/.exec(readme)[1];
  assert.ok(code.split('\n').length - 1 <= 20, 'the quickstart is at most 20 lines');
  // Inside the package, `import … from 'ctxpack'` is the package itself.
  const file = path.join(here, '.readme-quickstart.mjs');
  writeFileSync(file, code);
  let out;
  try {
    out = execFileSync(process.execPath, [file], { encoding: 'utf8' });
  } finally {
    rmSync(file, { force: true });
  }
  const expected = JSON.parse(readFileSync(path.join(root, 'tests/expected/readme-quickstart.json'), 'utf8'));
  const pack = expected.reply.pack;
  assert.ok(out.startsWith(`${pack.text}\n`), out);
  assert.ok(out.includes(pack.snapshot.id), out);
  assert.ok(out.includes("[ 'kb-1', 'within-budget' ]"), out);
});
