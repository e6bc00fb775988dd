"""Chat from Python: a provider's messages in, the request to send out
(the kept messages as given, with cache hints), counting, and the
trim_messages drop-in against LangChain's own, offline. The chat itself is
the core's (its Rust tests); here, what the package maps."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages import trim_messages as langchain_trim

import ctxpack_wasm as cp
from ctxpack_wasm.chat import chat, to_langchain, trim_messages

WORDS = "refund order ship late the a when why how café 🙂 naïve x".split()


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def lc_chat(rng: random.Random, n: int) -> list:
    return [(HumanMessage if i % 2 == 0 else AIMessage)(content=text(rng, rng.randint(0, 12))) for i in range(n)]


def counted_as_ctxpack(chars_per_token: int):
    """A LangChain counter of messages: each message's content."""
    def count(messages) -> int:
        return sum(math.ceil(len(m.content) / chars_per_token) for m in messages)
    return count


def test_trim_keeps_what_langchains_trim_keeps_with_the_same_counter():
    rng = random.Random(7)
    builder = cp.Builder()
    for _ in range(150):
        messages = lc_chat(rng, rng.randint(1, 14))
        counter = counted_as_ctxpack(rng.choice([1, 3, 4]))
        max_tokens = rng.randint(0, 200)
        start_on = rng.choice([None, "human"])
        strategy = rng.choice(["last", "first"]) if start_on is None else "last"
        theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter=counter, strategy=strategy,
                                start_on=start_on)
        try:
            ours = trim_messages(messages, max_tokens=max_tokens, token_counter=counter, strategy=strategy,
                                 start_on=start_on, builder=builder)
        except cp.CtxpackError as e:
            # Where LangChain's keeps nothing of the conversation, ctxpack
            # says why instead.
            assert theirs == [] and strategy == "last", (e, theirs)
            assert e.error.value.field in ("max_tokens", "start_on")
            continue
        assert [id(m) for m in ours] == [id(m) for m in theirs], (max_tokens, start_on, strategy)


def test_a_counter_of_messages_is_given_the_callers_own_in_order():
    messages = [SystemMessage("sys"), HumanMessage("one"), AIMessage("two"), HumanMessage("three")]
    given: list[list[Any]] = []

    def counter(ms: list[BaseMessage]) -> int:
        given.append(ms)
        return 10 * len(ms)

    kept = trim_messages(messages, max_tokens=30, token_counter=counter, include_system=True)
    assert kept == [messages[0], messages[2], messages[3]]
    assert given and all(all(any(m is o for o in messages) for m in ms) for ms in given)
    # Never reversed: each list in the chat's order.
    assert all([messages.index(m) for m in ms] == sorted(messages.index(m) for m in ms) for ms in given)


def test_a_tool_call_is_never_kept_apart_from_its_results():
    messages = [HumanMessage("weather?"),
                AIMessage("", tool_calls=[{"id": "a", "name": "w", "args": {}}, {"id": "b", "name": "w", "args": {}}]),
                ToolMessage("rain", tool_call_id="a"), ToolMessage("sun", tool_call_id="b"),
                HumanMessage("thanks")]
    count = lambda ms: 10 * len(ms)  # noqa: E731
    assert trim_messages(messages, max_tokens=25, token_counter=count) == messages[4:]
    assert trim_messages(messages, max_tokens=40, token_counter=count) == messages[1:]
    with pytest.raises(cp.CtxpackError, match=r"`max_tokens`.*the newest message counts 10 tokens"):
        trim_messages(messages, max_tokens=9, token_counter=count)


def test_trim_refuses_what_langchains_refuses_in_its_words():
    messages = [HumanMessage("hi")]
    with pytest.raises(ValueError, match=r"^Invalid token_counter shortcut 'nope'"):
        trim_messages(messages, max_tokens=10, token_counter="nope")
    with pytest.raises(ValueError, match=r"^'token_counter' expected to be a model"):
        trim_messages(messages, max_tokens=10, token_counter={})
    with pytest.raises(cp.CtxpackError, match="start-on|start_on"):
        trim_messages(messages, max_tokens=10, strategy="first", start_on="human", token_counter=len)


def test_messages_in_come_back_as_the_request_to_send_cache_first():
    messages = [
        {"role": "system", "content": "You book trains."},
        {"role": "user", "content": "A train to Lyon tomorrow?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "trains", "arguments": '{"to": "Lyon"}'}},
            {"id": "c2", "type": "function", "function": {"name": "fares", "arguments": '{"to": "Lyon"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "09:12, 11:40"},
        {"role": "tool", "tool_call_id": "c2", "content": "€39"},
        {"role": "user", "content": "Book the 09:12."},
    ]
    builder = cp.Builder({"profile": {"rag": {"retrieve_limit": 2}}})

    class Docs:
        def retrieve(self, context, query, limit):
            return [cp.Candidate(id="kb-1", section="relevant-knowledge", trust="trusted",
                                 text="Seats are held 15 minutes.",
                                 provenance=cp.Provenance(source_kind="kb", reference="kb/seats"))]

    request = cp.AssembleRequest(model="gpt-4o", query="Book the 09:12.",
                                 chat=cp.Chat(shape="openai-chat", messages=messages))
    pack = builder.assemble(request, sources=Docs())
    sent = pack.chat.json()["messages"]
    # The system text, your messages as you gave them, the retrieved
    # context before the question being answered, which is last.
    assert sent[0] == {"role": "system", "content": "You book trains."}
    assert sent[1:5] == messages[1:5]
    assert sent[5]["role"] == "system" and "Seats are held 15 minutes." in sent[5]["content"]
    assert sent[6] == messages[5]
    assert pack.chat.sources == [None, 1, 2, 3, 4, None, 5]
    assert pack.chat.json()["prompt_cache_key"] == pack.cache_key
    assert [p.boundary for p in pack.snapshot.cache_prefixes] == ["stable", "history", "turn"]
    # As the native core gives it: the counting is one call, too.
    counts = builder.count(chat=request.chat, model="gpt-4o")
    assert counts.turns == [1, 2, 3, 4, 5]


def test_langchains_messages_in_and_out_the_same_objects():
    messages = [SystemMessage("Be brief."), HumanMessage("hello"), AIMessage("hi"), HumanMessage("bye?")]
    pack = cp.Builder().assemble(cp.AssembleRequest(tokenizer="o200k-base", budget=200, chat=chat(messages)))
    out = to_langchain(pack, messages)
    assert [id(m) for m in out[1:]] == [id(m) for m in messages[1:]]
    assert isinstance(out[0], SystemMessage) and out[0].content == "Be brief."
    # For Claude, the breakpoint the pack puts on a message is on a copy.
    long = SystemMessage("Plan trips. " * 500)
    claude = [long, HumanMessage("Lyon?"), AIMessage("Yes."), HumanMessage("Book it.")]
    pack = cp.Builder().assemble(cp.AssembleRequest(model="claude-sonnet-4-5", tokenizer="o200k-base",
                                                    chat=chat(claude)))
    out = to_langchain(pack, claude)
    marked = [m for m in out if isinstance(m.content, list) and any("cache_control" in b for b in m.content)]
    assert marked and all(m not in claude for m in marked)
    assert claude[3].content == "Book it."  # the caller's own, untouched


def test_counting_is_one_call_and_the_same_as_tiktoken():
    tiktoken = pytest.importorskip("tiktoken")
    try:
        enc = tiktoken.get_encoding("o200k_base")
    except Exception:  # no table and no network
        pytest.skip("tiktoken's o200k table is not at hand (bench/prepare hands it over)")
    rng = random.Random(3)
    texts = [text(rng, rng.randint(0, 400)) + "\n\ndef f(x):\n    return x\n" * rng.randint(0, 3) for _ in range(40)]
    builder = cp.Builder()
    counted = builder.count(texts=texts, tokenizer="o200k-base").texts
    assert counted == [len(enc.encode_ordinary(t)) for t in texts]
    assert cp.count_tokens(texts[5]) == counted[5]
    assert cp.count_tokens(texts[5], model="gpt-4o") == counted[5]
    # The texts given apart (not in JSON): the same counts.
    assert builder.count_texts(texts) == counted
    assert builder.count_texts(["\u00e9" * 30_000, ""], model="gpt-4o") == [
        len(enc.encode_ordinary("\u00e9" * 30_000)), 0]
    with pytest.raises(TypeError, match=r"`texts\[1\]`"):
        builder.count_texts(["a", 3])  # type: ignore[list-item]
    with pytest.raises(cp.CtxpackError, match="count.model"):
        cp.count_tokens("x", model="no-such-model")
    with pytest.raises(cp.CtxpackError, match="count.tokenizer"):
        builder.count(texts=["x"], tokenizer=cp.Tokenizer.host("mine"))


def test_chat_mistakes_name_their_place():
    with pytest.raises(cp.AssemblyFailed, match=r"request\.chat\.messages\[0\]\.content\[0\].*not carried"):
        cp.Builder().assemble(cp.AssembleRequest(tokenizer="o200k-base", chat=cp.Chat(
            shape="openai-chat", messages=[{"role": "user", "content": [{"type": "input_audio"}]}])))
    with pytest.raises(TypeError, match=r"`messages\[1\]`: expected an OpenAI-style dict or a LangChain"):
        chat([HumanMessage("a"), 42])
    pack = cp.Builder().assemble(cp.AssembleRequest(tokenizer="o200k-base", budget=50, conversation=[
        cp.ConversationTurn(role="user", content="hi")]))
    with pytest.raises(TypeError, match="a pack assembled from a chat"):
        to_langchain(pack, [HumanMessage("hi")])
