"""The generator's scenarios through the Python package (every section,
profile, tokenizer, overhead and host answer shape, and a family with its
numbers at the edges — signed zeros, subnormals, the largest finite): each
outcome is the native core's, byte for byte. ``hosts/python/run`` writes
them with ``cargo run -p ctxpack-conformance --bin generated``;
``CTXPACK_GENERATED`` names another directory."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from test_conformance import ROOT, compact, minify, run

GENERATED = Path(os.environ.get("CTXPACK_GENERATED", ROOT / "target" / "generated"))


def order(path: Path):
    family, number = re.match(r"(seed|edge)-(\d+)\.json$", path.name).groups()
    return family, int(number)


CASES = sorted(
    (p for p in GENERATED.glob("*.json") if re.match(r"(seed|edge)-\d+\.json$", p.name)),
    key=order,
)


def test_the_generated_scenarios_are_here():
    assert GENERATED.is_dir(), f"{GENERATED} is missing: hosts/python/run writes it"
    assert sum(p.name.startswith("seed-") for p in CASES) >= 100
    assert sum(p.name.startswith("edge-") for p in CASES) >= 30


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_generated_outcome_is_the_native_one(path: Path):
    text, calls = run(path)
    expected = minify(path.with_name(path.stem + ".expected.json").read_text())
    assert f'{{"reply":{text},"host-calls":{compact(calls)}}}' == expected
