"""The scenario stores, replayed. There is one scenario host, in Rust
(``crates/ctxpack-scenario``'s ``InMemoryHost``);
``cargo run -p ctxpack-conformance --bin generated`` records what it was
asked and answered for every scenario (``NAME.calls.json``: the calls as
a step writes them, the answers as a step reads them). This host answers
each call with the recorded answer, after checking the call is the
recorded one — so the package asks exactly what the native core asks —
and is lent, per interface, by the package's own table of calls."""

from __future__ import annotations

import json
import os
from collections import Counter, deque
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ctxpack_wasm import HostError
from ctxpack_wasm._calls import CALLS
from ctxpack_wasm._codec import encode

ROOT = Path(__file__).resolve().parents[3]
GENERATED = Path(os.environ.get("CTXPACK_GENERATED", ROOT / "target" / "generated"))


def recording(scenario: Path) -> list:
    """The recorded calls of a scenario file: a corpus scenario's under
    ``corpus/``, a generated one's beside it."""
    if scenario.parent == ROOT / "tests" / "scenarios":
        path = GENERATED / "corpus" / f"{scenario.stem}.calls.json"
    else:
        path = scenario.with_name(f"{scenario.stem}.calls.json")
    assert path.is_file(), f"{path} is missing: hosts/python/run writes it"
    return json.loads(path.read_text())


def without_nulls(value: Any) -> Any:
    """JSON with its null fields left out (an absent option is either)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


class ReplayHost:
    """Answers every call as the Rust scenario host did, in order per
    call; ``calls`` counts them by capability, as the expected files do."""

    def __init__(self, recorded: list) -> None:
        self.queues: dict = {name: deque() for name in CALLS}
        for entry in recorded:
            ((name, args),) = entry["call"].items()
            self.queues[name].append((args, entry["answer"]))
        self.calls: Counter = Counter()
        self.wrong: list = []
        for name, known in CALLS.items():
            setattr(self, known.method, self._replayer(name, known))

    @classmethod
    def of(cls, scenario: Path) -> "ReplayHost":
        return cls(recording(scenario))

    def _replayer(self, name: str, known: Any):
        def replay(*values: Any) -> Any:
            self.calls[known.capability] += 1
            if known.context:
                values = values[1:]
            queue = self.queues[name]
            if not queue:
                self.wrong.append(f"{known.capability}: asked more often than the Rust host was")
                raise HostError("not in the recording")
            args, answer = queue.popleft()
            asked = {p: encode(v, t, p) for (p, t), v in zip(known.params, values)}
            if without_nulls(asked) != without_nulls(args):
                self.wrong.append(f"{known.capability}: asked {asked}, the Rust host was asked {args}")
            if "err" in answer:
                assert answer["err"]["capability"] == known.capability
                raise HostError(answer["err"]["message"])
            return answer["ok"]

        replay.__name__ = known.method
        return replay

    def lend(self, sources: tuple) -> Any:
        """This host's sources for a builder whose profile calls
        ``sources`` (capabilities, ``PROFILES[builder.profile]``): a source
        the profile never calls is refused by the package."""
        lent = {k.method: getattr(self, k.method) for k in CALLS.values()
                if k.interface == "sources" and k.capability in sources}
        return SimpleNamespace(**lent)

    def check(self) -> None:
        """Every call was the recorded one, and every recorded call was
        made (a callback's failed assertion would only fail its call)."""
        assert self.wrong == [], "\n".join(self.wrong)
        unasked = [name for name, queue in self.queues.items() for _ in queue]
        assert unasked == [], f"the Rust host was asked calls this package never made: {unasked}"
