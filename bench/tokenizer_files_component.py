"""Counting 1 MB texts with loaded files through the component, from
Python (wasmtime-py): one assembly whose one instruction is the text, a
fresh builder each time (a builder remembers what it counted), best of 3.

    CTXPACK_BENCH_TEXTS=DIR cargo bench -p ctxpack-bench --bench count -- count-loaded/
    hosts/python/run install
    target/python-venv/bin/python bench/tokenizer_files_component.py DIR
"""
import json
import os
import sys
import time
from pathlib import Path

import ctxpack_wasm as cp

ref = Path(os.environ.get("CTXPACK_TOKENIZERS", "target/tokenizers/reference"))
texts = {p.stem: p.read_text() for p in sorted(Path(sys.argv[1]).glob("*.txt"))}
for name in ["llama3", "deepseek-v3", "gemma3"]:
    rec = json.loads((ref / f"{name}.json").read_text())
    row = []
    for tname, text in texts.items():
        req = cp.AssembleRequest(context=cp.AgentContext(trace_id="t"), query="q", tokenizer=cp.Tokenizer.named(name),
                                 budget=4_000_000, entry_overhead=0, system_prompt="", instructions=[text], keep_last=0)
        best, load = 1e9, 1e9
        for _ in range(3):
            t0 = time.perf_counter()
            b = cp.Builder(cp.BuilderConfig(tokenizers=[cp.read_tokenizer(rec["file"], name=name)]))
            t1 = time.perf_counter(); p = b.assemble(req); t2 = time.perf_counter()
            best, load = min(best, t2 - t1), min(load, t1 - t0)
        row.append(f"{tname} {best*1000:.1f} ms ({p.entries[0].tokens} tokens)")
    print(f"{name}: builder with the file {load*1000:.0f} ms; " + "; ".join(row))
