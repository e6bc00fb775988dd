// src/types.d.ts is what tools/gen_ts.py writes from the WIT today.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

test('the generated types are up to date with the WIT', () => {
  const tool = fileURLToPath(new URL('../tools/gen_ts.py', import.meta.url));
  const run = spawnSync('python3', [tool, '--check'], { encoding: 'utf8' });
  assert.equal(run.status, 0, `stale: run python3 packages/ctxpack/tools/gen_ts.py\n${run.stderr}`);
});
