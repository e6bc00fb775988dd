"""A model's own tokenizer file, from Python: read, given to a builder,
named by a request, and the budget held when the file's reference
implementation (Hugging Face ``tokenizers``) recounts what is sent.

The files come from the registries by ``tests/tokenizers/fetch``
(``CTXPACK_TOKENIZERS`` names its output); with
``CTXPACK_REQUIRE_TOKENIZERS=1`` their absence fails rather than skips."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import ctxpack_wasm as cp


def reference(name: str) -> dict:
    directory = os.environ.get("CTXPACK_TOKENIZERS")
    if not directory:
        if os.environ.get("CTXPACK_REQUIRE_TOKENIZERS"):
            pytest.fail("CTXPACK_TOKENIZERS is not set: run tests/tokenizers/fetch")
        pytest.skip("no tokenizer files: run tests/tokenizers/fetch")
    return json.loads((Path(directory) / f"{name}.json").read_text())


def conversation(n: int) -> list:
    return [
        cp.ConversationTurn(
            role="user" if i % 2 == 0 else "assistant",
            content=f"Turn {i}: naïve café, 東京 🙂 — don't stop; <|eot_id|> {'x' * ((n - 1 - i) * 13)}",
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("name", ["llama3", "gemma3", "deepseek-v3"])
def test_a_pack_holds_its_budget_counted_by_the_reference(name: str):
    from tokenizers import Tokenizer as Reference

    record = reference(name)
    given = cp.read_tokenizer(record["file"], name=f"my-{name}")
    assert given.name == f"my-{name}" and given.text.startswith("{")
    hf = Reference.from_file(record["file"])

    def count(text: str) -> int:
        return len(hf.encode(text, add_special_tokens=False).ids)

    builder = cp.Builder(cp.BuilderConfig(tokenizers=[given]))
    for budget in (90, 150, 400):
        request = cp.AssembleRequest(
            context=cp.AgentContext(trace_id="t", session_id="s"),
            query="q",
            tokenizer=cp.Tokenizer.named(f"my-{name}"),
            budget=budget,
            entry_overhead=4,
            system_prompt="You are terse.",
            conversation=conversation(16),
            keep_last=16,
        )
        pack = builder.assemble(request)
        assert pack.snapshot.tokenizer == cp.Tokenizer.named(f"my-{name}")
        # The flat text, and the messages each with the overhead, as the
        # reference counts them.
        assert count(pack.text) <= budget
        sent = sum(count(m.content) + 4 for m in pack.messages)
        assert sent <= budget, (budget, sent)
        assert pack.snapshot.text_tokens == count(pack.text)
        assert 0 < len(pack.messages) < 17


def test_a_gemma_3_model_counts_with_its_file_and_claude_with_a_callback():
    """The user's two other ways in: the model's name finds the file given
    under its profile's name, and a model whose tokenizer is not public
    counts through a function (here the Gemma file's own count stands in
    for the provider's)."""
    from tokenizers import Tokenizer as Reference

    record = reference("gemma3")
    hf = Reference.from_file(record["file"])

    def count(text: str) -> int:
        return len(hf.encode(text, add_special_tokens=False).ids)

    gemma = cp.Builder(cp.BuilderConfig(tokenizers=[cp.read_tokenizer(record["file"], name="gemma3")]))
    asked: list = []

    def provider(tokenizer: str, texts: list) -> list:
        asked.append(tokenizer)
        return [count(t) for t in texts]

    for model, builder, counter in (("google/gemma-3-12b-it", gemma, None),
                                    ("claude-sonnet-4-5-20250929", cp.Builder(), provider)):
        request = cp.AssembleRequest(
            context=cp.AgentContext(trace_id="t"), query="q", model=model, budget=150,
            system_prompt="You are terse.", conversation=conversation(16), keep_last=16)
        pack = builder.assemble(request, counter=counter)
        overhead = pack.snapshot.model.profile.message_overhead
        assert count(pack.text) <= 150
        assert sum(count(m.content) + overhead for m in pack.messages) <= 150
        assert 0 < len(pack.messages) < 17
    assert asked and set(asked) == {"claude-sonnet-4-5"}


@pytest.mark.parametrize("name", ["tekken", "gemma3", "deepseek-v3"])
def test_each_text_counts_as_the_reference_counted_it(name: str):
    record = reference(name)
    builder = cp.Builder(cp.BuilderConfig(tokenizers=[cp.read_tokenizer(record["file"], name=name)]))
    cases = [c for c in record["cases"] if c["text"].strip()][:200]
    request = cp.AssembleRequest(
        context=cp.AgentContext(trace_id="t"),
        query="q",
        tokenizer=cp.Tokenizer.named(name),
        budget=10_000_000,
        entry_overhead=0,
        system_prompt="",
        instructions=[c["text"] for c in cases],
        keep_last=0,
    )
    pack = builder.assemble(request)
    counted = [e for e in pack.entries if e.section == cp.Section.MANDATORY_INSTRUCTIONS]
    assert [e.tokens for e in counted] == [c["tokens"] for c in cases]


def test_a_rank_file_needs_its_pattern_and_a_name_must_be_given():
    record = reference("qwen3")
    no_pattern = cp.read_tokenizer(record["file"], name="qwen3")
    with pytest.raises(cp.CtxpackError, match=r"config\.tokenizers\[0\]\.pattern`: a tiktoken rank file names no pattern"):
        cp.Builder(cp.BuilderConfig(tokenizers=[no_pattern]))
    qwen = cp.read_tokenizer(record["file"], name="qwen3", pattern="qwen")
    builder = cp.Builder(cp.BuilderConfig(tokenizers=[qwen]))
    request = cp.AssembleRequest(
        context=cp.AgentContext(trace_id="t"), query="q", tokenizer=cp.Tokenizer.named("qwen-3"),
        budget=100, entry_overhead=0, system_prompt="S", keep_last=0,
    )
    with pytest.raises(cp.CtxpackError, match=r'"qwen-3".*it was given qwen3'):
        builder.assemble(request)


def test_a_whole_file_never_floods_an_error_or_a_repr(tmp_path):
    text = '{"model": {"type": "BPE"}, "vocab": "' + "x" * 100_000 + '"}'
    wrong = cp.TokenizerFile(name="big", text=text.encode())
    with pytest.raises(TypeError) as e:
        cp.Builder(cp.BuilderConfig(tokenizers=[wrong]))
    message = str(e.value)
    assert "`config.tokenizers[0].text`: expected string, got bytes" in message
    assert len(message) < 400, len(message)
    shown = repr(cp.TokenizerFile(name="big", text=text, pattern=None))
    assert shown == f"TokenizerFile(name='big', text=<{len(text)} characters>, pattern=None)"
    with pytest.raises(TypeError, match=r"a file's contents, not its path"):
        cp.read_tokenizer(text + "\n", name="big")
    path = tmp_path / "tokenizer.json"
    path.write_text(text)
    assert cp.read_tokenizer(path, name="big").text == text
    # Its bytes, as a download gives them, read alike; bytes that are not
    # UTF-8 refused, briefly.
    assert cp.read_tokenizer(path.read_bytes(), name="big") == cp.read_tokenizer(path, name="big")
    with pytest.raises(ValueError, match=r"^read_tokenizer: the file's bytes are not UTF-8 \(invalid start byte at byte 1\): "
                                         r"every file ctxpack reads is text \(a SentencePiece .model is binary, and not read\)$"):
        cp.read_tokenizer(b"{\xff" + b"x" * 100_000, name="big")
    binary = tmp_path / "tokenizer.model"
    binary.write_bytes(b"\n\x0e\xce\x00" * 10)
    with pytest.raises(ValueError, match=r"SentencePiece .model is binary"):
        cp.read_tokenizer(binary, name="v7")
