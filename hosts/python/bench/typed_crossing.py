"""seed-002 and the 10k pack through the component's typed exports from
wasmtime-py — every record and variant converted field by field, as a
user without the package would call it — to compare with the JSON
crossing the package uses (bench/boundary).

Usage: typed_crossing.py DATA_DIR (bench/compare's data, target/bench-data)
"""
import json
import statistics
import sys
import time
from pathlib import Path

import wasmtime
import wasmtime.component as c

from ctxpack_wasm import _runtime
from ctxpack_wasm.types import _SCHEMA

def conv(v, ty):
    if isinstance(ty, str):
        return float(v) if ty in ('f64', 'f32') else v
    if ty[0] == 'option':
        return None if v is None else conv(v, ty[1])
    if ty[0] == 'list':
        return [conv(x, ty[1]) for x in (v or [])]
    e = _SCHEMA[ty[1]]
    if e[0] == 'enum':
        return v
    if e[0] == 'variant':
        if isinstance(v, str):
            return c.Variant(v, None)
        ((tag, p),) = v.items()
        return c.Variant(tag, conv(p, e[2][tag]))
    r = c.Record()
    for f, k, t in e[2]:
        setattr(r, k, conv(v.get(k), t))
    return r

# A typed builder-config has every field: the defaults, written out.
DEFAULTS = {"preload": [], "profile": "passthrough", "near-duplicate-threshold": 0.8,
  "ranking": {"trust-system": 0, "trust-trusted": 0, "trust-unverified": 0, "trust-untrusted": 0, "recency": 0},
  "plan": {"default-budget": 24000, "model-window": None, "safety-margin": 0.1, "compress": True, "min-summary-tokens": 32, "cut-step": 1,
           "shares": [{"section": s, "share": x} for s, x in [("mandatory-instructions", 0.1), ("current-task", 0.1), ("conversation-state", 0.1), ("repository-state", 0.2), ("relevant-knowledge", 0.25), ("graph-neighbours", 0.1), ("episodic-memory", 0.05), ("current-diff", 0.05), ("tool-results", 0.05)]]},
  "count-cache-entries": 100000}

engine = wasmtime.Engine()
comp = _runtime.load(engine)
linker = c.Linker(engine)
items_holder = {"items": []}
with linker.root() as root:
    with root.add_instance("ctxpack:context/sources@0.1.0") as src:
        src.add_func("retrieve", lambda store, ctx, q, limit: items_holder["items"][:limit])
    with root.add_instance("ctxpack:context/policy@0.1.0") as pol:
        pol.add_func("review", lambda store, ctx, items: [c.Variant("allow", None) for _ in items])
linker.define_unknown_imports_as_traps(comp)
store = wasmtime.Store(engine)
inst = linker.instantiate(store, comp)
b = inst.get_export_index(store, "ctxpack:context/builder@0.1.0")
create = inst.get_func(store, inst.get_export_index(store, "[static]context-builder.create", b))
assemble = inst.get_func(store, inst.get_export_index(store, "[method]context-builder.assemble", b))

def builder(cfg):
    full = dict(DEFAULTS); full.update(cfg or {})
    h = create(store, conv(full, ["ref", "BuilderConfig"])); create.post_return(store)
    return h

def med(n, f):
    f(); ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3

ROOT = Path(__file__).resolve().parents[3]
s = json.loads((ROOT / "tests/scenarios/seed-002-happy-path.json").read_text())
h = builder(s.get('config'))
def seed():
    r = assemble(store, h, conv(s['request'], ["ref", "AssembleRequest"])); assemble.post_return(store); return r
print("seed-002 typed from wasmtime-py: %.3f ms" % med(200, seed))

d = json.loads((Path(sys.argv[1]) / "pack-10k.scenario.json").read_text())
cfg = dict(d['config']); cfg['count-cache-entries'] = 0
h = builder(cfg)
items_holder["items"] = [conv(x, ["ref", "Candidate"]) for x in d['host']['retrieve']['items']]
def big():
    r = assemble(store, h, conv(d['request'], ["ref", "AssembleRequest"])); assemble.post_return(store); return r
print("pack-10k typed from wasmtime-py (records made before): %.0f ms" % med(3, big))
