"""The stores of a scenario file (its `host` key), as Python callbacks:
what `crates/ctxpack-scenario/src/stores.rs` answers, call for call."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace
from typing import Any

from ctxpack_wasm import HostError

NOT_PROVIDED = "not provided by this host"


def leading_words(text: str, max_chars: int) -> str:
    """The leading words that fit in `max_chars` bytes of UTF-8."""
    out = ""
    for word in text.split():
        if len(out.encode()) + len(word.encode()) + 1 > max_chars:
            break
        out = f"{out} {word}" if out else word
    return out


class ScenarioHost:
    def __init__(self, answers: dict) -> None:
        self.answers = answers
        self.calls: Counter = Counter()

    def _source(self, name: str, key: str, limit: Any) -> list:
        self.calls[name] += 1
        answer = self.answers.get(key)
        if answer is None:
            raise HostError(NOT_PROVIDED)
        ((kind, value),) = answer.items()
        if kind == "error":
            raise HostError(value)
        if kind == "items" and limit is not None:
            return list(value[:limit])
        return list(value)

    def lend(self, sources: tuple) -> Any:
        """This host's sources for a builder whose profile calls
        ``sources`` (capabilities, ``PROFILES[builder.profile]``): a source
        the profile never calls is refused by the package."""
        methods = {"sources.retrieve": "retrieve", "sources.expand-graph": "expand_graph",
                   "sources.recall-memory": "recall_memory",
                   "sources.repository-state": "repository_state"}
        return SimpleNamespace(**{m: getattr(self, m) for c, m in methods.items() if c in sources})

    # sources
    def retrieve(self, context, query, limit):
        return self._source("sources.retrieve", "retrieve", limit)

    def expand_graph(self, context, item_ids, depth):
        return self._source("sources.expand-graph", "expand-graph", None)

    def recall_memory(self, context, user_id, query, limit):
        return self._source("sources.recall-memory", "recall-memory", limit)

    def repository_state(self, context):
        return self._source("sources.repository-state", "repository-state", None)

    # policy
    def review(self, context, items):
        self.calls["policy.review"] += 1
        rules = self.answers.get("policy")
        if rules is None:
            raise HostError(NOT_PROVIDED)
        if rules.get("error") is not None:
            raise HostError(rules["error"])
        deny, redact = rules.get("deny", {}), rules.get("redact", {})
        verdicts = []
        for c in items:
            if c.id in deny:
                verdicts.append({"deny": deny[c.id]})
            elif c.id in redact:
                verdicts.append({"redact": redact[c.id]})
            else:
                verdicts.append("allow")
        n = rules.get("verdicts")
        if n is not None:
            verdicts = (verdicts + ["allow"] * n)[:n]
        return verdicts

    # summarizer
    def summarize(self, requests, tokenizer):
        self.calls["summarizer.summarize"] += 1
        rule = self.answers.get("summarizer")
        if rule is None:
            raise HostError(NOT_PROVIDED)
        words = [leading_words(r.text, r.target_tokens * 4) for r in requests]
        if rule == "leading-words":
            return words
        if rule == "too-few":
            return words[1:]
        if rule == "too-many":
            return words + ["one too many"]
        ((kind, value),) = rule.items()
        if kind == "error":
            raise HostError(value)
        return [value] * len(requests)
