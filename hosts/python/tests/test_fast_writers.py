"""The package's fast JSON writers (``_candidate``, ``_candidate_text``,
``_provenance``, ``_turns_text``) list fields by hand, for speed. Each is
checked here, field for field, against the checking encoder, which reads
the generated schema (``types._SCHEMA``, written from the WIT): a field the
WIT gains and a writer does not write fails here instead of being dropped
without a word."""

from __future__ import annotations

import itertools
import json

import pytest

import ctxpack_wasm
from ctxpack_wasm import types
from ctxpack_wasm._codec import encode

# The records the fast writers write, and each writer as a function of an
# instance to the JSON value it sends.
WRITERS = {
    "Candidate": [
        ("_candidate", lambda c: ctxpack_wasm._candidate(c, "c")),
        ("_candidate_text", lambda c: json.loads(ctxpack_wasm._candidate_text(c))),
    ],
    "Provenance": [("_provenance", ctxpack_wasm._provenance)],
    "ConversationTurn": [("_turns_text", lambda t: json.loads(ctxpack_wasm._turns_text([t]))[0])],
}


def sample(ty, n: int):
    """A value of WIT type `ty` (as the schema spells it) that differs with
    `n`: every field of a record is set, options to a value."""
    if isinstance(ty, str):
        return {"string": f"v{n}", "bool": True, "f64": 0.5 + n, "f32": 0.5 + n}.get(ty, 7 + n)
    if ty[0] == "option":
        return sample(ty[1], n)
    if ty[0] == "list":
        return [sample(ty[1], n)]
    entry = types._SCHEMA[ty[1]]
    if entry[0] == "enum":
        members = list(entry[1])
        return members[n % len(members)]
    if entry[0] == "record":
        return entry[1](**{py: sample(t, n + k) for k, (py, _, t) in enumerate(entry[2])})
    raise AssertionError(f"no sample for {ty}")


def optional_fields(name: str) -> list[str]:
    return [py for py, _, t in types._SCHEMA[name][2] if isinstance(t, list) and t[0] == "option"]


def present(value):
    """A JSON value without its absent options (a writer leaves them out;
    the checking encoder writes them as null)."""
    if isinstance(value, dict):
        return {k: present(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [present(v) for v in value]
    return value


def cases(name: str):
    """Every field set; then each subset of the optional fields left out
    (the writers branch on them)."""
    full = sample(["ref", name], 0)
    optional = optional_fields(name)
    for r in range(len(optional) + 1):
        for left_out in itertools.combinations(optional, r):
            yield left_out, type(full)(**{
                py: (None if py in left_out else getattr(full, py))
                for py, _, _ in types._SCHEMA[name][2]
            })


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_every_field_the_schema_has_is_written(name):
    assert types._SCHEMA[name][0] == "record"
    for left_out, value in cases(name):
        want = present(encode(value, ["ref", name], "x"))
        # Every field the schema names is in the case it is not left out of.
        fields = {wit for py, wit, _ in types._SCHEMA[name][2] if py not in left_out}
        assert set(want) == fields, (name, left_out)
        for writer, write in WRITERS[name]:
            assert present(write(value)) == want, (writer, left_out)


def test_the_samples_set_every_field():
    # The check above would pass vacuously on a sample that left a field
    # at its default.
    for name in WRITERS:
        value = sample(["ref", name], 0)
        for py, _, _ in types._SCHEMA[name][2]:
            assert getattr(value, py) is not None, (name, py)


def test_a_writer_that_drops_a_field_is_caught():
    value = sample(["ref", "Candidate"], 0)
    want = present(encode(value, ["ref", "Candidate"], "x"))
    written = json.loads(ctxpack_wasm._candidate_text(value))
    written.pop("token-count")
    assert present(written) != want
