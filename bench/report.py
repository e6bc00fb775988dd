"""Prints the benchmark table: criterion's means for ctxpack, the peer's
medians, and the ratios the speed targets are stated in.

Usage: report.py CRITERION_DIR PEER_JSON
"""

import json
import os
import sys


def mean_seconds(root, group, bench):
    path = os.path.join(root, group, bench, "new", "estimates.json")
    try:
        with open(path) as f:
            return json.load(f)["mean"]["point_estimate"] / 1e9
    except FileNotFoundError:
        return None


def ms(s):
    return "-" if s is None else f"{s * 1e3:9.2f} ms"


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:8.1f}x"


def main():
    root, peer_path = sys.argv[1], sys.argv[2]
    with open(peer_path) as f:
        peer = json.load(f)
    rows = []
    for label, group, key in [
        ("pack 10k chunks into 128k", "pack-10k-into-128k", "pack-10k"),
        ("pack 5k chunks into 32k", "pack-5k-into-32k", "pack-5k"),
        ("trim 10k messages to 8k", "trim-10k-to-8k", "trim-10k"),
        ("seed-004 pipeline", "seed-004-pipeline", None),
    ]:
        native = mean_seconds(root, group, "native")
        wasm = mean_seconds(root, group, "wasmtime")
        py = peer.get(key, {}).get("seconds") if key else None
        rows.append((label, native, wasm, py))
    print(f"{'workload':28} {'native':>12} {'wasmtime':>12} {'wasm/native':>11} {'python':>12} {'python/native':>13}")
    for label, native, wasm, py in rows:
        print(f"{label:28} {ms(native):>12} {ms(wasm):>12} {ratio(wasm, native):>11} {ms(py):>12} {ratio(py, native):>13}")
    for g, label in [
        ("reassemble-trim-10k", "10k-message trim"),
        ("reassemble-chat-200", "200-turn chat into 32k"),
    ]:
        for where in ["native", "wasmtime"]:
            cold = mean_seconds(root, g, f"{where}-cold")
            warm = mean_seconds(root, g, f"{where}-warm")
            print(f"{label} again with one new turn, {where}: cold {ms(cold)}, warm {ms(warm)}, cold/warm {ratio(cold, warm)}")
    for key in ["pack-10k", "pack-5k"]:
        p = peer[key]
        print(
            f"{key}: python selected {p['selected']}, ctxpack {p['ctxpack_selected']}, in both {p['same']}"
        )
    t = peer["trim-10k"]
    print(f"trim-10k: trim_messages kept {t['kept']}, ctxpack {t['ctxpack_kept']}")
    print(f"python tokenizer construction: {peer['tokenizer_seconds'] * 1e3:.0f} ms (not in the timings)")


if __name__ == "__main__":
    main()
