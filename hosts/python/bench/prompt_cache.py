"""How much of each turn a provider's prompt cache could serve: a 50-turn
RAG chat, laid out three ways, turn after turn, with what OpenAI bills.

The chat (the one in issue 45): a 1,500-token system prompt; each turn a
~200-token question, a ~400-token answer and 6 freshly retrieved ~500-token
documents; a budget of 16,000 tokens of o200k. Each turn's request is the
messages sent, tokenised as OpenAI's chat format frames them
(``<|im_start|>role\\n…<|im_end|>``) by tiktoken itself, apart from
ctxpack's counters; the tokens it shares from its start with the previous
turn's request are the prefix a cache could serve. OpenAI caches a prefix
of 1,024 tokens and more, in steps of 128.

Layouts:
- ctxpack cache-first (the default for the messages form, ``to_openai``):
  the system prompt, the conversation giving way in steps of whole turns
  (``cut_step`` 16), then the retrieved documents as a system message, and
  the question last;
- ctxpack context-first (``layout="context-first"``, its order before):
  the system prompt, the retrieved documents as a second system message,
  then the conversation;
- a LangChain template: the system prompt, the documents, then
  ``trim_messages`` of the history within what is left;
- by hand, stable first: the system prompt, the history (giving way in
  steps of 4,000 tokens, so its start stays put for many turns), then the
  documents and the question in the last message. What a cache-first
  layout can reach.

Every request is recounted and checked within the budget.

``TIKTOKEN_CACHE_DIR`` (``bench/prepare`` fills it) spares tiktoken its
download. ``python hosts/python/bench/prompt_cache.py``.
"""

from __future__ import annotations

import random
from typing import Any, Callable

import tiktoken
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages import trim_messages as lc_trim_messages

import ctxpack_wasm as cp
from ctxpack_wasm.chat import conversation, to_openai

TURNS, BUDGET, STEP = 50, 16_000, 4_000
WORDS = ("refund order shipping delay invoice account password reset warehouse carrier parcel "
         "customer return label policy window stock the a to of and in is it for on with").split()
ENC = tiktoken.get_encoding("o200k_base")


def words(rng: random.Random, tokens: int) -> str:
    # About one token a word for this vocabulary, checked below.
    return " ".join(rng.choice(WORDS) for _ in range(tokens))


def framed(messages: list[dict[str, Any]]) -> list[int]:
    """The request as OpenAI's chat format frames it, in o200k tokens."""
    out: list[int] = []
    for m in messages:
        out += ENC.encode(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>", allowed_special="all")
    return out


def sent(messages: list[dict[str, Any]]) -> int:
    """The messages' tokens as ctxpack's budget counts them: content and 3."""
    return sum(len(ENC.encode(m["content"], disallowed_special=())) + 3 for m in messages)


def shared(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def openai_cached(prefix: int) -> int:
    return 0 if prefix < 1024 else prefix // 128 * 128


class Chat:
    """The chat: its system prompt, and each turn's question, answer and documents."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.system = "You are the support agent of a shop. " + words(rng, 1_500)
        self.turns = [(words(rng, 200), words(rng, 400), [words(rng, 500) for _ in range(6)])
                      for _ in range(TURNS)]


class _Docs:
    def __init__(self, docs: list[str]) -> None:
        self.docs = docs

    def retrieve(self, context: Any, query: str, limit: int) -> list[cp.Candidate]:
        return [cp.Candidate(id=f"doc-{i}", section="relevant-knowledge", text=d, trust="trusted",
                             provenance=cp.Provenance(source_kind="retrieved", reference=f"kb/{i}"),
                             score=1.0 - i / 10)
                for i, d in enumerate(self.docs[:limit])]


def ctxpack(chat: Chat, t: int, builder: cp.Builder, layout: str) -> list[dict[str, Any]]:
    history = [m for q, a, _ in chat.turns[:t] for m in ({"role": "user", "content": q},
                                                          {"role": "assistant", "content": a})]
    messages = history + [{"role": "user", "content": chat.turns[t][0]}]
    pack = builder.assemble(cp.AssembleRequest(
        query=chat.turns[t][0], model="gpt-4o", budget=BUDGET, form="messages", system_prompt=chat.system,
        conversation=conversation(messages), layout=layout), sources=_Docs(chat.turns[t][2]))
    return to_openai(pack, messages)


def cache_first(chat: Chat, t: int, builder: cp.Builder) -> list[dict[str, Any]]:
    return ctxpack(chat, t, STEPPED, "cache-first")


def context_first(chat: Chat, t: int, builder: cp.Builder) -> list[dict[str, Any]]:
    return ctxpack(chat, t, builder, "context-first")


def langchain_template(chat: Chat, t: int, builder: cp.Builder) -> list[dict[str, Any]]:
    docs = "\n\n".join(chat.turns[t][2])
    head = [{"role": "system", "content": chat.system}, {"role": "system", "content": docs}]
    history = [m for q, a, _ in chat.turns[:t] for m in (HumanMessage(q), AIMessage(a))]
    history.append(HumanMessage(chat.turns[t][0]))
    kept = lc_trim_messages(history, max_tokens=BUDGET - sent(head), strategy="last", start_on="human",
                            token_counter=lambda ms: sum(len(ENC.encode(m.content)) + 3 for m in ms))
    return head + [{"role": "user" if m.type == "human" else "assistant", "content": m.content} for m in kept]


def stable_first(chat: Chat, t: int, builder: cp.Builder) -> list[dict[str, Any]]:
    head = [{"role": "system", "content": chat.system}]
    last = {"role": "user", "content": "\n\n".join(chat.turns[t][2]) + "\n\n" + chat.turns[t][0]}
    room = BUDGET - sent(head) - sent([last])
    pairs = [[{"role": "user", "content": q}, {"role": "assistant", "content": a}] for q, a, _ in chat.turns[:t]]
    # The history gives way in steps: whole turns from the start, at least
    # STEP tokens at a time, so its first message stays for many turns.
    start = stable_first.start  # type: ignore[attr-defined]
    while sum(sent(p) for p in pairs[start:]) > room:
        dropped = 0
        while start < len(pairs) and dropped < STEP:
            dropped += sent(pairs[start])
            start += 1
    stable_first.start = start  # type: ignore[attr-defined]
    return head + [m for p in pairs[start:] for m in p] + [last]


LAYOUTS: list[tuple[str, Callable[[Chat, int, cp.Builder], list[dict[str, Any]]]]] = [
    ("ctxpack cache-first (cut_step 16)", cache_first),
    ("ctxpack context-first (its order before)", context_first),
    ("LangChain template (system, docs, trim)", langchain_template),
    ("by hand: system, history in steps, docs + question", stable_first),
]


#: Cache-first, the conversation gives way sixteen turns (eight questions and
#: answers, ~4,800 tokens) at a time: the best step for this chat (12: 62.7%,
#: 14: 63.7%, 18: 64.4%, 20: 64.4%).
STEPPED = cp.Builder({"profile": {"rag": {"retrieve_limit": 6}}, "plan": {"cut_step": 16}})


def main() -> None:
    chat = Chat(45)
    assert 180 <= len(ENC.encode(chat.turns[0][0])) <= 260, "a question is about 200 tokens"
    builder = cp.Builder({"profile": {"rag": {"retrieve_limit": 6}}})
    print(f"{'layout':<52} {'input':>9} {'cached':>9} {'share':>6}")
    for name, layout in LAYOUTS:
        stable_first.start = 0  # type: ignore[attr-defined]
        before: list[int] = []
        total = cached = 0
        for t in range(TURNS):
            messages = layout(chat, t, builder)
            assert sent(messages) <= BUDGET, (name, t, sent(messages))
            tokens = framed(messages)
            if t > 0:
                total += len(tokens)
                cached += openai_cached(shared(before, tokens))
            before = tokens
        print(f"{name:<52} {total:>9} {cached:>9} {cached / total:>6.1%}")


if __name__ == "__main__":
    main()
