// The READMEs' quickstarts (the package's and the repository's), run as
// written: the snapshot id each prints is the native one for the same
// request (tests/expected/readme-quickstart.json).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.join(here, '../../..');

for (const [name, readmePath] of [
  ['the package README', path.join(here, '../README.md')],
  ["the repository's README", path.join(root, 'README.md')],
]) {
  test(`${name}'s quickstart prints the native snapshot id`, () => {
    const readme = readFileSync(readmePath, 'utf8');
    const blocks = [...readme.matchAll(/```js\n([\s\S]*?)```/g)];
    assert.equal(blocks.length, 1, 'one JavaScript quickstart');
    const code = blocks[0][1];
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
}
