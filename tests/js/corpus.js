// The scenario corpus's files, for the JavaScript hosts' corpus tests
// under Node (the browser's page lists them over HTTP).
import { readdirSync } from 'node:fs';
import path from 'node:path';

const jsonFiles = (dir) => readdirSync(dir).filter((n) => n.endsWith('.json')).sort();

/**
 * The scenario files' names in `root`/tests/scenarios, sorted. Throws
 * unless every one has its expected file and the corpus holds at least
 * 40: a harness that lost scenarios must not pass on the rest.
 */
export function corpusNames(root) {
  const names = jsonFiles(path.join(root, 'tests/scenarios'));
  const expected = jsonFiles(path.join(root, 'tests/expected'));
  if (names.join() !== expected.join()) throw new Error('tests/scenarios and tests/expected differ');
  if (names.length < 40) throw new Error(`the corpus lost scenarios: ${names.length}`);
  return names;
}
