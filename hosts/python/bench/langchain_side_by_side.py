"""ctxpack beside LangChain for the two jobs users bring: trimming a chat
to a budget and packing retrieved documents into one. Each job is written
as a user would write it with each library (the function bodies below);
the script prints their lines of code, what they kept and what that costs
in o200k tokens (counted by ctxpack as it renders them), and their speed,
measured in the same run (median of the runs). LangChain counts with its own
approximate counter; ctxpack counts exactly (o200k_base); both are also
run counting the same way (characters / 4) to compare like with like,
and, where tiktoken's o200k table is at hand (`bench/prepare` puts it in
`TIKTOKEN_CACHE_DIR`; it is a download otherwise), both trim with the
exact count of what is sent (OpenAI's: o200k, 3 tokens a message and
its role's, 3 priming the reply): LangChain with tiktoken, ctxpack with
its own encoding (``model="gpt-4o"``) and with tiktoken's counter lent.

    target/python-venv/bin/python hosts/python/bench/langchain_side_by_side.py
"""

from __future__ import annotations

import inspect
import math
import random
import statistics
import time
from typing import Any, Callable

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages import trim_messages as lc_trim_messages
from langchain_core.messages.utils import count_tokens_approximately

import ctxpack_wasm as cp
from ctxpack_wasm.chat import chat as as_chat
from ctxpack_wasm.chat import trim_messages
from ctxpack_wasm.langchain import CtxpackCompressor

WORDS = ("refund order shipping delay invoice account password reset the a to of and in "
         "is it for on with as was at by café naïve 🙂").split()


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


# --- the plain trim --------------------------------------------------------

def langchain_trim(messages: list, budget: int) -> list:
    return lc_trim_messages(messages, max_tokens=budget, strategy="last", start_on="human",
                            token_counter=count_tokens_approximately)


def ctxpack_trim(messages: list, budget: int) -> list:
    return trim_messages(messages, max_tokens=budget, start_on="human")


def quarter(messages: list) -> int:  # the same counting for both: characters / 4
    return sum(math.ceil(len(m.content) / 4) for m in messages)


def langchain_trim_chars(messages: list, budget: int) -> list:
    return lc_trim_messages(messages, max_tokens=budget, strategy="last", start_on="human",
                            token_counter=quarter)


def ctxpack_trim_chars(messages: list, budget: int) -> list:
    return trim_messages(messages, max_tokens=budget, start_on="human",
                         token_counter=cp.Tokenizer.chars_per_token(4))


def exact_counter() -> Callable[[list], int] | None:
    """What OpenAI counts for a request of the messages (o200k, 3 tokens a
    message and its role's, 3 priming the reply: the cookbook's count),
    by tiktoken, if its table is at hand."""
    try:
        import tiktoken

        enc = tiktoken.get_encoding("o200k_base")
    except Exception:
        return None

    def count(messages: list) -> int:
        return sum(len(enc.encode_ordinary(m.content)) + 4 for m in messages) + 3
    return count


EXACT = exact_counter()


def langchain_trim_exact(messages: list, budget: int) -> list:
    return lc_trim_messages(messages, max_tokens=budget, strategy="last", start_on="human",
                            token_counter=EXACT)


def ctxpack_trim_exact(messages: list, budget: int) -> list:
    return trim_messages(messages, max_tokens=budget, start_on="human", model="gpt-4o")


def ctxpack_trim_lent(messages: list, budget: int) -> list:
    return trim_messages(messages, max_tokens=budget, start_on="human", token_counter=EXACT)


# --- the RAG pack -----------------------------------------------------------

def langchain_pack(docs: list, budget: int) -> list:
    kept, used, seen = [], 0, set()
    for doc in sorted(docs, key=lambda d: -d.metadata.get("relevance_score", 0)):
        if doc.page_content in seen:
            continue
        block = f"[source: {doc.metadata['source']}]\n{doc.page_content}"
        cost = count_tokens_approximately([HumanMessage(block)])
        if used + cost > budget:
            continue
        kept.append(doc)
        seen.add(doc.page_content)
        used += cost
    return kept


def ctxpack_pack(docs: list, budget: int) -> list:
    return list(CtxpackCompressor(max_tokens=budget).compress_documents(docs, "refunds"))


def exact(kept: list) -> int:
    """What the kept messages or documents cost in o200k tokens as they
    are sent, counted by ctxpack (the check of each row): the documents as
    one message, the messages as a request to gpt-4o (OpenAI's count)."""
    if kept and isinstance(kept[0], Document):
        return CtxpackCompressor(max_tokens=10**9).pack_documents(kept, "refunds")[1].budget_used
    return cp.Builder().count(chat=as_chat(kept), model="gpt-4o").total


def lines(f: Callable[..., Any]) -> int:
    """Lines of the function's body: what a user writes."""
    body = inspect.getsource(f).splitlines()[1:]
    return sum(1 for line in body if line.strip() and not line.strip().startswith("#"))


def timed(f: Callable[[], Any], runs: int) -> float:
    f()  # warm: the component compiled, the caches filled
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return statistics.median(out) * 1000


def main() -> None:
    rng = random.Random(42)
    chat = [(HumanMessage if i % 2 == 0 else AIMessage)(text(rng, rng.randint(5, 60)))
            for i in range(10_000)]
    docs = [Document(page_content=text(rng, rng.randint(40, 300)),
                     metadata={"source": f"kb/{i}.md", "relevance_score": rng.random()})
            for i in range(200)]
    docs += docs[:10]  # a retriever that answers some twice
    rows = [
        ("trim 10k messages to 8k tokens", "LangChain (approximate count)", langchain_trim, chat, 8000, 5),
        ("", "ctxpack (o200k, no overhead)", ctxpack_trim, chat, 8000, 5),
        ("", "LangChain (chars / 4)", langchain_trim_chars, chat, 8000, 5),
        ("", "ctxpack (chars / 4)", ctxpack_trim_chars, chat, 8000, 5),
        *([("", "LangChain (tiktoken, OpenAI's count)", langchain_trim_exact, chat, 8000, 5),
           ("", "ctxpack (gpt-4o, OpenAI's count)", ctxpack_trim_exact, chat, 8000, 5),
           ("", "ctxpack (tiktoken's counter lent)", ctxpack_trim_lent, chat, 8000, 5)]
          if EXACT is not None else []),
        ("pack 210 documents into 4k tokens", "LangChain (approximate count)", langchain_pack, docs, 4000, 20),
        ("", "ctxpack (exact o200k)", ctxpack_pack, docs, 4000, 20),
    ]
    print(f"{'job':34} {'with':30} {'lines':>5} {'kept':>5} {'o200k':>6} {'ms':>7}")
    for job, who, f, data, budget, runs in rows:
        kept = f(data, budget)
        ms = timed(lambda: f(data, budget), runs)
        print(f"{job:34} {who:30} {lines(f):>5} {len(kept):>5} {exact(kept):>6} {ms:>7.1f}")


if __name__ == "__main__":
    main()
