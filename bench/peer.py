"""What a competent Python developer would write for ctxpack's benchmark
workloads, with well-known libraries, timed on the same data.

- pack: sort by score, drop exact duplicates by hash, drop near duplicates
  with datasketch MinHash LSH (128 permutations, three-word shingles,
  threshold 0.8, candidates checked by their estimated Jaccard), count with
  tiktoken's encode_ordinary, fill greedily. Each chunk is cited with the
  same header ctxpack puts on it, counted apart like ctxpack does, so both
  fill the same budget with the same texts.
- trim: LangChain's trim_messages (strategy "last") with a tiktoken
  counter over "[role] content", the rendering ctxpack counts.

Usage: peer.py DATA_DIR OUT_JSON
"""

import hashlib
import json
import re
import statistics
import sys
import time

import tiktoken
from datasketch import MinHash, MinHashLSH
from langchain_core.messages import AIMessage, HumanMessage, trim_messages

WORD = re.compile(r"[0-9a-z]+")


def normalize(text):
    return " ".join(WORD.findall(text.lower()))


def pack(data, enc):
    budget = data["budget"]
    header = data["header"]
    chunks = sorted(data["chunks"], key=lambda c: (-c["score"], c["id"]))
    seen = set()
    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    sketches = {}
    selected = []
    used = 0
    for c in chunks:
        norm = normalize(c["text"])
        digest = hashlib.sha1(norm.encode()).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        words = norm.split()
        shingles = {" ".join(words[i : i + 3]).encode() for i in range(max(1, len(words) - 2))}
        m = MinHash(num_perm=128)
        m.update_batch(list(shingles))
        if any(m.jaccard(sketches[k]) >= 0.8 for k in lsh.query(m)):
            continue
        lsh.insert(c["id"], m)
        sketches[c["id"]] = m
        tokens = len(enc.encode_ordinary(header.format(id=c["id"]))) + len(
            enc.encode_ordinary(c["text"])
        )
        if used + tokens <= budget:
            selected.append(c["id"])
            used += tokens
    return selected


def trim(data, enc):
    messages = [
        HumanMessage(t["content"]) if t["role"] == "user" else AIMessage(t["content"])
        for t in data["turns"]
    ]
    roles = {"human": "user", "ai": "assistant"}

    def count(msgs):
        return sum(
            len(enc.encode_ordinary(f"[{roles[m.type]}] {m.content}")) for m in msgs
        )

    return trim_messages(messages, max_tokens=data["budget"], token_counter=count, strategy="last")


def timed(runs, f):
    times = []
    out = None
    for _ in range(runs):
        start = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main():
    data_dir, out_path = sys.argv[1], sys.argv[2]
    start = time.perf_counter()
    enc = tiktoken.get_encoding("o200k_base")
    enc.encode_ordinary("warm up")
    results = {"tokenizer_seconds": time.perf_counter() - start}
    for name, runs in [("pack-10k", 3), ("pack-5k", 3)]:
        with open(f"{data_dir}/{name}.json") as f:
            data = json.load(f)
        seconds, selected = timed(runs, lambda: pack(data, enc))
        ours = set(data["selected"])
        results[name] = {
            "seconds": seconds,
            "selected": len(selected),
            "ctxpack_selected": len(ours),
            "same": len(ours & set(selected)),
        }
    with open(f"{data_dir}/trim-10k.json") as f:
        data = json.load(f)
    seconds, kept = timed(3, lambda: trim(data, enc))
    results["trim-10k"] = {"seconds": seconds, "kept": len(kept), "ctxpack_kept": data["kept"]}
    with open(out_path, "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
