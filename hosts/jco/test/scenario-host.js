// The scenario stores for the jco host's tests: the Rust scenario host's
// answers, recorded by `cargo run -p ctxpack-conformance --bin generated`
// (which hosts/jco/run runs) and replayed call for call
// (tests/js/replay-host.js).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HostError } from '../host.js';
import { ReplayHost } from '../../../tests/js/replay-host.js';

export const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const generated = process.env.CTXPACK_GENERATED ?? path.join(root, 'target/generated');

/** The recorded calls of a scenario file: a corpus scenario's under
 * `corpus/`, a generated one's beside it. */
export function recording(file) {
  const name = path.basename(file, '.json');
  const corpus = path.resolve(path.dirname(file)) === path.join(root, 'tests/scenarios');
  const at = corpus ? path.join(generated, 'corpus', `${name}.calls.json`) : file.replace(/\.json$/, '.calls.json');
  if (!existsSync(at)) throw new Error(`${at} is missing: hosts/jco/run writes it`);
  return JSON.parse(readFileSync(at, 'utf8'));
}

/** The stores of the scenario file `file`, replayed. */
export const replay = (file) => new ReplayHost(recording(file), { HostError });
