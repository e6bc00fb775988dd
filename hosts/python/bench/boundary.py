"""The Python package's boundary benchmark, on the data bench/compare
generates (target/bench-data), beside what a Python developer would
otherwise use, in one process:

- seed-002 (a small pack, no host calls): the time of one call from
  Python, typed request in and typed pack out, and with the JSON outcome
  left as text (`assemble_json`);
- pack-10k and pack-5k: the caller's 10k (5k) `Candidate` objects in, a
  typed `ContextPack` out, counts made afresh each time, as the Rust
  benchmarks do;
- on the same chunks and budget, the Python peer (bench/peer.py:
  tiktoken, datasketch, the same citation headers) and the PyPI packers
  `llm-ctxpack` and `contextcram` (priority by score, tiktoken o200k
  counts, whole chunks), and what each keeps against ctxpack: chunks
  kept, chunks kept by both, exact duplicates kept (the corpus has
  them), tokens of what each sends as tiktoken counts it.

Usage: boundary.py DATA_DIR [RUST_FIGURES_JSON]
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))

import ctxpack_wasm as cp  # noqa: E402
from ctxpack_wasm._codec import decode  # noqa: E402


def timed(runs: int, f) -> tuple[float, object]:
    out = f()  # warm: the first call compiles nothing, but fills caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


class Handed:
    """A retriever that returns the caller's own candidates."""

    def __init__(self, items: list) -> None:
        self.items = items

    def retrieve(self, context, query, limit):
        return self.items[:limit]


def ctxpack_pack(scenario: dict, runs: int):
    config = dict(scenario["config"])
    config["count-cache-entries"] = 0  # count afresh each time, as the Rust figures do
    builder = cp.Builder(config)
    request = decode(scenario["request"], ["ref", "AssembleRequest"])
    items = [decode(c, ["ref", "Candidate"]) for c in scenario["host"]["retrieve"]["items"]]
    host = Handed(items)
    return timed(runs, lambda: builder.assemble(request, sources=host))


def seed_002(runs: int) -> dict:
    s = json.loads((ROOT / "tests/scenarios/seed-002-happy-path.json").read_text())
    builder = cp.Builder(s.get("config"))
    request = decode(s["request"], ["ref", "AssembleRequest"])
    typed, _ = timed(runs, lambda: builder.assemble(request))
    text, _ = timed(runs, lambda: builder.assemble_json(request))
    return {"typed_ms": typed * 1e3, "json_ms": text * 1e3}


def normalized_digest(text: str) -> str:
    import peer

    return hashlib.sha1(peer.normalize(text).encode()).hexdigest()


def kept_report(name: str, seconds: float, ids: list, texts: list, enc, ours: set, data: dict) -> dict:
    by_id = {c["id"]: c["text"] for c in data["chunks"]}
    digests = [normalized_digest(by_id[i]) for i in ids]
    return {
        "packer": name,
        "ms": seconds * 1e3,
        "kept": len(ids),
        "kept_by_ctxpack_too": len(ours & set(ids)),
        "exact_duplicates_kept": len(digests) - len(set(digests)),
        "tokens_sent": sum(len(enc.encode_ordinary(t)) for t in texts),
    }


def peers(name: str, runs: int, ctxpack_ms: float, pack) -> list:
    import contextcram
    import llm_ctxpack
    import peer
    import tiktoken

    data = json.loads((Path(DATA) / f"{name}.json").read_text())
    enc = tiktoken.get_encoding("o200k_base")
    budget, header = data["budget"], data["header"]
    ours = {e.id for e in pack.entries if e.section == cp.Section.RELEVANT_KNOWLEDGE}
    rows = [kept_report("ctxpack-wasm", ctxpack_ms / 1e3, sorted(ours),
                        [e.text for e in pack.entries if e.id in ours], enc, ours, data)]

    seconds, selected = timed(runs, lambda: peer.pack(data, enc))
    by_id = {c["id"]: c for c in data["chunks"]}
    rows.append(kept_report("peer (tiktoken + datasketch)", seconds, selected,
                            [header.format(id=i) + by_id[i]["text"] for i in selected], enc, ours, data))

    def llm() -> list:
        items = [llm_ctxpack.ContextItem(id=c["id"], text=c["text"], priority=c["score"], truncatable=False)
                 for c in data["chunks"]]
        return llm_ctxpack.pack(items, budget, encoding="o200k_base").items

    seconds, items = timed(runs, llm)
    rows.append(kept_report("llm-ctxpack 0.2.1", seconds, [i.id for i in items],
                            [i.text for i in items], enc, ours, data))

    def cram() -> list:
        packer = contextcram.Packer(budget=budget, tokenizer=contextcram.CallableTokenizer(
            lambda t: len(enc.encode_ordinary(t))))
        for c in data["chunks"]:
            packer.add(c["text"], priority=int(c["score"] * 1_000_000), strategy="drop", name=c["id"])
        return packer.fit().items

    seconds, items = timed(runs, cram)
    rows.append(kept_report("contextcram 0.2.0", seconds, [i.name for i in items],
                            [i.text for i in items], enc, ours, data))
    return rows


def main() -> None:
    global DATA
    DATA = sys.argv[1]
    rust = json.loads(Path(sys.argv[2]).read_text()) if len(sys.argv) > 2 else {}
    results: dict = {"seed-002": seed_002(2000)}
    if "seed-002" in rust:
        results["seed-002"]["rust_wasmtime_ms"] = rust["seed-002"]
        results["seed-002"]["ratio_typed"] = results["seed-002"]["typed_ms"] / rust["seed-002"]
        results["seed-002"]["ratio_json"] = results["seed-002"]["json_ms"] / rust["seed-002"]
    for name, runs in [("pack-10k", 11), ("pack-5k", 11)]:
        scenario = json.loads((Path(DATA) / f"{name}.scenario.json").read_text())
        seconds, pack = ctxpack_pack(scenario, runs)
        rows = peers(name, 3, seconds * 1e3, pack)
        results[name] = {"ctxpack_wasm_ms": seconds * 1e3, "rust": rust.get(name), "packers": rows}
        peer_ms = rows[1]["ms"]
        results[name]["peer_over_python"] = peer_ms / (seconds * 1e3)
    print(json.dumps(results, indent=2))


DATA = ""

if __name__ == "__main__":
    main()
