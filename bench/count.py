"""Counting from Python: ``ctxpack_wasm.count_tokens`` (the component,
through wasmtime-py) beside quicktok-v1 and tiktoken, on the same 1 MB
texts, o200k, in one run: generated prose and code (those of
``benches/count.rs``) and the book's own Markdown, repeated to 1 MB. Each
run counts the text with a different last few characters, so that no
counter answers from a memory of the whole text; the median of the runs,
and each one's time over quicktok's count (``count_batch`` on one
thread: its count without a Python list of ids).

    bench/count
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import quicktok
import tiktoken

import ctxpack_wasm as cp

RUNS = 15


def timed(f: Callable[[], int], runs: int = RUNS) -> tuple[float, int]:
    n = f()  # warm: the component compiled, the tables loaded
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return statistics.median(out) * 1000, n


def texts(data: Path) -> dict[str, str]:
    root = Path(__file__).resolve().parents[1]
    book = "\n\n".join(p.read_text() for p in sorted((root / "docs/src").glob("*.md")))
    return {
        "prose-1mb": (data / "prose-1mb.txt").read_text(),
        "code-1mb": (data / "code-1mb.txt").read_text(),
        "book-1mb": (book * (1 + (1 << 20) // len(book)))[: 1 << 20],
    }


def main(data: Path) -> None:
    tk = tiktoken.get_encoding("o200k_base")
    qt = quicktok.get_encoding("o200k_base")
    print(f"{'text':<10} {'counter':<36} {'tokens':>8} {'ms':>7} {'ms/MB':>7} {'÷ quicktok':>10}")
    for name, text in texts(data).items():
        mb = len(text.encode()) / (1 << 20)
        run = iter(range(10**9))

        def fresh() -> str:
            return f"{text[:-8]}{next(run):08d}"
        counters: list[tuple[str, Callable[[str], int]]] = [
            ("quicktok-v1 (count_batch, 1 thread)", lambda t: int(quicktok.count_batch(qt, [t], threads=1)[0])),
            ("quicktok-v1 (encode)", lambda t: len(qt.encode(t))),
            ("tiktoken (encode_ordinary)", lambda t: len(tk.encode_ordinary(t))),
            ("ctxpack count_tokens", cp.count_tokens),
        ]
        counts = {who: count(text) for who, count in counters}
        assert len(set(counts.values())) == 1, f"{name}: the counts differ: {counts}"
        results = [(who, *timed(lambda: count(fresh()))) for who, count in counters]
        base = results[0][1]
        for who, ms, _ in results:
            print(f"{name:<10} {who:<36} {counts[who]:>8} {ms:>7.1f} {ms / mb:>7.1f} {ms / base:>9.2f}×")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "target/bench-data"))
