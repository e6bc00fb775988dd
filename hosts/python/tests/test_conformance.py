"""The scenario corpus through the Python package: every outcome is the
expected file's, byte for byte once the file's indentation is taken out
(the text the component wrote, compared as text), and reads back into the
package's classes without losing anything. The stores answer as the Rust
scenario host recorded, call for call (``replay_host.py``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import ctxpack_wasm as cp
from ctxpack_wasm._codec import as_json, decode
from replay_host import ReplayHost, without_nulls

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = sorted((ROOT / "tests" / "scenarios").glob("*.json"))


def minify(text: str) -> str:
    """JSON text without the whitespace between its tokens."""
    out, in_string, escaped = [], False, False
    for c in text:
        if in_string:
            out.append(c)
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c not in " \t\r\n":
            in_string = c == '"'
            out.append(c)
    return "".join(out)


def compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def refused(error: cp.CtxpackError) -> str:
    """The refusal as the expected files spell it: the package names a
    field in snake_case, the WIT in kebab-case."""
    value = error.error.to_json()
    if "invalid-field" in value:
        v = value["invalid-field"]
        v["field"] = v["field"].replace("_", "-")
        if re.match(r"^(unknown|missing) field `", v["message"]):
            v["message"] = re.sub(r"`([^`]*)`", lambda q: q.group(0).replace("_", "-"), v["message"])
    return compact({"failed": {"error": value, "snapshot": None}})


def run(path: Path) -> tuple[str, dict]:
    scenario = json.loads(path.read_text())
    host = ReplayHost.of(path)
    try:
        builder = cp.Builder(scenario.get("config"))
        router = None
        spec = scenario.get("router")
        if spec is not None:
            ((kind, value),) = spec.items()
            if kind == "file":
                text = (path.parent / value).read_text()
                kind = "json" if value.endswith(".json") else "yaml"
            else:
                text = value
            router = cp.Router(text, kind, instance=builder._inst)
        sources = host.lend(cp.PROFILES.get(builder.profile, ()))
        text = builder.assemble_json(
            scenario["request"], router=router, sources=sources, policy=host, summarizer=host,
            counter=host,
        )
    except cp.CtxpackError as e:
        text = refused(e)
    host.check()
    return text, dict(sorted(host.calls.items()))


def test_the_corpus_is_here():
    assert len(SCENARIOS) == len(list((ROOT / "tests" / "expected").glob("*.json"))) >= 39


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_matches_expected(path: Path):
    text, calls = run(path)
    expected = minify((ROOT / "tests" / "expected" / path.name).read_text())
    assert f'{{"reply":{text},"host-calls":{compact(calls)}}}' == expected

    # The typed reading keeps every value.
    ((kind, body),) = json.loads(text).items()
    ty = {"pack": "ContextPack", "handled": "Handling", "failed": "AssemblyFailure"}[kind]
    typed = decode(body, ["ref", ty])
    assert without_nulls(as_json(typed)) == without_nulls(body)
    # The snapshot's entries are read when first looked at: each reads
    # back as it came too.
    snapshot = {"pack": lambda t: t.snapshot, "failed": lambda t: t.snapshot,
                "handled": lambda t: t.dispatch.value.pack.snapshot if t.dispatch.tag == "fallback" else None}[kind](typed)
    if snapshot is not None:
        raw = snapshot.entries.raw()
        assert [without_nulls(as_json(e)) for e in snapshot.entries] == without_nulls(raw)
        assert all(isinstance(e, cp.SnapshotEntry) for e in snapshot.entries)
