"""How much of each turn a provider's prompt cache could serve, and what
it costs: 50-turn conversations laid out several ways, turn after turn,
billed as OpenAI and as Anthropic bill them.

The cases:
- **RAG chat** (issue 45's): a 1,500-token system prompt; each turn a
  ~200-token question, a ~400-token answer and 6 freshly retrieved
  ~500-token documents; a budget of 16,000 tokens of o200k.
- **Agent loop**: the same system prompt; five tasks the user gives in
  turn, each worked in ten steps of a ~60-token tool call and its
  ~400-token result; 2 fresh ~500-token memories a step; 16,000 tokens.
  Each step is a request.
- **Long chat**: the system prompt, then 50 questions of ~150 tokens and
  answers of ~1,000, no documents, 16,000 tokens: the conversation gives
  way again and again.

Each request is tokenised by tiktoken itself, apart from ctxpack's
counters, and recounted within the budget as OpenAI's cookbook counts a
chat request: 3 tokens a message, its role's and every field's value
(tool calls as their JSON), and 3 that prime the reply.

**OpenAI** caches a prefix of 1,024 tokens and more, in steps of 128: the
tokens a request shares from its start with the previous one, framed as
OpenAI's chat format frames them (``<|im_start|>role\\n…<|im_end|>``, a
message's tool calls as their JSON after its text).

**Anthropic** caches where a request marks ``cache_control``: a
breakpoint reads the longest prefix an earlier request wrote that ends
within 20 blocks before it, and writes its own prefix (if it has 1,024
tokens, Claude Sonnet 4.5's least); reads cost 0.1 of an input token,
writes 1.25, the rest 1. Blocks are counted in o200k, 3 tokens more a
message (Claude's tokenizer is not public). The breakpoints are as each
layout emits them: ctxpack's in its request (``pack.chat``, the chat
given in Anthropic's shape); the template's on its
system prompt, as one adds it by hand; by hand, on the system prompt and
the history's last message.

Columns: the input tokens of turns 2–50; the share OpenAI bills cached;
Anthropic's cost relative to sending the same requests uncached, and the
template's ÷ the layout's; and Anthropic's bill in input tokens' worth
(a layout that sends less pays less at the same cached share).

Layouts:
- ctxpack cache-first — what a newcomer writes: the chat given as it
  is (``chat=Chat(shape=…, messages=…)``), ``model`` and ``budget``, and
  ``pack.chat.json()`` sent; a chat is packed cache-first by default —:
  the system prompt, the conversation giving way in steps (``plan.cut_share``, 0.55 of
  the budget at 4 bytes a token, by default), then what changes every
  turn, the newest user turn last; and the same giving way turn by turn
  (``cut_share=0``); and the same compacting (``COMPACTING``): past 0.8
  of the budget the oldest tool results are cleared (2,000 tokens at a
  time at least) and the oldest turns summarised in 512 tokens, the
  summary passed back each turn (the summariser, a stand-in, keeps the
  leading words; the tokens it is sent are shown apart, and billed
  uncached in ``bill``);
- ctxpack context-first (``layout="context-first"``, its order before):
  the system prompt, the retrieved documents, then the conversation;
- a LangChain template: the system prompt, the documents, then
  ``trim_messages`` of the history within what is left;
- by hand, stable first (the RAG chat): the system prompt, the history
  giving way 4,000 tokens at a time, then the documents and the question
  in the last message;
- the best window in that order (the RAG chat): each turn's first
  exchange chosen knowing the whole conversation, for the most served
  over turns 2–50 — the ceiling of any layout that keeps the newest
  exchanges in this order.

``TIKTOKEN_CACHE_DIR`` (``bench/prepare`` fills it) spares tiktoken its
download. ``python hosts/python/bench/prompt_cache.py``.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import tiktoken
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages import trim_messages as lc_trim_messages

import ctxpack_wasm as cp

TURNS, BUDGET, STEP = 50, 16_000, 4_000
#: The plan of ctxpack's compacting layout: compacted past 0.8 of the
#: budget, tool results cleared 2,000 tokens at a time at least.
COMPACTING = {"compact_share": 0.8, "compact_tokens": 512, "clear_at_least": 2_000}
WORDS = ("refund order shipping delay invoice account password reset warehouse carrier parcel "
         "customer return label policy window stock the a to of and in is it for on with").split()
ENC = tiktoken.get_encoding("o200k_base")
#: Anthropic's least cacheable prefix (Claude Sonnet 4.5), its look-back,
#: and its prices relative to an input token.
MIN_CACHED, LOOK_BACK, READ, WRITE = 1_024, 20, 0.1, 1.25


def words(rng: random.Random, tokens: int) -> str:
    # About one token a word for this vocabulary, checked below.
    return " ".join(rng.choice(WORDS) for _ in range(tokens))


def count(text: str) -> int:
    return len(ENC.encode(text, disallowed_special=()))


def as_json(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def per_message(m: dict[str, Any]) -> int:
    """OpenAI's cookbook count of one message: 3, and every field's value
    (the role's, the content's, a call id's; tool calls as their JSON)."""
    return 3 + sum(count(v if isinstance(v, str) else as_json(v)) for v in m.values() if v is not None)


def sent(messages: list[dict[str, Any]]) -> int:
    """A request of ``messages`` as OpenAI's cookbook counts it: each
    message, and 3 that prime the reply."""
    return sum(per_message(m) for m in messages) + 3


def text_of(m: dict[str, Any]) -> str:
    """A message's text as sent: its content, its tool calls as JSON."""
    calls = as_json(m["tool_calls"]) if m.get("tool_calls") else ""
    return "\n".join(filter(None, [m.get("content") or "", calls]))


def framed(messages: list[dict[str, Any]]) -> list[int]:
    """The request as OpenAI's chat format frames it, in o200k tokens."""
    out: list[int] = []
    for m in messages:
        out += ENC.encode(f"<|im_start|>{m['role']}\n{text_of(m)}<|im_end|>", allowed_special="all")
    return out


def openai_cached(before: list[int], now: list[int]) -> int:
    n = 0
    for x, y in zip(before, now):
        if x != y:
            break
        n += 1
    return 0 if n < 1024 else n // 128 * 128


@dataclass
class Anthropic:
    """Anthropic's prompt cache over one conversation's requests."""

    written: set[str] = field(default_factory=set)

    def bill(self, body: dict[str, Any]) -> tuple[int, int, int]:
        """Tokens of ``body`` read from the cache, written to it, and sent
        uncached; the cache keeps the prefixes it wrote."""
        system = body["system"] if isinstance(body["system"], list) else (
            [{"type": "text", "text": body["system"]}] if body["system"] else [])
        messages = [{**m, "content": [{"type": "text", "text": m["content"]}]} if isinstance(m["content"], str)
                    else m for m in body["messages"]]
        blocks = [("system", b) for b in system] + [(m["role"], b) for m in messages for b in m["content"]]
        firsts = {len(system) + sum(len(m["content"]) for m in messages[:k]) for k in range(len(messages))}
        chain, ends, tokens = hashlib.sha256(), [], []
        total = 0
        for k, (role, b) in enumerate(blocks):
            plain = {key: v for key, v in b.items() if key != "cache_control"}
            chain.update(json.dumps([role, plain], sort_keys=True).encode())
            total += count(b.get("text") or json.dumps(b.get("input") or b.get("content") or "")) + (3 if k in firsts else 0)
            ends.append(chain.copy().hexdigest())
            tokens.append(total)
        marks = [k for k, (_, b) in enumerate(blocks) if "cache_control" in b]
        assert len(marks) <= 4, marks
        read = 0
        for k in marks:
            for j in range(k, max(-1, k - LOOK_BACK), -1):
                if ends[j] in self.written:
                    read = max(read, tokens[j])
                    break
        cached = [k for k in marks if tokens[k] >= MIN_CACHED]
        written = max((tokens[k] for k in cached), default=0)
        self.written.update(ends[k] for k in cached)
        write = max(0, written - read)
        return read, write, total - read - write


@dataclass
class Request:
    """One request: the conversation so far (OpenAI messages, the newest
    last), the documents retrieved for it and the query."""

    history: list[dict[str, Any]]
    docs: list[str]
    query: str


class Case:
    name: str
    system: str
    requests: list[Request]


def rag_chat(seed: int) -> Case:
    rng = random.Random(seed)
    case = Case()
    case.name = "RAG chat"
    case.system = "You are the support agent of a shop. " + words(rng, 1_500)
    turns = [(words(rng, 200), words(rng, 400), [words(rng, 500) for _ in range(6)]) for _ in range(TURNS)]
    case.requests = []
    for t in range(TURNS):
        history = [m for q, a, _ in turns[:t] for m in ({"role": "user", "content": q},
                                                        {"role": "assistant", "content": a})]
        case.requests.append(Request(history + [{"role": "user", "content": turns[t][0]}], turns[t][2], turns[t][0]))
    return case


def agent_loop(seed: int) -> Case:
    rng = random.Random(seed)
    case = Case()
    case.name = "agent loop"
    case.system = "You are an agent with a search tool. " + words(rng, 1_500)
    messages: list[dict[str, Any]] = []
    case.requests = []
    for t in range(TURNS):
        task, step = divmod(t, 10)
        if step == 0:
            if t > 0:
                messages.append({"role": "assistant", "content": words(rng, 150)})
            messages.append({"role": "user", "content": words(rng, 200)})
            query = messages[-1]["content"]
        else:
            call = f"call-{t}"
            messages.append({"role": "assistant", "content": "", "tool_calls": [{
                "id": call, "type": "function",
                "function": {"name": "search", "arguments": json.dumps({"q": words(rng, 60)})}}]})
            messages.append({"role": "tool", "tool_call_id": call, "content": words(rng, 400)})
        case.requests.append(Request(list(messages), [words(rng, 500) for _ in range(2)], query))
    return case


def long_chat(seed: int) -> Case:
    rng = random.Random(seed)
    case = Case()
    case.name = "long chat"
    case.system = "You are a writing assistant. " + words(rng, 1_500)
    turns = [(words(rng, 150), words(rng, 1_000)) for _ in range(TURNS)]
    case.requests = []
    for t in range(TURNS):
        history = [m for q, a in turns[:t] for m in ({"role": "user", "content": q},
                                                     {"role": "assistant", "content": a})]
        case.requests.append(Request(history + [{"role": "user", "content": turns[t][0]}], [], turns[t][0]))
    return case


class _Docs:
    def __init__(self, docs: list[str]) -> None:
        self.docs = docs

    def retrieve(self, context: Any, query: str, limit: int) -> list[cp.Candidate]:
        return [cp.Candidate(id=f"doc-{i}", section="relevant-knowledge", text=d, trust="trusted",
                             provenance=cp.Provenance(source_kind="retrieved", reference=f"kb/{i}"),
                             score=1.0 - i / 10)
                for i, d in enumerate(self.docs[:limit])]


Layout = Callable[[Case, Request], tuple[list[dict[str, Any]], dict[str, Any]]]


class Summariser:
    """A stand-in for a model that summarises: the text's leading words,
    within the target. Counts what a real one would be sent."""

    def __init__(self) -> None:
        self.calls = 0
        self.tokens = 0

    def summarize(self, requests: list[Any], tokenizer: Any) -> list[str]:
        self.calls += 1
        self.tokens += sum(count(r.text) for r in requests)
        return [ENC.decode(ENC.encode(r.text)[:r.target_tokens]).strip() for r in requests]


def ctxpack(layout: Optional[str] = None, plan: Optional[dict[str, Any]] = None) -> Layout:
    """ctxpack's pack, in its default layout or ``layout``, with its
    default plan or ``plan``: the chat given as it is, once in OpenAI's
    shape for gpt-4o and once in Anthropic's for Claude (counted in
    o200k), and each request sent as the pack gives it. A plan that
    compacts is lent a summariser, and each request passes back the
    compaction the last pack of its shape returned; the summariser
    counted in Anthropic's bill is the Anthropic requests'."""
    builder = cp.Builder({"profile": {"rag": {"retrieve_limit": 6}}, "plan": plan or {}})
    summarisers = {shape: Summariser() for shape in ("openai-chat", "anthropic")}
    state: dict[str, Any] = {}

    def pack(case: Case, r: Request, model: str, chat: cp.Chat, **more: Any) -> Any:
        key = cp.ChatShape(chat.shape).value
        pack = builder.assemble(cp.AssembleRequest(
            query=r.query, model=model, budget=BUDGET, system_prompt=case.system, chat=chat,
            layout=layout, compaction=state.get(key), context=cp.AgentContext(session_id="bench", trace_id="bench"),
            **more), sources=_Docs(r.docs), summarizer=summarisers[key])
        state[key] = pack.compaction
        assert pack.chat is not None
        return pack.chat.json()

    def run(case: Case, r: Request) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        openai = pack(case, r, "gpt-4o", cp.Chat(shape="openai-chat", messages=r.history))
        anthropic = pack(case, r, "claude-sonnet-4-5",
                         cp.Chat(shape="anthropic", messages=anthropic_of(r.history, set())["messages"]),
                         tokenizer="o200k-base")
        run.summariser = summarisers["anthropic"]  # type: ignore[attr-defined]
        return openai["messages"], anthropic
    return run


def _lc(m: dict[str, Any]) -> BaseMessage:
    if m["role"] == "user":
        return HumanMessage(m["content"])
    if m["role"] == "tool":
        return ToolMessage(m["content"], tool_call_id=m["tool_call_id"])
    calls = [{"id": c["id"], "name": c["function"]["name"], "args": json.loads(c["function"]["arguments"])}
             for c in m.get("tool_calls") or []]
    return AIMessage(m["content"], tool_calls=calls)


def _openai(m: BaseMessage) -> dict[str, Any]:
    if isinstance(m, ToolMessage):
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    if isinstance(m, AIMessage):
        out: dict[str, Any] = {"role": "assistant", "content": m.content}
        if m.tool_calls:
            out["tool_calls"] = [{"id": c["id"], "type": "function", "function": {
                "name": c["name"], "arguments": json.dumps(c["args"])}} for c in m.tool_calls]
        return out
    return {"role": "user", "content": m.content}


def anthropic_of(messages: list[dict[str, Any]], marks: set[int]) -> dict[str, Any]:
    """OpenAI messages in Anthropic's shape, by hand: the leading system
    messages as the system blocks, the rest as blocks of merged turns;
    ``cache_control`` on the last block of each message in ``marks``."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for k, m in enumerate(messages):
        mark = {"cache_control": {"type": "ephemeral"}} if k in marks else {}
        if m["role"] == "system" and not out:
            system.append({"type": "text", "text": m["content"], **mark})
            continue
        if m["role"] == "tool":
            role, blocks = "user", [{"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}]
        elif m["role"] == "assistant":
            role = "assistant"
            blocks = ([{"type": "text", "text": m["content"]}] if m["content"] else []) + [
                {"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                 "input": json.loads(c["function"]["arguments"])} for c in m.get("tool_calls") or []]
        else:
            role, blocks = "user", [{"type": "text", "text": m["content"]}]
        blocks[-1].update(mark)
        if out and out[-1]["role"] == role:
            out[-1]["content"] += blocks
        else:
            out.append({"role": role, "content": blocks})
    return {"system": system, "messages": out}


def langchain_template(case: Case, r: Request) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    head = [{"role": "system", "content": case.system}]
    if r.docs:
        head.append({"role": "system", "content": "\n\n".join(r.docs)})
    kept = lc_trim_messages([_lc(m) for m in r.history], max_tokens=BUDGET - sent(head), strategy="last",
                            start_on="human", token_counter=lambda ms: sum(per_message(_openai(m)) for m in ms))
    messages = head + [_openai(m) for m in kept]
    # The breakpoint one adds by hand: the system prompt, which leads.
    return messages, anthropic_of(messages, {0})


class StableFirst:
    """By hand: the system prompt, the history giving way in steps of
    STEP tokens, then the documents and the question in the last message."""

    def __init__(self) -> None:
        self.start = 0

    def __call__(self, case: Case, r: Request) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        head = [{"role": "system", "content": case.system}]
        *history, question = r.history
        last = {"role": "user", "content": "\n\n".join([*r.docs, question["content"]])}
        room = BUDGET - sent(head + [last])
        pairs = [history[k:k + 2] for k in range(0, len(history), 2)]
        if self.start > len(pairs):
            self.start = 0
        while sum(per_message(m) for p in pairs[self.start:] for m in p) > room:
            dropped = 0
            while self.start < len(pairs) and dropped < STEP:
                dropped += sum(per_message(m) for m in pairs[self.start])
                self.start += 1
        messages = head + [m for p in pairs[self.start:] for m in p] + [last]
        return messages, anthropic_of(messages, {0, len(messages) - 2})


class BestWindow:
    """The most any window of the newest exchanges could have cached, in
    the by-hand order (the system prompt, the history, then the documents
    and the question in the last message): over every choice of each
    turn's first exchange, the one whose turns 2–50 share the most of
    their tokens with the turn before, as OpenAI bills it. Computed over
    the whole conversation at once (a layout sees one turn at a time), by
    dynamic programming on the ratio (Dinkelbach's method): the ceiling
    of a layout that keeps the newest exchanges and keeps this order."""

    def __init__(self) -> None:
        self.chosen: dict[int, list[dict[str, Any]]] = {}

    def __call__(self, case: Case, r: Request) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        if not self.chosen:
            self.chosen = dict(enumerate(self.solve(case)))
        messages = self.chosen[next(t for t, q in enumerate(case.requests) if q is r)]
        return messages, anthropic_of(messages, {0, len(messages) - 2})

    @staticmethod
    def solve(case: Case) -> list[list[dict[str, Any]]]:
        # Per turn, each window that fits: its first exchange, messages
        # and framed tokens.
        options: list[list[tuple[list[dict[str, Any]], list[int]]]] = []
        for r in case.requests:
            *history, question = r.history
            head = [{"role": "system", "content": case.system}]
            last = {"role": "user", "content": "\n\n".join([*r.docs, question["content"]])}
            turn = []
            for first in range(0, len(history) + 1, 2):
                messages = head + history[first:] + [last]
                if sent(messages) <= BUDGET:
                    turn.append((messages, framed(messages)))
            options.append(turn)
        cached = [[[openai_cached(b[1], a[1]) for b in options[t - 1]] for a in options[t]]
                  for t in range(1, len(options))]
        share, choice = 0.0, [0] * len(options)
        for _ in range(50):
            # The best of cached − share × sent, backwards over the turns.
            value = [0.0] * len(options[-1])
            back: list[list[int]] = []
            for t in range(len(options) - 1, 0, -1):
                here = [len(o[1]) for o in options[t]]
                prev = [max(range(len(options[t])), key=lambda a: cached[t - 1][a][b] - share * here[a] + value[a])
                        for b in range(len(options[t - 1]))]
                value = [cached[t - 1][prev[b]][b] - share * here[prev[b]] + value[prev[b]]
                         for b in range(len(options[t - 1]))]
                back.append(prev)
            choice = [0]
            for prev in reversed(back):
                choice.append(prev[choice[-1]])
            hit = sum(cached[t - 1][choice[t]][choice[t - 1]] for t in range(1, len(options)))
            total = sum(len(options[t][choice[t]][1]) for t in range(1, len(options)))
            if hit / total <= share:
                break
            share = hit / total
        return [options[t][choice[t]][0] for t in range(len(options))]


def layouts() -> list[tuple[str, Callable[[], Layout], tuple[str, ...]]]:
    """Each layout, made afresh for each case, and the cases it runs."""
    every = ("RAG chat", "agent loop", "long chat")
    return [
        ("ctxpack cache-first", lambda: ctxpack(), every),
        ("  turn by turn (cut_share 0)", lambda: ctxpack("cache-first", {"cut_share": 0}), every),
        ("  compacting", lambda: ctxpack("cache-first", COMPACTING), ("agent loop", "long chat")),
        ("ctxpack context-first", lambda: ctxpack("context-first"), ("RAG chat", "agent loop")),
        ("LangChain template", lambda: langchain_template, every),
        ("by hand, stable first", StableFirst, ("RAG chat",)),
        ("best window, same order", BestWindow, ("RAG chat",)),
    ]


@dataclass
class Tally:
    requests: int = 0
    tokens: int = 0
    openai: int = 0
    read: int = 0
    write: int = 0
    uncached: int = 0
    #: The summariser's calls and the tokens they were sent.
    summarised: tuple[int, int] = (0, 0)

    @property
    def bill(self) -> float:
        """Anthropic's bill in input tokens' worth: reads, writes, what is
        sent uncached, and what the summariser was sent (uncached)."""
        return READ * self.read + WRITE * self.write + self.uncached + self.summarised[1]

    @property
    def cost(self) -> float:
        return (READ * self.read + WRITE * self.write + self.uncached) / (self.read + self.write + self.uncached)


def measure(case: Case, layout: Layout) -> Tally:
    tally, anthropic = Tally(), Anthropic()
    before: list[int] = []
    for t, r in enumerate(case.requests):
        messages, body = layout(case, r)
        assert sent(messages) <= BUDGET, (case.name, t, sent(messages))
        tokens = framed(messages)
        read, write, uncached = anthropic.bill(body)
        if t > 0:
            tally.requests += 1
            tally.tokens += len(tokens)
            tally.openai += openai_cached(before, tokens)
            tally.read, tally.write, tally.uncached = tally.read + read, tally.write + write, tally.uncached + uncached
        before = tokens
    summariser = getattr(layout, "summariser", None)
    if summariser is not None:
        tally.summarised = (summariser.calls, summariser.tokens)
    return tally


def main(seed: int = 45) -> None:
    cases = [rag_chat(seed), agent_loop(seed), long_chat(seed)]
    assert 180 <= count(cases[0].requests[0].query) <= 260, "a question is about 200 tokens"
    print(f"{'case':<11} {'layout':<28} {'input':>8} {'OpenAI':>7} {'Anthropic':>9} {'÷ template':>10} "
          f"{'bill':>8}")
    for case in cases:
        rows: list[tuple[str, Tally]] = []
        for name, make, runs in layouts():
            if case.name in runs:
                rows.append((name, measure(case, make())))
        template = next(t for n, t in rows if n == "LangChain template")
        for name, t in rows:
            print(f"{case.name:<11} {name:<28} {t.tokens:>8} {t.openai / t.tokens:>7.1%} "
                  f"{t.cost:>9.1%} {template.cost / t.cost:>9.2f}× {t.bill / 1000:>7.0f}k"
                  + (f"  (summariser: {t.summarised[0]} calls, {t.summarised[1]} tokens sent)"
                     if t.summarised[0] else ""))


if __name__ == "__main__":
    main()
