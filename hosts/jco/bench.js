// The boundary benchmark under jco (Node): seed-002 per call, and the 10k
// and 5k packs with the caller's candidates in and a pack out, through the
// typed exports and imports and through the JSON steps, counts made afresh
// each time as the Rust figures do. Usage: node bench.js DATA_DIR FIGURES_JSON
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { instance, unwrap, drive } from './host.js';
import { camel, typedRequest, typedConfig } from './typed.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '../..');
const [dataDir, figuresPath] = process.argv.slice(2);
const rust = figuresPath ? JSON.parse(readFileSync(figuresPath, 'utf8')) : {};

async function median(runs, f) {
  await f();
  const times = [];
  for (let i = 0; i < runs; i += 1) {
    const t = process.hrtime.bigint();
    await f();
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

const out = {};

// seed-002, typed and JSON.
{
  const s = JSON.parse(readFileSync(path.join(root, 'tests/scenarios/seed-002-happy-path.json'), 'utf8'));
  const { json } = await instance();
  const b = unwrap(() => json.JsonBuilder.create('{}'));
  const text = JSON.stringify(s.request);
  const jsonMs = await median(2000, () => drive(b.start(text), {}, s.request.context).then(JSON.parse));
  const { builder } = await instance();
  const tb = unwrap(() => builder.ContextBuilder.create(typedConfig({ tag: 'passthrough' })));
  const req = typedRequest(s.request);
  const typedMs = await median(2000, () => tb.assemble(req));
  out['seed-002'] = {
    typed_ms: typedMs, json_ms: jsonMs, rust_wasmtime_ms: rust['seed-002'],
    ratio_typed: typedMs / rust['seed-002'], ratio_json: jsonMs / rust['seed-002'],
  };
}

for (const name of ['pack-10k', 'pack-5k']) {
  const s = JSON.parse(readFileSync(path.join(dataDir, `${name}.scenario.json`), 'utf8'));
  const config = { ...s.config, 'count-cache-entries': 0 };
  const items = s.host.retrieve.items;
  const { json } = await instance();
  const b = unwrap(() => json.JsonBuilder.create(JSON.stringify(config)));
  const request = JSON.stringify(s.request);
  const host = {
    retrieve: (_c, _q, limit) => items.slice(0, limit),
    review: (_c, batch) => batch.map(() => 'allow'),
  };
  const jsonMs = await median(5, () => drive(b.start(request), host, s.request.context).then(JSON.parse));

  const typedItems = camel(items);
  const typed = await instance({
    retrieve: (_c, _q, limit) => typedItems.slice(0, limit),
    review: (_c, batch) => batch.map(() => ({ tag: 'allow' })),
  });
  const typedConfig = camel(config);
  typedConfig.profile = Object.entries(config.profile ?? { passthrough: null }).map(([tag, val]) => ({ tag, val: camel(val) }))[0];
  let typedMs = null;
  try {
    const tb = unwrap(() => typed.builder.ContextBuilder.create(typedConfig));
    const req = typedRequest(s.request);
    typedMs = await median(5, () => tb.assemble(req));
  } catch (e) {
    typedMs = `not run: ${e.message}`;
  }
  out[name] = { json_ms: jsonMs, typed_ms: typedMs, rust_wasmtime_ms: rust[name] };
}
console.log(JSON.stringify(out, null, 2));
