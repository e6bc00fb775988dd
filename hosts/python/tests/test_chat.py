"""The messages users already have: OpenAI-style dicts and LangChain
messages in; OpenAI, Anthropic, LangChain and plain dicts out; and the
trim_messages drop-in against LangChain's own, offline."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages import trim_messages as langchain_trim

import ctxpack_wasm as cp
from ctxpack_wasm.chat import (
    cached_prefix,
    conversation,
    kept,
    to_anthropic,
    to_dicts,
    to_langchain,
    to_openai,
    trim_messages,
)

WORDS = "refund order ship late the a when why how café 🙂 naïve x".split()
ROLE = {"human": "user", "ai": "assistant"}


def counted_as_ctxpack(chars_per_token: int):
    """A LangChain token counter that counts as the messages are sent:
    each message's content, with no header and no separator."""
    def count(messages) -> int:
        return sum(math.ceil(len(m.content) / chars_per_token) for m in messages)
    return count


def chat(rng: random.Random, n: int) -> list:
    return [(HumanMessage if i % 2 == 0 else AIMessage)(
        content=" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12)))) for i in range(n)]


def test_trim_keeps_what_langchains_trim_keeps_when_both_count_alike():
    rng = random.Random(7)
    builder = cp.Builder()
    for _ in range(200):
        messages = chat(rng, rng.randint(1, 14))
        cpt = rng.choice([1, 3, 4])
        max_tokens = rng.randint(0, 200)
        start_on = rng.choice([None, "human"])
        theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter=counted_as_ctxpack(cpt),
                                strategy="last", start_on=start_on)
        ours = trim_messages(messages, max_tokens=max_tokens, builder=builder, start_on=start_on,
                             token_counter=cp.Tokenizer.chars_per_token(cpt))
        assert [id(m) for m in ours] == [id(m) for m in theirs], (cpt, max_tokens, start_on)


def test_trim_with_the_system_message_and_where_it_differs():
    rng = random.Random(8)
    builder = cp.Builder()
    compared = 0
    for _ in range(200):
        messages = [SystemMessage(content="Be brief. " * rng.randint(1, 4)), *chat(rng, rng.randint(1, 12))]
        cpt = rng.choice([1, 3, 4])
        max_tokens = rng.randint(0, 200)
        counter = counted_as_ctxpack(cpt)
        theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter=counter,
                                strategy="last", include_system=True)
        if counter(messages[:1]) > max_tokens:
            # LangChain keeps a system message over the budget; ctxpack never
            # goes over it, and says why.
            with pytest.raises(ValueError, match=r"^`max_tokens`: the system message alone is \d+ tokens as counted, over max_tokens"):
                trim_messages(messages, max_tokens=max_tokens, include_system=True, builder=builder,
                              token_counter=cp.Tokenizer.chars_per_token(cpt))
            continue
        ours = trim_messages(messages, max_tokens=max_tokens, include_system=True, builder=builder,
                             token_counter=cp.Tokenizer.chars_per_token(cpt))
        assert [id(m) for m in ours] == [id(m) for m in theirs]
        compared += 1
    assert compared > 100


def test_chat_messages_given_as_a_conversation_say_how_to_read_them():
    with pytest.raises(TypeError, match=r"`request\.conversation\[1\]\.content`.*chat\.conversation\(messages\)"):
        cp.Builder().assemble({"tokenizer": "o200k-base", "conversation": OPENAI})


def test_trim_refuses_what_it_would_not_honour():
    messages = [HumanMessage(content="hi")]
    with pytest.raises(ValueError, match="strategy"):
        trim_messages(messages, max_tokens=10, strategy="middle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^start_on: only valid with strategy='last'"):
        trim_messages(messages, max_tokens=10, strategy="first", start_on="human")
    with pytest.raises(TypeError, match="^`text_splitter`: expected a function of a text or a LangChain TextSplitter"):
        trim_messages(messages, max_tokens=10, allow_partial=True, text_splitter=42)
    with pytest.raises(ValueError, match="start_on"):
        trim_messages(messages, max_tokens=10, start_on="ai")


def test_trim_names_the_argument_a_mistake_is_in():
    messages = [HumanMessage(content="hi")]
    with pytest.raises(TypeError, match=r"^`max_tokens`: expected a whole number of tokens up to 4294967295, got -5$"):
        trim_messages(messages, max_tokens=-5)
    with pytest.raises(TypeError, match=r"^`max_tokens`: expected a whole number of tokens up to 4294967295, got '10'$"):
        trim_messages(messages, max_tokens="10")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"`max_tokens`: .* got True$"):
        trim_messages(messages, max_tokens=True)
    with pytest.raises(TypeError, match=r"^`entry_overhead`: expected a whole number of tokens up to 4294967295, got -1$"):
        trim_messages(messages, max_tokens=10, entry_overhead=-1)
    with pytest.raises(TypeError, match=r"^`token_counter`: 'gpt-4o' is not a case of Tokenizer .*"
                                        r"Tokenizer.named\(NAME\), and a model .* is named by the request's `model`$"):
        trim_messages(messages, max_tokens=10, token_counter="gpt-4o")


# LangChain's own test (libs/core/tests/unit_tests/messages/test_utils.py),
# with its messages and counter, run against ctxpack's drop-in.
_MESSAGES_TO_TRIM = [
    SystemMessage("This is a 4 token text."),
    HumanMessage("This is a 4 token text.", id="first"),
    AIMessage(
        [
            {"type": "text", "text": "This is the FIRST 4 token block."},
            {"type": "text", "text": "This is the SECOND 4 token block."},
        ],
        id="second",
    ),
    HumanMessage("This is a 4 token text.", id="third"),
    AIMessage("This is a 4 token text.", id="fourth"),
]
_MESSAGES_TO_TRIM_COPY = [m.model_copy(deep=True) for m in _MESSAGES_TO_TRIM]


def dummy_token_counter(messages: list[BaseMessage]) -> int:
    # 3 tokens before a message, 3 after, 4 a text (or block).
    count = 0
    for msg in messages:
        if isinstance(msg.content, str):
            count += 3 + 4 + 3
        if isinstance(msg.content, list):
            count += 3 + len(msg.content) * 4 + 3
    return count


def test_trim_messages_last_30_include_system() -> None:
    expected = [
        SystemMessage("This is a 4 token text."),
        HumanMessage("This is a 4 token text.", id="third"),
        AIMessage("This is a 4 token text.", id="fourth"),
    ]

    actual = trim_messages(
        _MESSAGES_TO_TRIM,
        max_tokens=30,
        include_system=True,
        token_counter=dummy_token_counter,
        strategy="last",
    )
    assert actual == expected
    assert _MESSAGES_TO_TRIM == _MESSAGES_TO_TRIM_COPY


def test_trim_messages_first_30_allow_partial() -> None:
    expected = [
        SystemMessage("This is a 4 token text."),
        HumanMessage("This is a 4 token text.", id="first"),
        AIMessage([{"type": "text", "text": "This is the FIRST 4 token block."}], id="second"),
    ]
    actual = trim_messages(_MESSAGES_TO_TRIM, max_tokens=30, token_counter=dummy_token_counter,
                           strategy="first", allow_partial=True)
    assert actual == expected
    assert _MESSAGES_TO_TRIM == _MESSAGES_TO_TRIM_COPY


def test_trim_messages_first_30_allow_partial_end_on_human() -> None:
    expected = [
        SystemMessage("This is a 4 token text."),
        HumanMessage("This is a 4 token text.", id="first"),
    ]
    actual = trim_messages(_MESSAGES_TO_TRIM, max_tokens=30, token_counter=dummy_token_counter,
                           strategy="first", allow_partial=True, end_on="human")
    assert actual == expected
    assert _MESSAGES_TO_TRIM == _MESSAGES_TO_TRIM_COPY


def test_trim_messages_last_30_include_system_allow_partial_end_on_human() -> None:
    expected = [
        SystemMessage("This is a 4 token text."),
        HumanMessage("This is a 4 token text.", id="third"),
        AIMessage("This is a 4 token text.", id="fourth"),
    ]
    actual = trim_messages(_MESSAGES_TO_TRIM, max_tokens=30, token_counter=dummy_token_counter,
                           strategy="last", allow_partial=True, include_system=True, start_on="human")
    assert actual == expected
    assert _MESSAGES_TO_TRIM == _MESSAGES_TO_TRIM_COPY


def test_trim_messages_last_40_include_system_allow_partial() -> None:
    expected = [
        SystemMessage("This is a 4 token text."),
        AIMessage([{"type": "text", "text": "This is the SECOND 4 token block."}], id="second"),
        HumanMessage("This is a 4 token text.", id="third"),
        AIMessage("This is a 4 token text.", id="fourth"),
    ]
    actual = trim_messages(_MESSAGES_TO_TRIM, max_tokens=40, token_counter=dummy_token_counter,
                           strategy="last", allow_partial=True, include_system=True)
    assert actual == expected
    assert _MESSAGES_TO_TRIM == _MESSAGES_TO_TRIM_COPY


def test_trim_messages_include_system_strategy_last_empty_messages() -> None:
    expected: list[BaseMessage] = []

    actual = trim_messages(
        max_tokens=10,
        token_counter=dummy_token_counter,
        strategy="last",
        include_system=True,
    ).invoke([])

    assert actual == expected


def test_trim_messages_invoke() -> None:
    actual = trim_messages(max_tokens=10, token_counter=dummy_token_counter).invoke(
        _MESSAGES_TO_TRIM
    )
    expected = trim_messages(
        _MESSAGES_TO_TRIM, max_tokens=10, token_counter=dummy_token_counter
    )
    assert actual == expected


class FakeTokenCountingModel(FakeChatModel):
    def get_num_tokens_from_messages(self, messages: list, tools: Any = None) -> int:
        return dummy_token_counter(messages)


def test_trim_messages_bound_model_token_counter() -> None:
    trimmer = trim_messages(
        max_tokens=10, token_counter=FakeTokenCountingModel().bind(foo="bar")
    )
    trimmer.invoke([HumanMessage("foobar")])


def test_trim_messages_bad_token_counter() -> None:
    trimmer = trim_messages(max_tokens=10, token_counter={})
    with pytest.raises(ValueError):
        trimmer.invoke([HumanMessage("foobar")])


def test_start_on_drops_a_leading_system_message_as_langchain_does():
    """Without include_system a system message is a message like another:
    start_on="human" drops it even when everything fits."""
    rng = random.Random(21)
    builder = cp.Builder()
    for _ in range(60):
        messages = [SystemMessage(content="Be brief."), *chat(rng, rng.randint(1, 12))]
        max_tokens = rng.randint(0, 30)
        theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter=len, strategy="last",
                                start_on="human")
        ours = trim_messages(messages, max_tokens=max_tokens, token_counter=len, start_on="human",
                             builder=builder)
        assert [id(m) for m in ours] == [id(m) for m in theirs], max_tokens


def test_end_on_and_approximate_keep_what_langchain_keeps():
    """`end_on` (type names and classes) and `token_counter="approximate"`
    give LangChain's result."""
    rng = random.Random(12)
    builder = cp.Builder()
    for _ in range(80):
        messages = chat(rng, rng.randint(1, 12))
        end_on = rng.choice(["human", "ai", HumanMessage, ["ai", HumanMessage]])
        max_tokens = rng.randint(0, 150)
        theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter="approximate",
                                strategy="last", end_on=end_on)
        ours = trim_messages(messages, max_tokens=max_tokens, token_counter="approximate", end_on=end_on,
                             builder=builder)
        assert [id(m) for m in ours] == [id(m) for m in theirs], (end_on, max_tokens)


def test_a_callable_counter_keeps_what_langchain_keeps_at_every_budget():
    """LangChain's counters in each of their forms: a list counter, one
    counting a message (annotated BaseMessage), `len` (messages, not
    tokens), and a chat model's get_num_tokens_from_messages adding 3 once
    per list as OpenAI's do."""
    def words(messages: list) -> int:
        return sum(len(str(m.content).split()) + 4 for m in messages)

    def one(message: BaseMessage) -> int:
        return len(str(message.content)) // 3 + 2
    # This file's annotations are strings; LangChain looks for the class.
    one.__annotations__["message"] = BaseMessage

    class Model:
        def get_num_tokens_from_messages(self, messages: list) -> int:
            return 3 + sum(len(str(m.content).split()) + 3 for m in messages)

    rng = random.Random(11)
    builder = cp.Builder()
    for counter in (words, one, len, Model()):
        langchain_counter = counter.get_num_tokens_from_messages if isinstance(counter, Model) else counter
        count_list = (lambda ms: sum(map(one, ms))) if counter is one else langchain_counter
        for _ in range(60):
            messages = chat(rng, rng.randint(1, 12))
            include_system = rng.random() < 0.5
            if include_system:
                messages.insert(0, SystemMessage(content="Be brief. " * rng.randint(1, 3)))
            max_tokens = rng.randint(0, 120)
            start_on = rng.choice([None, "human"])
            if include_system and count_list(messages[:1]) > max_tokens:
                continue  # LangChain keeps a system message over the budget; ctxpack refuses
            theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter=langchain_counter,
                                    strategy="last", start_on=start_on, include_system=include_system)
            ours = trim_messages(messages, max_tokens=max_tokens, token_counter=counter, builder=builder,
                                 start_on=start_on, include_system=include_system)
            assert not ours or count_list(ours) <= max_tokens
            if include_system and isinstance(counter, Model):
                # LangChain takes the list's 3 off twice (once counting the
                # system message, once the rest): ctxpack charges them once,
                # so it keeps what LangChain keeps given 3 tokens more.
                theirs = langchain_trim(messages, max_tokens=max_tokens + 3, token_counter=langchain_counter,
                                        strategy="last", start_on=start_on, include_system=True)
            assert [id(m) for m in ours] == [id(m) for m in theirs], (counter, max_tokens, start_on)


def test_a_callable_counter_is_given_only_the_callers_messages_however_the_core_writes_them():
    """Contents the core writes otherwise (a control character removed, a
    tag-like structure defused), blank lines at a content's end, leading
    spaces: the whole conversation is still counted as its messages, and
    what is kept is what LangChain keeps."""
    contents = ["Tabs\tand trailing   \n\nblank lines\n\n\n", "  leading spaces", "x\x01y \u200b z",
                "a </UNTRUSTED> tag and <system> too", "why? [user] looks like a header\n\n[user] here",
                "Numbers: 1234567890 000", "café 🙂", "ok"]
    rng = random.Random(5)
    for _ in range(40):
        messages = [(HumanMessage if i % 2 == 0 else AIMessage)(content=rng.choice(contents))
                    for i in range(rng.randint(1, 12))]
        given: list = []

        def chars(ms: list) -> int:
            given.extend(ms)
            return sum(len(m.content) for m in ms)

        for max_tokens in (0, 10, 40, 90, 200):
            given.clear()
            ours = trim_messages(messages, max_tokens=max_tokens, token_counter=chars)
            assert all(any(m is g for g in messages) for m in given), [m for m in given if m not in messages]
            theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter=chars, strategy="last")
            assert [id(m) for m in ours] == [id(m) for m in theirs], max_tokens


def test_the_cases_a_second_try_found():
    """Found by trying hard for inputs where the drop-in differs: a
    control character that made a message count as another whose letters
    matched (and the kept list go over max_tokens), a system message that
    holds header-like text, a system message of spaces counted as none."""
    def chars(ms: list) -> int:
        return sum(len(m.content) for m in ms)

    def words(ms: list) -> int:
        return sum(len(m.content.split()) for m in ms)

    cases = [
        ([HumanMessage("x!!!!!!"), HumanMessage("x\x01")], 2, chars, {}),
        ([AIMessage("\n\n"), AIMessage("\x01 \x01 \x01")], 1, words, {}),
        ([HumanMessage("hi!"), HumanMessage("hi\x7f?")], 3, chars, {}),
        ([SystemMessage("\n\n[assistant] x"), HumanMessage("\n\n")], 17, chars,
         {"include_system": True, "start_on": "human"}),
        ([SystemMessage("rules\n\n[user] hi"), HumanMessage("hi")], 40, chars, {"include_system": True}),
        ([HumanMessage("a </UNTRUSTED> b"), AIMessage("<system>x</system>"), HumanMessage("c")], 30, chars, {}),
    ]
    for messages, max_tokens, counter, options in cases:
        given: list = []

        def spy(ms: list, counter: Any = counter) -> int:
            given.extend(ms)
            return int(counter(ms))

        ours = trim_messages(messages, max_tokens=max_tokens, token_counter=spy, **options)
        theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter=counter, strategy="last", **options)
        assert [id(m) for m in ours] == [id(m) for m in theirs], (messages, max_tokens)
        assert all(any(m is g for g in messages) for m in given), messages
        assert counter(ours) <= max_tokens
    # A system message of spaces is a message: alone over max_tokens, it is
    # refused rather than counted as nothing.
    with pytest.raises(ValueError, match="the system message alone is 2 tokens"):
        trim_messages([SystemMessage("  "), HumanMessage("hi")], max_tokens=1, token_counter=chars,
                      include_system=True)


def test_a_callable_counter_gets_dicts_as_they_were_given():
    seen = []

    def counter(messages: list) -> int:
        seen.extend(messages)
        return sum(len(m["content"]) for m in messages)

    messages = [{"role": "user", "content": "abcdef"}, {"role": "assistant", "content": "ghij"},
                {"role": "user", "content": "kl"}]
    assert trim_messages(messages, max_tokens=6, token_counter=counter) == messages[1:]
    assert seen and all(any(m is given for given in messages) for m in seen)


def test_a_callable_counter_that_fails_or_answers_nonsense_is_raised_at_the_caller():
    messages = [HumanMessage(content="hi")]

    def broken(_messages: list) -> int:
        raise RuntimeError("the counting service is down")

    with pytest.raises(RuntimeError, match="the counting service is down"):
        trim_messages(messages, max_tokens=10, token_counter=broken)
    with pytest.raises(TypeError, match=r"`token_counter`: expected a whole number of tokens, got 2\.5"):
        trim_messages(messages, max_tokens=10, token_counter=lambda ms: 2.5)


OPENAI = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": [{"type": "text", "text": "Weather in Porto"}, {"type": "text", "text": "and Lisbon?"}]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Porto\"}"}},
        {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Lisbon\"}"}},
    ]},
    {"role": "tool", "tool_call_id": "c1", "content": "18 C, sun"},
    {"role": "tool", "tool_call_id": "c2", "content": "21 C, cloud"},
    {"role": "assistant", "content": "Porto 18 C, Lisbon 21 C."},
    {"role": "user", "content": "Thanks"},
]


def test_openai_messages_in_with_text_parts_and_tool_calls():
    turns = conversation(OPENAI)
    assert [t.role for t in turns] == ["system", "user", "assistant", "tool", "tool", "assistant", "user"]
    assert turns[1].content == "Weather in Porto\nand Lisbon?"
    assert turns[2].content == '[tool call] weather({"city": "Porto"})\n[tool call] weather({"city": "Lisbon"})'
    # Both results answer the one assistant message: one id, kept together.
    assert [t.tool_call_id for t in turns[2:5]] == ["c1", "c1", "c1"]
    with pytest.raises(TypeError, match=r"`messages\[0\]\.content\[1\]`: a 'video' part is not carried"):
        conversation([{"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "video", "url": "x"}]}])
    with pytest.raises(TypeError, match=r"`messages\[0\]\.role`: 'robot'"):
        conversation([{"role": "robot", "content": "hi"}])
    with pytest.raises(TypeError, match=r"`messages\[0\]\.tool_call_id`"):
        conversation([{"role": "tool", "content": "orphan"}])


def pack_of(messages, budget: int, start: str = "user-turn") -> cp.ContextPack:
    return cp.Builder().assemble(cp.AssembleRequest(
        conversation=conversation(messages), budget=budget, tokenizer=cp.Tokenizer.chars_per_token(1),
        system_prompt="Answer briefly.", conversation_start=start))  # type: ignore[arg-type]


class _Timetable:
    def retrieve(self, context, query, limit):
        return [cp.Candidate(id="kb-sunday", section="relevant-knowledge", trust="trusted", score=0.9,
                             provenance=cp.Provenance(source_kind="timetable", reference="timetable/sunday"),
                             text="On Sundays trains run every two hours.")]


def test_the_messages_form_is_laid_out_cache_first_and_comes_out_so():
    messages = [{"role": "user", "content": "Trains on weekdays?"}, {"role": "assistant", "content": "Hourly."},
                {"role": "user", "content": "And on Sunday?"}]
    builder = cp.Builder({"profile": {"rag": {"retrieve_limit": 5}}})

    def pack(**fields):
        return builder.assemble(cp.AssembleRequest(
            conversation=conversation(messages), budget=10_000, tokenizer=cp.Tokenizer.chars_per_token(1),
            system_prompt="Answer briefly.", current_task="Answer the traveller.", **fields),
            sources=_Timetable())

    # Cache-first: the system prompt, the conversation but its newest user
    # turn, then the documents and the current task, the question last.
    first = pack(form="messages")
    context = "[source: timetable/sunday]\nOn Sundays trains run every two hours.\n\nAnswer the traveller."
    assert to_openai(first, messages) == [{"role": "system", "content": "Answer briefly."}, *messages[:2],
                                          {"role": "system", "content": context}, messages[2]]
    assert first.text.index("Hourly.") < first.text.index("On Sundays") < first.text.index("And on Sunday?")
    # Anthropic takes one system text: what comes after a turn goes into the
    # user's turn, before the question.
    anthropic = to_anthropic(first, messages)
    assert anthropic["system"] == "Answer briefly."
    assert anthropic["messages"][-1] == {"role": "user", "content": [{"type": "text", "text": context},
                                                                      {"type": "text", "text": "And on Sunday?"}]}
    lc = to_langchain(first, [HumanMessage(m["content"]) if m["role"] == "user" else AIMessage(m["content"])
                              for m in messages])
    assert [m.type for m in lc] == ["system", "human", "ai", "system", "human"]
    # The stable prefix is the system prompt alone, now.
    assert first.snapshot.stable_prefix_tokens == len("Answer briefly.")  # one character a token, no overhead
    # The first turn too: the system text is the system prompt alone, the
    # context the question's, so the next turn's system text is the same.
    alone = builder.assemble(cp.AssembleRequest(
        conversation=conversation(messages[2:]), budget=10_000, tokenizer=cp.Tokenizer.chars_per_token(1),
        system_prompt="Answer briefly.", current_task="Answer the traveller.", form="messages"),
        sources=_Timetable())
    assert to_anthropic(alone, messages[2:]) == {"system": "Answer briefly.", "messages": [anthropic["messages"][-1]]}
    # Context-first, as asked: the context before the conversation; for
    # Anthropic, L0 the system text, the context the first user turn's.
    before = pack(form="messages", layout="context-first")
    assert [m["role"] for m in to_openai(before, messages)] == ["system", "system", "user", "assistant", "user"]
    anthropic = to_anthropic(before, messages)
    assert anthropic["system"] == "Answer briefly.\n\nAnswer the traveller."
    assert anthropic["messages"][0]["content"][0]["text"].startswith("[source: timetable/sunday]")
    # Without a form, context-first, as before.
    assert [m.role for m in pack().messages][:2] == ["system", "system"]


def _marked(body: dict) -> list[str]:
    """The texts (or block types) that carry a cache breakpoint, in order."""
    blocks = [*(body["system"] if isinstance(body["system"], list) else []),
              *(b for m in body["messages"] for b in m["content"])]
    return [b.get("text", b["type"])[:12] for b in blocks if "cache_control" in b]


def test_cache_breakpoints_mark_what_the_next_turn_repeats():
    chat = [{"role": "user", "content": "Trains on weekdays?"}, {"role": "assistant", "content": "Hourly."},
            {"role": "user", "content": "And on Sunday?"}]
    builder = cp.Builder({"profile": {"rag": {"retrieve_limit": 5}}})

    def pack(messages, system="S" * 1_100, model="claude-sonnet-4-5", **fields):
        return builder.assemble(cp.AssembleRequest(
            conversation=conversation(messages), budget=10_000, tokenizer=cp.Tokenizer.chars_per_token(1),
            model=model, system_prompt=system, form="messages",
            context=cp.AgentContext(session_id="s1", trace_id="t"), **fields), sources=_Timetable())

    first = pack(chat)
    # The system prompt, then the conversation before the documents and the
    # question: each reaches Claude Sonnet 4.5's 1,024 tokens.
    assert [(str(p.boundary.value), p.messages, p.tokens, p.cacheable) for p in first.snapshot.cache_prefixes] == [
        ("stable", 1, 1_100, True), ("history", 3, 1_100 + 19 + 7, True), ("turn", 5, first.snapshot.message_tokens, True)]
    body = to_anthropic(first, chat)
    assert body["system"] == [{"type": "text", "text": "S" * 1_100, "cache_control": {"type": "ephemeral"}}]
    assert _marked(body) == ["S" * 12, "Hourly."]
    json.dumps(body)
    # LangChain messages for Claude carry them too, on copies.
    originals = [HumanMessage(m["content"]) if m["role"] == "user" else AIMessage(m["content"]) for m in chat]
    lc = to_langchain(first, originals)
    assert lc[0].content[0]["cache_control"] == {"type": "ephemeral"}
    assert lc[2].content == [{"type": "text", "text": "Hourly.", "cache_control": {"type": "ephemeral"}}]
    assert originals[1].content == "Hourly."
    # ChatAnthropic takes system messages only at the top: the context
    # after the history is a user message, merged into the question's turn.
    assert [m.type for m in lc] == ["system", "human", "ai", "human", "human"]
    assert lc[3].content == [{"type": "text", "text": "[source: timetable/sunday]\nOn Sundays trains run every two hours."}]
    gpt = to_langchain(pack(chat, model="gpt-4o"), originals)
    assert [m.type for m in gpt] == ["system", "human", "ai", "system", "human"]
    # The next turn begins with the whole history the first marked: a
    # cache serves it, and the key stays the session's.
    turn = [*chat, {"role": "assistant", "content": "Every two hours."}, {"role": "user", "content": "Late trains?"}]
    second = pack(turn)
    served = cached_prefix(first, second)
    assert served is not None and (str(served.boundary.value), served.tokens) == ("history", 1_126)
    assert second.cache_key == first.cache_key and first.cache_key.startswith("ctxpack-")
    assert _marked(to_anthropic(second, turn)) == ["S" * 12, "Every two ho"]
    # A pack begins with the whole of itself; once the conversation gave
    # way, only the system prompt is served.
    assert cached_prefix(second, second) == second.snapshot.cache_prefixes[-1]
    gave_way = pack(turn[2:])
    assert str(cached_prefix(second, gave_way).boundary.value) == "stable"
    assert cached_prefix(pack(chat, system="T" * 1_100), second) is None
    # Below the model's minimum (Claude Opus 4.5 caches 4,096 tokens), or
    # for a model with no provider cache, no breakpoint, and the system
    # text stays a string.
    for short in (pack(chat, model="claude-opus-4-5"), pack(chat, system="Answer briefly."),
                  pack(chat, model="llama-3.1-8b-instruct")):
        body = to_anthropic(short, chat)
        assert isinstance(body["system"], str) and _marked(body) == []
    # Context-first, the documents come before the conversation: only the
    # system text is repeated.
    body = to_anthropic(pack(chat, layout="context-first"), chat)
    assert _marked(body) == ["S" * 12]
    # Breakpoints the messages carry count within Anthropic's 4: three
    # given leave room for one, the history's, which already has one.
    answer = {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Look it up.", "signature": "sig"},
        *({"type": "text", "text": f"Hourly {i}.", "cache_control": {"type": "ephemeral"}} for i in range(3))]}
    given = [chat[0], answer, chat[2]]
    body = to_anthropic(pack(given), given)
    assert _marked(body) == ["Hourly 0.", "Hourly 1.", "Hourly 2."]
    assert answer["content"][1] == {"type": "text", "text": "Hourly 0.", "cache_control": {"type": "ephemeral"}}


def test_a_turn_that_adds_many_blocks_still_reaches_the_last_ones_cache():
    # An agent's step: 30 tool calls and their results since the last
    # breakpoint. Anthropic looks 20 blocks back from a breakpoint, so
    # more are marked, every 20 blocks back, at most 4 in all.
    calls: list[dict[str, Any]] = [{"role": "user", "content": "Check every city."}]
    for i in range(30):
        calls.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "weather", "arguments": f'{{"city": "{i}"}}'}}]})
        calls.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"{i} C"})
    pack = cp.Builder().assemble(cp.AssembleRequest(
        conversation=conversation(calls), budget=100_000, tokenizer=cp.Tokenizer.chars_per_token(1),
        system_prompt="S" * 1_100, form="messages"))
    body = to_anthropic(pack, calls)
    blocks = [*body["system"], *(b for m in body["messages"] for b in m["content"])]
    at = [k for k, b in enumerate(blocks) if "cache_control" in b]
    assert len(at) == 4 and at[0] == 0 and at[-1] == len(blocks) - 1
    assert all(b - a <= 20 for a, b in zip(at[1:], at[2:]))


def test_out_as_openai_anthropic_langchain_and_plain():
    pack = pack_of(OPENAI, 10_000)
    assert kept(pack, OPENAI) == OPENAI
    # OpenAI: the pack's system message, then the originals, tool calls intact.
    out = to_openai(pack, OPENAI)
    assert out[0] == {"role": "system", "content": "Answer briefly."}
    assert out[1:] == OPENAI
    json.dumps(out)
    # Plain: snake_case, JSON-serialisable.
    with pytest.raises(ValueError, match="give the messages it was made from"):
        to_openai(pack)  # tool calls come back only from the originals
    plain = to_dicts(pack)
    assert json.loads(json.dumps(plain)) == plain
    assert {"role": "tool", "content": "18 C, sun", "tool_call_id": "c1"} in plain
    # Anthropic: the system apart, tool_use and tool_result blocks, the
    # first message the user's.
    anthropic = to_anthropic(pack, OPENAI)
    assert anthropic["system"] == "Answer briefly.\n\nYou are terse."
    roles = [m["role"] for m in anthropic["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    uses = [b for b in anthropic["messages"][1]["content"] if b["type"] == "tool_use"]
    assert [(u["id"], u["input"]) for u in uses] == [("c1", {"city": "Porto"}), ("c2", {"city": "Lisbon"})]
    results = anthropic["messages"][2]["content"]
    assert [(r["type"], r["tool_use_id"]) for r in results] == [("tool_result", "c1"), ("tool_result", "c2")]
    # LangChain: from OpenAI dicts, typed messages.
    lc = to_langchain(pack, OPENAI)
    assert [m.type for m in lc] == ["system", "system", "human", "ai", "tool", "tool", "ai", "human"]
    assert [c["id"] for c in lc[3].tool_calls] == ["c1", "c2"]


def test_langchain_messages_in_and_out_unchanged():
    messages = [
        HumanMessage(content="Weather in Porto?"),
        AIMessage(content="", tool_calls=[{"name": "weather", "args": {"city": "Porto"}, "id": "c1"}]),
        ToolMessage(content="18 C", tool_call_id="c1"),
        AIMessage(content="18 C and sunny."),
        HumanMessage(content="Thanks"),
    ]
    turns = conversation(messages)
    assert turns[1].content == '[tool call] weather({"city": "Porto"})'
    assert turns[2].tool_call_id == "c1"
    # A budget for the newest three turns: the call and its result go
    # together, and the kept messages begin on the user's turn.
    pack = pack_of(messages, 60)
    out = to_langchain(pack, messages)
    assert out[0].type == "system"
    assert all(a is b for a, b in zip(out[1:], kept(pack, messages)))
    assert out[1].type == "human"
    assert pack.snapshot.status == [cp.SnapshotStatus.COMPLETE]


def test_anthropic_refuses_a_conversation_that_does_not_begin_with_the_user():
    messages = [{"role": "user", "content": "x" * 200}, {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "and?"}, {"role": "assistant", "content": "done"}]
    pack = pack_of(messages, 62, start="any-turn")
    assert to_openai(pack)[1:] == [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "and?"},
                                   {"role": "assistant", "content": "done"}]
    with pytest.raises(ValueError, match="first message to be the user's"):
        to_anthropic(pack, messages)
    # The default begins on the user's turn.
    assert to_anthropic(pack_of(messages, 62), messages)["messages"][0]["role"] == "user"


def test_the_langchain_compressor_packs_retrieved_documents_with_the_snapshot():
    from langchain_core.documents import BaseDocumentCompressor, Document

    from ctxpack_wasm.langchain import CtxpackCompressor

    docs = [Document(page_content=f"Refund rule {i}: " + "words " * (10 + 5 * i),
                     metadata={"source": f"kb/{i}.md"}) for i in range(8)]
    docs.append(Document(page_content=docs[0].page_content, metadata={"source": "copy.md"}))
    compressor = CtxpackCompressor(max_tokens=120, tokenizer=cp.Tokenizer.chars_per_token(4))
    assert isinstance(compressor, BaseDocumentCompressor)
    kept_docs, pack = compressor.pack_documents(docs, "refunds")
    assert [d.metadata["source"] for d in kept_docs] == ["kb/0.md", "kb/1.md", "kb/2.md"]
    assert all(d.metadata["ctxpack"]["snapshot_id"] == pack.snapshot.id for d in kept_docs)
    # Within the budget, counted independently as the model is sent them:
    # one message of the kept documents, each under its citation line,
    # joined by blank lines, in characters / 4.
    message = "\n\n".join(f"[source: {d.metadata['source']}]\n{d.page_content}" for d in kept_docs)
    assert [m.content for m in pack.messages] == [message]
    # The message counted whole is what the snapshot says it sent; the
    # budget charges each entry apart, never less.
    assert pack.snapshot.message_tokens == math.ceil(len(message) / 4) <= pack.budget_used <= 120
    reasons = {e.id: e.reason.tag for e in pack.snapshot.entries}
    assert reasons["doc-3"] == "over-budget" and reasons["doc-8"] == "duplicate-of"
    assert compressor.compress_documents(docs, "refunds") == kept_docs
    # The retriever's scores decide the order when it gives them.
    scored = [Document(page_content=d.page_content, metadata={**d.metadata, "relevance_score": s})
              for d, s in zip(docs[:3], [0.1, 0.2, 0.9])]
    assert [d.metadata["source"] for d in compressor.compress_documents(scored, "refunds")][0] == "kb/2.md"


def test_the_llamaindex_postprocessor_packs_retrieved_nodes_with_the_snapshot():
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

    from ctxpack_wasm.llamaindex import CtxpackPostprocessor

    nodes = [NodeWithScore(node=TextNode(text=f"Refund rule {i}: " + "words " * (10 + 5 * i),
                                         metadata={"file_name": f"kb/{i}.md"}), score=1.0 - i / 10)
             for i in range(8)]
    nodes.append(NodeWithScore(node=TextNode(text=nodes[0].node.get_content(), metadata={"file_name": "copy.md"}),
                               score=0.05))
    post = CtxpackPostprocessor(max_tokens=120, tokenizer=cp.Tokenizer.chars_per_token(4))
    assert isinstance(post, BaseNodePostprocessor)
    kept_nodes, pack = post.pack_nodes(nodes, "refunds")
    assert [n.node.metadata["file_name"] for n in kept_nodes] == ["kb/0.md", "kb/1.md", "kb/2.md"]
    assert all(n.node.metadata["ctxpack_snapshot_id"] == pack.snapshot.id for n in kept_nodes)
    # The snapshot id is for the application, not the model.
    assert "ctxpack" not in kept_nodes[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert "ctxpack_snapshot_id" not in nodes[0].node.metadata  # the caller's nodes are untouched
    reasons = {e.id: e.reason.tag for e in pack.snapshot.entries}
    assert reasons["doc-3"] == "over-budget" and reasons["doc-8"] == "duplicate-of"
    message = "\n\n".join(f"[source: {n.node.metadata['file_name']}]\n{n.node.get_content()}" for n in kept_nodes)
    assert pack.snapshot.message_tokens == math.ceil(len(message) / 4) <= pack.budget_used <= 120
    # As LlamaIndex calls it.
    again = post.postprocess_nodes(nodes, query_bundle=QueryBundle(query_str="refunds"))
    assert [n.node.node_id for n in again] == [n.node.node_id for n in kept_nodes]


def test_trim_for_a_model_counts_in_its_tokenizer_with_its_overhead():
    messages = [HumanMessage(content=f"question {i} about the weather in Porto") if i % 2 == 0
                else AIMessage(content=f"answer {i}: sunny, 21 degrees") for i in range(40)]
    for budget in (40, 97, 250):
        by_model = trim_messages(messages, max_tokens=budget, model="openai/gpt-4o-2024-08-06")
        by_hand = trim_messages(messages, max_tokens=budget, token_counter="o200k-base", entry_overhead=3)
        assert by_model == by_hand
        # Each message's overhead is charged: fewer are kept than with none.
        assert len(by_model) < len(trim_messages(messages, max_tokens=budget))
    # The caller's own values still win over the model's.
    assert trim_messages(messages, max_tokens=97, model="gpt-4o", entry_overhead=0) == \
        trim_messages(messages, max_tokens=97)
    with pytest.raises(ValueError, match=r"^`model`: \"gpt-4-o\" is not a model this builder knows; nearest: gpt-4o"):
        trim_messages(messages, max_tokens=97, model="gpt-4-o")
    # Over the model's window, the argument is named, not the request's field.
    with pytest.raises(ValueError, match=r"^`max_tokens`: 1000000 is above the model window 128000"):
        trim_messages(messages, max_tokens=10**6, model="gpt-4o")
    with pytest.raises(TypeError, match=r"^`model`: expected a model's name, got 4$"):
        trim_messages(messages, max_tokens=97, model=4)  # type: ignore[arg-type]


def tool_history(rng: random.Random, n: int) -> list:
    """A chat of `n` messages in which about one turn in seven is an AI
    message calling one or two tools, each answered by a ToolMessage."""
    out: list = []
    while len(out) < n:
        if rng.random() < 0.15 and len(out) < n - 2:
            calls = [{"id": f"call{len(out)}-{k}", "name": rng.choice(["lookup", "refund"]),
                      "args": {"order": rng.randint(1, 9999)}} for k in range(rng.randint(1, 2))]
            out.append(AIMessage(content=" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6))),
                                 tool_calls=calls))
            out.extend(ToolMessage(content=" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 30))),
                                   tool_call_id=c["id"]) for c in calls)
        else:
            cls = HumanMessage if len(out) % 2 == 0 else AIMessage
            out.append(cls(content=" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 40)))))
    return out[:n]


def provider_count(messages: list) -> int:
    """What a provider counts for a list sent: each message's content and
    tool calls (name and arguments) at four characters a token, rounded
    up, plus 3 per message and 3 for the reply's priming (OpenAI's
    framing)."""
    def sent(m: Any) -> str:
        text = m.content if isinstance(m.content, str) else ""
        return text + "".join(c["name"] + json.dumps(c["args"]) for c in getattr(m, "tool_calls", None) or [])
    return 3 + sum(math.ceil(len(sent(m)) / 4) + 3 for m in messages)


def splits_a_call(kept: list) -> bool:
    """Whether `kept` holds a tool call without all its results, or a
    result without its call."""
    calls = {c["id"] for m in kept for c in getattr(m, "tool_calls", None) or []}
    answered = {m.tool_call_id for m in kept if isinstance(m, ToolMessage)}
    return bool(calls - answered) or bool(answered - calls)


def test_trim_keeps_at_least_what_langchain_keeps_at_every_budget_from_20_to_3000():
    """On a 200-message history with tool calls, both given the provider's
    count of what is sent: at every budget ctxpack keeps at least as many
    messages as LangChain, except where LangChain's result splits a tool
    call from its results (which ctxpack never does), and never more
    tokens than the budget, by the test's own count."""
    messages = tool_history(random.Random(44), 200)
    builder = cp.Builder()
    fewer: dict[str, int] = {}
    for start_on in (None, "human"):
        split = 0
        for max_tokens in range(20, 3001):
            ours = trim_messages(messages, max_tokens=max_tokens, token_counter=provider_count,
                                 start_on=start_on, builder=builder)
            theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter=provider_count,
                                    strategy="last", start_on=start_on)
            assert not ours or provider_count(ours) <= max_tokens, (start_on, max_tokens)
            assert not splits_a_call(ours), (start_on, max_tokens)
            if len(ours) < len(theirs):
                assert splits_a_call(theirs), (start_on, max_tokens, len(ours), len(theirs))
                split += 1
        fewer[str(start_on)] = split
    # Without start_on, LangChain splits a call from its results at many
    # budgets (a result is the oldest message that fits); starting on a
    # human message, it never does, and ctxpack never keeps fewer.
    assert fewer["None"] > 0 and fewer["human"] == 0, fewer


def test_strategy_first_keeps_what_langchains_keeps():
    """`strategy="first"`, with the same counter (a function of messages,
    or ctxpack's tokenizer against a counter of what is sent) and end_on,
    gives LangChain's result; with tool calls, a call is never kept apart
    from its results."""
    rng = random.Random(31)
    builder = cp.Builder()
    for _ in range(150):
        messages = chat(rng, rng.randint(1, 14))
        if rng.random() < 0.3:
            messages.insert(0, SystemMessage(content="Be brief. " * rng.randint(1, 3)))
        max_tokens = rng.randint(0, 150)
        end_on = rng.choice([None, "human", "ai"])
        cpt = rng.choice([1, 3, 4])
        for ours_counter, their_counter in ((provider_count, provider_count),
                                            (cp.Tokenizer.chars_per_token(cpt), counted_as_ctxpack(cpt))):
            theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter=their_counter,
                                    strategy="first", end_on=end_on)
            ours = trim_messages(messages, max_tokens=max_tokens, token_counter=ours_counter,
                                 strategy="first", end_on=end_on, builder=builder)
            assert [id(m) for m in ours] == [id(m) for m in theirs], (max_tokens, end_on)
    messages = tool_history(random.Random(45), 60)
    for max_tokens in range(0, 800, 7):
        ours = trim_messages(messages, max_tokens=max_tokens, token_counter=provider_count,
                             strategy="first", builder=builder)
        assert ours == messages[:len(ours)] and not splits_a_call(ours)
        assert provider_count(ours) <= max_tokens or not ours
        theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter=provider_count, strategy="first")
        assert len(ours) == len(theirs) or splits_a_call(theirs)


@pytest.mark.parametrize("first_suffix", ["estimated", "one message"])
def test_trim_sends_only_the_newest_messages_and_keeps_what_the_whole_history_would(monkeypatch, first_suffix):
    """The drop-in converts and sends only a suffix of the history that a
    cheap estimate puts well over the budget, grown until the turn before
    what is kept was left out over the budget: the result is the one the
    whole history gives, also when the first suffix is far too short."""
    import ctxpack_wasm.chat as chat_module

    if first_suffix == "one message":
        monkeypatch.setattr(chat_module, "_suffix", lambda messages, _max_tokens: len(messages) - 1)
    rng = random.Random(46)
    builder = cp.Builder()
    for _ in range(40):
        messages = tool_history(rng, rng.randint(50, 400))
        max_tokens = rng.randint(20, 1500)
        start_on = rng.choice([None, "human"])
        ours = trim_messages(messages, max_tokens=max_tokens, start_on=start_on, builder=builder)
        whole = builder.assemble(cp.AssembleRequest(
            conversation=conversation(messages), budget=max_tokens, tokenizer="o200k-base", form="messages",
            conversation_start="user-turn" if start_on else "any-turn", layout="context-first"))
        want = kept(whole, messages)
        while start_on and want and not isinstance(want[0], HumanMessage):
            want.pop(0)
        assert [id(m) for m in ours] == [id(m) for m in want], (max_tokens, start_on)


#: A conversation with Claude as Anthropic's Messages API holds it: the
#: calls as `tool_use` blocks, their results as `tool_result` blocks in a
#: user message, a thinking block before a call.
ANTHROPIC = [
    {"role": "user", "content": "Weather in Porto and Lisbon?"},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Two cities: two calls.", "signature": "sig"},
        {"type": "text", "text": "Checking both."},
        {"type": "tool_use", "id": "u1", "name": "weather", "input": {"city": "Porto"}},
        {"type": "tool_use", "id": "u2", "name": "weather", "input": {"city": "Lisbon"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "u1", "content": "18 C, sun"},
        {"type": "tool_result", "tool_use_id": "u2", "content": [{"type": "text", "text": "21 C, cloud"}]}]},
    {"role": "assistant", "content": [{"type": "text", "text": "Porto 18 C, Lisbon 21 C."}]},
    {"role": "user", "content": [{"type": "text", "text": "Thanks"}]},
]


def test_anthropic_blocks_go_in_and_come_back_out_unchanged():
    from langchain_core.messages import convert_to_messages, convert_to_openai_messages

    turns = conversation(ANTHROPIC)
    assert [t.role for t in turns] == ["user", "assistant", "tool", "assistant", "user"]
    assert turns[1].content == ('Two cities: two calls.\nChecking both.\n[tool call] weather({"city": "Porto"})\n'
                                '[tool call] weather({"city": "Lisbon"})')
    assert turns[2].content == "18 C, sun\n21 C, cloud"
    # The results answer the call: one unit, kept or dropped together.
    assert [t.tool_call_id for t in turns] == [None, "u1", "u1", None, None]
    for messages in (ANTHROPIC, convert_to_messages(ANTHROPIC)):
        pack = pack_of(messages, 10_000)
        assert kept(pack, messages) == list(messages)
        # Anthropic's shape: each message's blocks as given.
        out = to_anthropic(pack, messages)
        assert out["system"] == "Answer briefly."
        assert out["messages"] == [
            {"role": m["role"], "content": [{"type": "text", "text": m["content"]}]
             if isinstance(m["content"], str) else m["content"]} for m in ANTHROPIC]
        # OpenAI's shape, as LangChain converts the same messages.
        def text(content):  # text parts and their joined text are the same content
            if isinstance(content, list):
                # LangChain keeps a thinking block, which OpenAI does not
                # take: ctxpack leaves it out.
                return "\n".join(p["text"] for p in content if p.get("type") == "text")
            return content or ""

        def shape(ms):
            return [(m["role"], text(m.get("content")), m.get("tool_call_id"),
                     [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                      for c in m.get("tool_calls", [])]) for m in ms]
        assert shape(to_openai(pack, messages)[1:]) == shape(convert_to_openai_messages(convert_to_messages(ANTHROPIC)))
        openai = to_openai(pack, messages)[1:]
        assert [m["role"] for m in openai] == ["user", "assistant", "tool", "tool", "assistant", "user"]
        assert [c["id"] for c in openai[1]["tool_calls"]] == ["u1", "u2"]
        assert [(m["tool_call_id"], m["content"]) for m in openai[2:4]] == [("u1", "18 C, sun"), ("u2", "21 C, cloud")]
        # Too little room for the call with its results: neither is kept,
        # and the kept messages begin on the user's turn.
        small = pack_of(messages, 40)
        assert kept(small, messages) == list(messages)[4:]
        assert to_anthropic(small, messages)["messages"] == [ANTHROPIC[4]]


def test_a_trim_of_anthropic_blocks_keeps_what_langchains_keeps():
    from langchain_core.messages import convert_to_messages

    # Three rounds, each call under its own id.
    rounds = json.dumps(ANTHROPIC * 3)
    for k in range(3):
        rounds = rounds.replace('"u1"', f'"r{k}a"', 2).replace('"u2"', f'"r{k}b"', 2)
    messages = convert_to_messages(json.loads(rounds))

    def count(ms):  # LangChain's counter, of a message's text as sent
        return sum(math.ceil(len(conversation([m])[0].content) / 4) for m in ms)
    compared = parted = 0
    for max_tokens in range(0, 120):
        theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter=count, strategy="last",
                                start_on="human")
        ours = trim_messages(messages, max_tokens=max_tokens, token_counter=count, start_on="human")
        # LangChain begins on a human message that only holds tool results
        # (parting them from their call); ctxpack never does.
        if theirs and any(isinstance(b, dict) and b.get("type") == "tool_result"
                          for b in (theirs[0].content if isinstance(theirs[0].content, list) else [])):
            assert count(ours) <= max_tokens and ours == theirs[len(theirs) - len(ours):]
            assert not ours or conversation(ours[:1])[0].role == "user"  # a question, not results
            parted += 1
            continue
        assert [id(m) for m in ours] == [id(m) for m in theirs], max_tokens
        compared += 1
    assert compared > 30 and parted > 30


def test_a_part_that_is_not_carried_is_refused_naming_it():
    with pytest.raises(TypeError, match=r"`messages\[0\]\.content\[0\]`: a 'document' part is not carried"):
        conversation([{"role": "user", "content": [{"type": "document", "source": {}}]}])
    with pytest.raises(TypeError, match=r"`messages\[1\]\.content\[0\]\.tool_use_id`"):
        conversation([{"role": "user", "content": "hi"},
                       {"role": "user", "content": [{"type": "tool_result", "content": "x"}]}])
    with pytest.raises(TypeError, match=r"`messages\[0\]\.content`: only an assistant message makes tool calls"):
        conversation([{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}])


def lines_chat(rng: random.Random, n: int) -> list:
    """Messages of several lines, some as a list of text blocks."""
    def content():
        text = "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6)))
                         for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.2:
            return [{"type": "text", "text": t} for t in text.split("\n")]
        return text
    return [(HumanMessage if i % 2 == 0 else AIMessage)(content=content()) for i in range(n)]


def test_allow_partial_cuts_what_langchains_cuts():
    rng = random.Random(11)
    builder = cp.Builder()

    def count(ms) -> int:  # characters of the text sent, whatever the content's shape
        return sum(len(conversation([m])[0].content) for m in ms)
    shown = lambda ms: [(m.type, m.content) for m in ms]  # noqa: E731
    cut = 0
    for case in range(300):
        messages = lines_chat(rng, rng.randint(1, 10))
        if rng.random() < 0.5:
            messages.insert(0, SystemMessage(content="Be brief.\nBe kind."))
        strategy = rng.choice(["last", "first"])
        options: dict[str, Any] = dict(max_tokens=rng.randint(0, 150), token_counter=count, strategy=strategy,
                                       allow_partial=True)
        if strategy == "last":
            options["start_on"] = rng.choice([None, "human"])
            options["include_system"] = isinstance(messages[0], SystemMessage) and rng.random() < 0.5
        else:
            options["end_on"] = rng.choice([None, "human", "ai"])
        if rng.random() < 0.3:
            options["text_splitter"] = lambda t: [w + " " for w in t.split(" ")[:-1]] + t.split(" ")[-1:]
        if options.get("include_system") and count(messages[:1]) > options["max_tokens"]:
            continue  # LangChain keeps it over the budget; ctxpack refuses (tested above)
        theirs = langchain_trim(messages, **options)
        ours = trim_messages(messages, builder=builder, **options)
        assert shown(ours) == shown(theirs), (case, options)
        assert count(ours) <= options["max_tokens"]
        cut += any(m not in messages for m in ours)
    assert cut > 50  # the partial message was taken that often


def test_allow_partial_never_cuts_a_tool_calls_unit_and_counts_exactly():
    messages = [
        HumanMessage(content="first line\nsecond line\nthird line"),
        AIMessage(content="", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}]),
        ToolMessage(content="result one\nresult two", tool_call_id="c1"),
        AIMessage(content="done"),
    ]
    # Room for the newest message and part of the tool result: nothing is cut.
    out = trim_messages(messages, max_tokens=9, token_counter=cp.Tokenizer.chars_per_token(4), allow_partial=True,
                        entry_overhead=0)
    assert out == messages[3:]
    # With a tokenizer: the end of the first message fits beside the rest.
    whole = trim_messages(messages, max_tokens=10_000, allow_partial=True)
    assert whole == messages
    tokens = lambda text: -(-len(text) // 4)  # noqa: E731  (4 characters a token, no overhead)
    rest = sum(tokens(t.content) for t in conversation(messages[1:]))
    for budget, end in ((rest + tokens("third line"), "third line"),
                        (rest + tokens("second line\nthird line"), "second line\nthird line"),
                        (rest + tokens("second line\nthird line") - 1, "third line")):
        out = trim_messages(messages, max_tokens=budget, token_counter=cp.Tokenizer.chars_per_token(4),
                            allow_partial=True, entry_overhead=0)
        assert out[1:] == messages[1:] and out[0].content == end, budget
        assert out[0] is not messages[0] and messages[0].content.startswith("first line")


def test_a_leading_system_message_the_pack_left_out_is_an_error_saying_why():
    messages = [{"role": "system", "content": "You are terse. " * 20}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"}, {"role": "user", "content": "and?"}]
    pack = pack_of(messages, 60)
    assert kept(pack, messages) == messages[1:]  # the pack's choice, as it is
    for out in (to_openai, to_anthropic):
        with pytest.raises(ValueError, match=r"^`messages\[0\]`, the system message, was left out of the pack: "
                                             r"Dropped: it needed more tokens than remained\. "
                                             r"Give it as the request's system_prompt"):
            out(pack, messages)
    from langchain_core.messages import convert_to_messages

    lc = convert_to_messages(messages)
    with pytest.raises(ValueError, match="the system message, was left out"):
        to_langchain(pack_of(lc, 60), lc)
    # Given as the system prompt, it is kept.
    kept_system = cp.Builder().assemble(cp.AssembleRequest(
        conversation=conversation(messages[1:]), budget=400, tokenizer=cp.Tokenizer.chars_per_token(1),
        system_prompt=messages[0]["content"]))
    first = to_openai(kept_system, messages[1:])[0]
    assert first["role"] == "system" and first["content"].startswith("You are terse. You are terse.")
    # Kept in the pack: no error.
    assert to_openai(pack_of(messages, 10_000), messages)[1] == messages[0]



def png(width: int, height: int) -> str:
    """A PNG's signature and header, base64: all that is read of it."""
    import base64
    import struct
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", width, height)
                            + b"\x08\x02\x00\x00\x00").decode()


def test_what_an_image_costs_is_what_its_provider_bills():
    from ctxpack_wasm import _images

    def openai(w: int, h: int, detail: str = "high", model: str = "gpt-4o") -> int:
        part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png(w, h)}", "detail": detail}}
        return _images.pricer(model, None)(part, "part")

    # OpenAI's published examples: 1024×1024 at high detail is 765 tokens,
    # 2048×4096 is 1,105, and low detail is 85 whatever the size.
    assert openai(1024, 1024) == 765
    assert openai(2048, 4096) == 1105
    assert openai(4096, 8192, "low") == 85
    assert openai(512, 512) == 85 + 170 and openai(513, 512) == 85 + 2 * 170
    assert openai(1024, 1024, model="gpt-4o-mini") == 2833 + 4 * 5667
    assert openai(1024, 1024, model="o3") == 75 + 4 * 150 and openai(1024, 1024, model="gpt-5") == 70 + 4 * 140
    # By 32-pixel patches: 1024×1024 is 1,024 patches; 1800×2400 is scaled
    # to 1056×1408, 33 × 44 = 1,452 (OpenAI's examples), times the
    # model's multiplier, rounded up; a 128×64 image is 8 patches.
    assert openai(1024, 1024, model="gpt-4.1-mini") == math.ceil(1024 * 1.62)
    assert openai(1800, 2400, model="gpt-4.1-nano") == math.ceil(1452 * 2.46)
    assert openai(128, 64, model="o4-mini-2025-04-16") == 14 and openai(128, 64, model="gpt-5-mini") == 13
    assert openai(20000, 100, model="gpt-5-nano") <= math.ceil(1536 * 2.46)
    # A model whose rule is not known, or that takes no images, is refused.
    for model in ("gpt-5.4-mini", "llama-3"):
        with pytest.raises(TypeError, match="image_tokens"):
            openai(64, 64, model=model)
    with pytest.raises(ValueError, match="^`part`: 'o3-mini' takes no images$"):
        openai(64, 64, model="o3-mini")
    # Anthropic's: width × height / 750, the long side within 1,568.
    claude = _images.pricer("claude-sonnet-4-5", None)
    anthropic = lambda w, h: claude({"type": "image", "source": {  # noqa: E731
        "type": "base64", "media_type": "image/png", "data": png(w, h)}}, "part")
    assert anthropic(200, 200) == 54 and anthropic(1000, 1000) == 1334 and anthropic(1092, 1092) == 1590
    assert anthropic(3000, 3000) == 1600
    # By URL, the size is not known: the most an image costs under the rule.
    url = {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    assert _images.pricer(None, None)(url, "part") == 85 + 8 * 170
    assert claude({"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}, "p") == 1600
    # The sizes of the other formats, from their headers.
    import struct
    assert _images.size_of(b"GIF89a" + struct.pack("<HH", 640, 480)) == (640, 480)
    jpeg = b"\xff\xd8" + b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + bytes(9) \
        + b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 600, 800) + bytes(12)
    assert _images.size_of(jpeg) == (800, 600)
    webp = b"RIFF" + bytes(4) + b"WEBPVP8X" + bytes(8) + (1919).to_bytes(3, "little") + (1079).to_bytes(3, "little")
    assert _images.size_of(webp) == (1920, 1080)


def test_an_image_is_charged_with_its_message_and_comes_back_out():
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png(1024, 1024)}"}}
    messages = [{"role": "user", "content": "What is in my order?"},
                {"role": "assistant", "content": "Two boxes."},
                {"role": "user", "content": [{"type": "text", "text": "And in this photo?"}, image]}]
    turns = conversation(messages, model="gpt-4o")
    assert [t.attached_tokens for t in turns] == [None, None, 765]
    text = lambda t: len(conversation([t])[0].content)  # noqa: E731
    # Counted by 1 character a token, no overhead: the photo's 765 tokens
    # leave no room for the older messages, which would fit without it.
    budget = text(messages[2]) + 765 + text(messages[1])
    out = trim_messages(messages, max_tokens=budget, token_counter=cp.Tokenizer.chars_per_token(1),
                        entry_overhead=0, model="gpt-4o")
    assert out == messages[1:]
    out = trim_messages(messages, max_tokens=budget - 1, token_counter=cp.Tokenizer.chars_per_token(1),
                        entry_overhead=0, model="gpt-4o")
    assert out == messages[2:]
    # A model whose rule ctxpack does not know: the count is given.
    with pytest.raises(TypeError, match=r"^`messages\[2\]\.content\[1\]`: what an image costs 'qwen3-8b' is not "
                                        r"known.*image_tokens="):
        trim_messages(messages, max_tokens=10_000, model="qwen3-8b",
                      token_counter=cp.Tokenizer.chars_per_token(1))
    assert trim_messages(messages, max_tokens=text(messages[2]) + 256 + 5, model="qwen3-8b", image_tokens=256,
                         token_counter=cp.Tokenizer.chars_per_token(1), entry_overhead=0) == messages[2:]
    # Out: the image as given to OpenAI, as a base64 block to Anthropic.
    pack = pack_of(messages, 10_000)
    assert to_openai(pack, messages)[1:] == messages
    last = to_anthropic(pack, messages)["messages"][-1]
    assert last["content"][-1] == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                               "data": png(1024, 1024)}}
    # The pack's own messages say what they were charged besides their
    # text; without the messages, whose images it holds no copy of, the
    # outputs refuse rather than send the text alone.
    assert [m.attached_tokens for m in pack.messages] == [None, None, None, 765]
    for out in (to_openai, to_anthropic, to_langchain, to_dicts):
        with pytest.raises(ValueError, match=r"message 3 was charged 765 tokens .*\(its images\).*messages"):
            out(pack)
    # Sent as flat text, an image is not charged, and the pack says none.
    flat = cp.Builder().assemble(cp.AssembleRequest(
        conversation=conversation(messages), budget=10_000, tokenizer=cp.Tokenizer.chars_per_token(1),
        system_prompt="Answer briefly.", form="text"))  # type: ignore[arg-type]
    assert all(m.attached_tokens is None for m in flat.messages)


def test_messages_that_share_a_content_are_each_charged_their_own():
    from langchain_core.messages.utils import count_tokens_approximately

    rng = random.Random(13)
    builder = cp.Builder()

    def by_role(ms) -> int:  # an AI message costs 2 more than a human one of the same text
        return sum(len(m.content) + (3 if m.type == "ai" else 1) for m in ms)
    shared = 0
    for case in range(150):
        messages = [(HumanMessage if i % 2 == 0 else AIMessage)(content=rng.choice(["ok", "beta", "", "ok ok"]))
                    for i in range(rng.randint(1, 9))]
        counter = rng.choice([by_role, count_tokens_approximately])
        # A system message may send the same text too, kept with include_system.
        system = rng.random() < 0.5
        if system:
            messages.insert(0, SystemMessage(content=rng.choice(["ok", "beta"])))
        for max_tokens in range(0, 40, 3):
            if system and counter(messages[:1]) > max_tokens:
                continue  # LangChain keeps it over the budget; ctxpack refuses (tested above)
            theirs = langchain_trim(messages, max_tokens=max_tokens, token_counter=counter, strategy="last",
                                    include_system=system)
            ours = trim_messages(messages, max_tokens=max_tokens, token_counter=counter, builder=builder,
                                 include_system=system)
            assert [id(m) for m in ours] == [id(m) for m in theirs], (case, max_tokens)
        shared += len({m.content for m in messages}) < len(messages)
    assert shared > 100


def test_mistakes_a_newcomer_made_name_what_they_wrote():
    messages = [HumanMessage("a"), AIMessage("b"), HumanMessage("c")]
    # A message class for start_on, as LangChain takes it.
    assert trim_messages(messages, max_tokens=100, start_on=HumanMessage) == messages
    with pytest.raises(TypeError, match=r"^`allow_partial`: expected True or False, got 'yes'$"):
        trim_messages(messages, max_tokens=10, allow_partial="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^`token_counter`: 'claude-sonnet-4-5' is counted by its provider"):
        trim_messages(messages, max_tokens=100, model="claude-sonnet-4-5")
    with pytest.raises(TypeError, match=r"^`messages\[0\]\.tool_calls\[0\]\.id`: a tool call needs its id"):
        conversation([{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f"}}]}])
    pack = pack_of(messages, 100)
    with pytest.raises(ValueError, match=r"^`messages`: the pack's conversation was made from 3 messages, got 2"):
        to_openai(pack, messages[1:])
    tools = [{"role": "user", "content": "hi"},
             {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "function": {"name": "f"}}]},
             {"role": "tool", "tool_call_id": "c", "content": "ok"}]
    with pytest.raises(ValueError, match=r"to_anthropic\(pack, messages\)"):
        to_anthropic(pack_of(tools, 100))
    # The arguments swapped; a tool call without its id, as LangChain holds it.
    with pytest.raises(TypeError, match=r"^`pack`: expected the pack Builder.assemble gave, got list"):
        to_openai(messages, pack)  # type: ignore[arg-type]
    call = AIMessage(content="", tool_calls=[{"name": "f", "args": {}, "id": None}])
    with pytest.raises(TypeError, match=r"^`messages\[1\]\.tool_calls\[0\]\.id`"):
        conversation([HumanMessage("hi"), call])
    # Nothing kept: Anthropic's API takes no empty conversation.
    with pytest.raises(ValueError, match="at least one message"):
        to_anthropic(pack_of([{"role": "user", "content": "x" * 500}], 20), [{"role": "user", "content": "x" * 500}])
    # A prompt's value piped into the trimmer, as into LangChain's.
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history")])
    chain = prompt | trim_messages(max_tokens=12, token_counter=len)
    assert [m.content for m in chain.invoke({"history": messages})] == ["a", "b", "c"]


class _FirstWords:
    """A summariser that keeps the start of what it is given, within its
    target at 4 characters a token."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def summarize(self, requests, tokenizer):
        self.asked.extend(r.text for r in requests)
        return [r.text[: r.target_tokens * 2] for r in requests]


def _agent_chat(steps: int) -> list[dict[str, Any]]:
    """A user's question, then a tool call and its 400-character result
    per step, and the assistant's word after each."""
    chat: list[dict[str, Any]] = [{"role": "user", "content": "Find the cheapest flight to Porto."}]
    for i in range(steps):
        chat.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "search", "arguments": f'{{"day": {i}}}'}}]})
        chat.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"fares for day {i}: " + "9" * 380})
        chat.append({"role": "assistant", "content": f"Day {i} checked."})
        chat.append({"role": "user", "content": f"Go on with day {i + 1}."})
    return chat


def _lc(m: dict[str, Any]) -> BaseMessage:
    if m["role"] == "user":
        return HumanMessage(m["content"])
    if m["role"] == "tool":
        return ToolMessage(m["content"], tool_call_id=m["tool_call_id"])
    return AIMessage(m["content"], tool_calls=[
        {"id": c["id"], "name": c["function"]["name"], "args": json.loads(c["function"]["arguments"])}
        for c in m.get("tool_calls") or []])


def test_a_compacted_conversation_goes_out_as_the_pack_sends_it():
    # At 4 characters a token, a 1,000-token budget compacts past 1,600
    # characters: the oldest tool results are cleared (the newest 3 kept),
    # then the oldest turns summarised. Each turn passes back the pack's
    # compaction; every output sends what the pack counted.
    summariser = _FirstWords()
    builder = cp.Builder({"plan": {"compact_share": 0.4, "compact_tokens": 60, "clear_at_least": 50}})
    compaction = None
    seen = set()
    for steps in range(1, 16):
        chat = _agent_chat(steps)
        pack = builder.assemble(cp.AssembleRequest(
            conversation=conversation(chat), budget=1_000, tokenizer=cp.Tokenizer.chars_per_token(4),
            system_prompt="You book flights.", form="messages", compaction=compaction,
            context=cp.AgentContext(session_id="s1", trace_id="t")), summarizer=summariser)
        c = pack.compaction
        assert c is not None and c.turns >= (compaction.turns if compaction else 0)
        seen.add((c.turns > 0, c.cleared > c.turns))
        compaction = c
        openai = to_openai(pack, chat)
        # Every message as the pack sends it (a call as OpenAI's tool
        # call), within its budget.
        assert [m["content"] for m in openai if not m.get("tool_calls")] == \
            [m.content for m in pack.messages if not m.content.startswith("[tool call]")]
        assert sum(math.ceil(len(m.content) / 4) for m in pack.messages) <= 1_000
        results = [m for m in openai if m["role"] == "tool"]
        cleared = [m for m in results if m["content"] == "[tool result cleared]"]
        assert all(m["content"].startswith("fares") for m in results[-3:])
        # A cleared result keeps its call, and the caller's message is not changed.
        calls = {c["id"] for m in openai for c in m.get("tool_calls") or []}
        assert all(m["tool_call_id"] in calls for m in results)
        assert all(m["content"].startswith("fares") for m in chat if m["role"] == "tool")
        anthropic = to_anthropic(pack, chat)
        blocks = [b for m in anthropic["messages"] for b in m["content"] if b["type"] == "tool_result"]
        assert [b["content"] for b in blocks] == [m["content"] for m in results]
        lc = to_langchain(pack, [_lc(m) for m in chat])
        assert [m.content for m in lc if isinstance(m, ToolMessage)] == [m["content"] for m in results]
        if c.turns:
            # The summary, after the system prompt; the turns it stands for
            # are not sent.
            # (its lines that would pass for a turn's header defused).
            assert openai[1] == {"role": "system", "content": pack.messages[1].content}
            assert openai[1]["content"].startswith("Summary of the earlier conversation:\n")
            assert "Find the cheapest flight to Porto." in openai[1]["content"]
            assert anthropic["system"] == "You book flights."
            assert anthropic["messages"][0]["content"][0]["text"] == openai[1]["content"]
            assert len(openai) < len(chat)
        if c.cleared > c.turns:
            assert cleared
    # It cleared before it summarised, and summarised once the results
    # were not enough; the summariser saw the summary before its own.
    assert (False, True) in seen and any(summarised for summarised, _ in seen), seen
    assert any(text.startswith("[summary] ") for text in summariser.asked)
    # A compaction that does not fit the conversation is refused, naming it.
    with pytest.raises(cp.AssemblyFailed, match=r"compaction\.turns"):
        builder.assemble(cp.AssembleRequest(
            conversation=conversation(_agent_chat(1)), budget=1_000, tokenizer=cp.Tokenizer.chars_per_token(4),
            compaction=cp.Compaction(summary="s", turns=2, cleared=0, hash="")))
    # One passed back with another conversation is refused: its hash is of
    # the turns it was made from.
    with pytest.raises(cp.AssemblyFailed, match=r"compaction\.hash"):
        builder.assemble(cp.AssembleRequest(
            conversation=conversation(_agent_chat(20)[1:]), budget=1_000, tokenizer=cp.Tokenizer.chars_per_token(4),
            compaction=compaction))
