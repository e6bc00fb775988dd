"""The package as a user meets it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ctxpack_wasm as cp
from replay_host import ReplayHost

ROOT = Path(__file__).resolve().parents[3]
RAG = {"profile": {"rag": {"retrieve_limit": 10}}}


def request(**overrides):
    fields = dict(
        context=cp.AgentContext(trace_id="t-1", session_id="s-1"),
        query="How long do refunds take?",
        tokenizer="o200k-base",
        entry_overhead=0,
        system_prompt="Answer from the documents.",
        keep_last=4,
    )
    fields.update(overrides)
    return cp.AssembleRequest(**fields)


def doc(i: int, text: str = "Refunds take five business days.") -> cp.Candidate:
    return cp.Candidate(
        id=f"kb-{i}", section=cp.Section.RELEVANT_KNOWLEDGE, text=text, trust="trusted",
        provenance=cp.Provenance(source_kind="kb", reference=f"kb-{i}"), score=1.0 / (i + 1),
    )


class Docs:
    def retrieve(self, context, query, limit):
        return [doc(i, f"Refund rule {i}: five business days.") for i in range(3)]


def test_a_pack_with_typed_fields():
    pack = cp.Builder(RAG).assemble(request(), sources=Docs())
    assert isinstance(pack, cp.ContextPack)
    assert pack.budget_used <= pack.budget_limit
    assert "[source: kb-0]" in pack.text
    assert pack.snapshot.status == [cp.SnapshotStatus.COMPLETE]
    reasons = {e.id: e.reason for e in pack.snapshot.entries}
    assert reasons["kb-0"] == cp.Reason.within_budget()


def test_a_callback_that_raises_degrades_its_source_and_the_instance_goes_on():
    class Broken:
        def retrieve(self, context, query, limit):
            raise ConnectionError("index unreachable")

    builder = cp.Builder(RAG)
    pack = builder.assemble(request(), sources=Broken())
    assert pack.snapshot.status == [cp.SnapshotStatus.DEGRADED]
    (call,) = pack.snapshot.source_calls
    assert call.outcome == cp.SourceOutcome("failed", "ConnectionError: index unreachable")
    # The same instance serves the next assembly.
    assert "kb-0" in builder.assemble(request(), sources=Docs()).text


def test_a_policy_that_raises_fails_the_assembly_with_its_snapshot():
    def policy(context, items):
        raise RuntimeError("policy engine down")

    with pytest.raises(cp.AssemblyFailed) as failed:
        cp.Builder(RAG).assemble(request(), sources=Docs(), policy=policy)
    assert failed.value.error.tag == "host-failed"
    assert failed.value.snapshot is not None
    assert failed.value.snapshot.status == [cp.SnapshotStatus.FAILED]


def test_a_denial_and_a_redaction():
    def policy(context, items):
        return [cp.Verdict.deny("secret") if c.id == "kb-1" else
                ("redact", "[redacted]") if c.id == "kb-2" else "allow" for c in items]

    pack = cp.Builder(RAG).assemble(request(), sources=Docs(), policy=policy)
    assert "kb-1" not in pack.text and "[redacted]" in pack.text


def test_bad_input_names_the_field():
    with pytest.raises(TypeError, match=r"`request.conversation\[0\].role`"):
        cp.Builder().assemble(request(conversation=[{"role": "robot", "content": "hi"}]))
    with pytest.raises(cp.CtxpackError, match=r"`config.plan.cut_step`"):
        cp.Builder({"plan": {"cut_step": 0}})
    # A field the core requires is required where the record is made, and
    # refused naming it in a dict.
    with pytest.raises(TypeError, match="trust"):
        cp.Candidate(id="x", section="relevant-knowledge", text="t")  # type: ignore[call-arg]
    with pytest.raises(cp.CtxpackError, match=r"`request.tokenizer`: is required when the request names no model"):
        cp.Builder().assemble({"conversation": []})
    with pytest.raises(TypeError, match=r"`request`: AssembleRequest has no field 'keep_lats'"):
        cp.Builder().assemble({"tokenizer": "o200k-base", "keep_lats": 3})
    # Named as a Python caller writes the field, in a dict or a class.
    with pytest.raises(TypeError, match=r"^`request.keep_last`: -1 is out of range for u32$"):
        cp.Builder().assemble({"tokenizer": "o200k-base", "keep_last": -1})
    with pytest.raises(TypeError, match=r"^`request.entry_overhead`: expected u32"):
        cp.Builder().assemble(request(entry_overhead="2"))


@pytest.mark.skipif(sys.version_info < (3, 11), reason="exception notes")
def test_a_mistake_in_a_callback_says_which_callback_raised_it():
    class Broken:
        def retrieve(self, context, query, limit):
            return None.foo  # type: ignore[attr-defined]

    with pytest.raises(AttributeError) as raised:
        cp.Builder(RAG).assemble(request(), sources=Broken())
    assert raised.value.__notes__ == ["raised by the callback retrieve() (sources.retrieve): an AttributeError "
                                      "is a mistake in it, not its store failing"]


def test_a_lender_that_cannot_lend_is_refused_before_anything_runs():
    class Misspelt:
        def retreive(self, context, query, limit):
            return []

    with pytest.raises(TypeError, match=r"^sources.retreive: ctxpack calls sources.retrieve\(\), which "
                                        r"Misspelt does not have — a misspelling\?$"):
        cp.Builder(RAG).assemble(request(), sources=Misspelt())
    with pytest.raises(TypeError, match=r"^sources: a function cannot lend retrieve, expand_graph, "
                                        r"recall_memory, repository_state; pass an object"):
        cp.Builder(RAG).assemble(request(), sources=lambda context, query, limit: [])

    class Summaries:
        def sumarise(self, requests, tokenizer):
            return []

    with pytest.raises(TypeError, match=r"^summarizer.sumarise: ctxpack calls summarizer.summarize\(\)"):
        cp.Builder().assemble(request(), summarizer=Summaries())

    # A near name beside the real one is the lender's own business; a
    # function lends an interface of one function (the policy).
    class Both(Docs):
        def retrieved(self):
            return 0

    pack = cp.Builder(RAG).assemble(request(), sources=Both(), policy=lambda context, items: ["allow"] * len(items))
    assert pack.snapshot.status == [cp.SnapshotStatus.COMPLETE]


def test_a_plain_trim_needs_the_conversation_a_budget_and_a_tokenizer():
    turns = [cp.ConversationTurn(role="user" if i % 2 == 0 else "assistant",
                                 content=f"turn {i}: " + "word " * 10) for i in range(12)]
    trim = cp.AssembleRequest(conversation=turns, budget=60, tokenizer="o200k-base")
    pack = cp.Builder().assemble(trim)
    kept = [m.content for m in pack.messages]
    assert 0 < len(kept) < 12 and kept[-1].startswith("turn 11:")
    assert pack.budget_used <= 60
    # Left out: no trace id, an empty query, no overhead, every turn
    # considered (dropped by the budget only, never by keep-last).
    assert pack.trace_id == ""
    reasons = {e.reason.tag for e in pack.snapshot.entries if not e.included}
    assert "keep-last" not in reasons and "over-budget" in reasons
    # The kept conversation begins on a user turn, as chat APIs need.
    assert pack.messages[0].role == cp.Role.USER and reasons == {"over-budget", "before-user-turn"}
    assert cp.Builder().assemble(cp.AssembleRequest(
        conversation=turns, budget=60, tokenizer="o200k-base", conversation_start="any-turn",
    )).messages[0].role == cp.Role.ASSISTANT
    assert cp.Builder().assemble(trim).snapshot.id == pack.snapshot.id
    as_dict = {"conversation": [{"role": t.role, "content": t.content} for t in turns],
               "budget": 60, "tokenizer": "o200k-base"}
    assert cp.Builder().assemble(as_dict).snapshot.id == pack.snapshot.id


def test_an_answer_of_the_wrong_shape_raises_naming_the_callback_and_the_field():
    class Misspelt:
        def retrieve(self, context, query, limit):
            return [{"id": "x", "sectoin": "relevant-knowledge", "text": "t", "trust": "trusted"}]

    with pytest.raises(cp.CtxpackError) as refused:
        cp.Builder(RAG).assemble(request(), sources=Misspelt())
    assert refused.value.error.value.field == "retrieve()[0].sectoin"
    assert "unknown field `sectoin`" in str(refused.value)
    assert " at line " not in str(refused.value) and "answer[" not in str(refused.value)

    class Nowhere:
        def retrieve(self, context, query, limit):
            return [{"id": "x", "section": "nowhere", "text": "t", "trust": "trusted"}]

    with pytest.raises(cp.CtxpackError, match=r"`retrieve\(\)\[0\]\.section`"):
        cp.Builder(RAG).assemble(request(), sources=Nowhere())

    class WrongType:
        def retrieve(self, context, query, limit):
            return [doc(0), cp.Candidate(id=7, section="relevant-knowledge", text="t", trust="trusted")]

    with pytest.raises(TypeError, match=r"`retrieve\(\)\[1\]\.id`"):
        cp.Builder(RAG).assemble(request(), sources=WrongType())


def test_a_mistake_in_a_callback_raises_a_failing_store_degrades():
    class Typo:
        def retrieve(self, context, query, limit):
            return [cp.Candidate(id="x", sectoin="relevant-knowledge")]  # type: ignore[call-arg]

    with pytest.raises(TypeError, match="sectoin"):
        cp.Builder(RAG).assemble(request(), sources=Typo())

    class Down:
        def retrieve(self, context, query, limit):
            raise ConnectionError("index unreachable")

    builder = cp.Builder(RAG)
    pack = builder.assemble(request(), sources=Down())
    assert pack.snapshot.status == [cp.SnapshotStatus.DEGRADED]
    # The instance goes on after a mistake.
    assert builder.assemble(request(), sources=Docs()).snapshot.status == [cp.SnapshotStatus.COMPLETE]


async def test_async_callbacks_run_concurrently_and_give_the_rust_hosts_snapshot():
    scenario = json.loads((ROOT / "tests/scenarios/full-sources.json").read_text())
    expected = json.loads((ROOT / "tests/expected/full-sources.json").read_text())
    host = ReplayHost.of(ROOT / "tests/scenarios/full-sources.json")
    running, most = 0, 0

    class Slow:
        async def retrieve(self, context, query, limit):
            nonlocal running, most
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.01)
            running -= 1
            return host.retrieve(context, query, limit)

        async def recall_memory(self, context, user_id, query, limit):
            nonlocal running, most
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.01)
            running -= 1
            return host.recall_memory(context, user_id, query, limit)

        def repository_state(self, context):
            return host.repository_state(context)

        def expand_graph(self, context, item_ids, depth):
            return host.expand_graph(context, item_ids, depth)

    pack = await cp.Builder(scenario.get("config")).assemble_async(
        scenario["request"], sources=Slow(), policy=host, summarizer=host)
    assert pack.snapshot.id == expected["reply"]["pack"]["snapshot"]["id"]
    assert most == 2  # retrieval and memory were awaited together
    host.check()


def test_an_async_callback_in_the_sync_api_raises():
    class Async:
        async def retrieve(self, context, query, limit):
            return []

    with pytest.raises(TypeError, match=r"retrieve\(\) is async: await assemble_async"):
        cp.Builder(RAG).assemble(request(), sources=Async())

    # Before anything runs, whether or not this assembly would call it.
    async def policy(context, items):
        return ["allow"] * len(items)

    with pytest.raises(TypeError, match=r"review\(\) is async"):
        cp.Builder().assemble(request(), policy=policy)


def test_routing_and_handling():
    router = cp.Router((ROOT / "host-example/routes/assistant.yaml").read_text())
    decision = router.route("Will it rain in Porto tomorrow?")
    assert decision.route is not None
    handling = cp.Builder(RAG).handle(router, request(query="Will it rain in Porto tomorrow?"))
    assert handling.dispatch.tag == "skill"


def test_a_snapshot_diff():
    builder = cp.Builder(RAG)
    before = builder.assemble(request(), sources=Docs()).snapshot
    after = builder.assemble(request(budget=40), sources=Docs()).snapshot
    diff = cp.diff_snapshots(before, after)
    assert diff.changes, "a smaller budget changes what is kept"


def test_the_compiled_component_is_cached(tmp_path):
    code = "import ctxpack_wasm as c; c.Builder()"
    env = dict(os.environ, CTXPACK_WASM_CACHE=str(tmp_path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    (artifact,) = tmp_path.glob("*.cwasm")
    stamp = artifact.stat().st_mtime_ns
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    assert artifact.stat().st_mtime_ns == stamp  # read, not rewritten


def test_every_assembly_is_dropped_from_the_instance_when_it_ends():
    # An instance of its own: using a dropped handle traps, and a trapped
    # instance cannot be entered again.
    builder = cp.Builder(RAG, instance=cp.Instance())
    inst = builder._inst
    made = []
    start = inst.start

    def recording(store, handle, text):
        assembly = start(store, handle, text)
        made.append(assembly)
        return assembly

    inst.start = recording
    try:
        builder.assemble(request(), sources=Docs())
        with pytest.raises(cp.AssemblyFailed):
            builder.assemble(request(), sources=Docs(), policy=None)
    finally:
        del inst.start
    assert len(made) == 2
    for assembly in made:
        with pytest.raises(Exception):  # gone from the instance's table
            inst.step(inst.store, assembly, "")


def test_after_a_trap_the_next_builder_gets_a_fresh_instance():
    builder = cp.Builder(RAG)
    inst = builder._inst
    assembly = inst.start(inst.store, builder._handle, "{}")
    assembly.drop(inst.store)
    with pytest.raises(Exception):
        inst.step(inst.store, assembly, "")  # a dropped handle: a trap
    assert inst.broken
    fresh = cp.Builder(RAG)
    assert fresh._inst is not inst
    assert "kb-0" in fresh.assemble(request(), sources=Docs()).text


def test_a_float_crosses_exactly():
    # Parsed by a correctly rounded reader: no ulp lost on the way in, so
    # the snapshot (and its id) is the Rust host's for the same config.
    share = 0.009999999999999953
    config = {"plan": {"shares": [{"section": "relevant-knowledge", "share": share}]}}
    pack = cp.Builder(config).assemble(request())
    assert pack.snapshot.plan.shares[0].share == share


def test_a_step_the_package_does_not_know_is_an_error_not_a_guess():
    # A newer component could ask for a step this package was written
    # before: the driver refuses it instead of answering it as another.
    class Asking:
        store = None

        def step(self, store, assembly, answer):
            return self.text

    host = cp._Host(None, None, None, None, cp.AgentContext(trace_id="t"))
    asking = Asking()
    asking.text = '{"rerank": {"section": "relevant-knowledge", "items": []}}'
    with pytest.raises(RuntimeError, match="step this package does not know: 'rerank'"):
        next(cp._step_loop(asking, None, host))
    # A call of a known step: the same.
    asking.text = '{"calls": [{"retrieve": {"query": "q", "limit": 1}}, {"rerank": {"items": []}}]}'
    with pytest.raises(RuntimeError, match="call this package does not know: 'rerank'"):
        next(cp._step_loop(asking, None, host))


def test_a_source_the_profile_never_calls_is_refused_naming_the_profiles_that_would():
    with pytest.raises(cp.CtxpackError) as refused:
        cp.Builder().assemble(request(), sources=Docs())
    assert refused.value.error.value.field == "sources.retrieve"
    assert "profile `passthrough` never calls it; `rag` or `rag-memory` or `full` would" in str(refused.value)

    class Everything(Docs):
        def recall_memory(self, context, user_id, query, limit):
            return []

    with pytest.raises(cp.CtxpackError, match=r"`sources.recall_memory`.*`rag-memory` or `full`"):
        cp.Builder(RAG).assemble(request(), sources=Everything())
    builder = cp.Builder({"profile": {"rag_memory": {"retrieve_limit": 3, "memory_limit": 2}}})
    assert builder.profile == "rag-memory"
    assert builder.assemble(request(), sources=Everything()).snapshot.status == [cp.SnapshotStatus.COMPLETE]


def test_the_version_and_every_reason_in_words():
    assert cp.__version__ == "0.1.0"
    pack = cp.Builder().assemble(cp.AssembleRequest(
        conversation=[cp.ConversationTurn(role="assistant", content="a " * 50),
                      cp.ConversationTurn(role="user", content="hi")],
        budget=40, tokenizer="o200k-base", system_prompt="Be brief.", keep_last=1))
    words = {e.id: cp.explain_reason(e.reason) for e in pack.snapshot.entries}
    assert words["system-prompt"] == "Included: it belongs to L0, which is never dropped."
    assert words["turn-0"] == "Dropped: older than the last N turns (N given): 1."
    assert cp.explain_reason("before-user-turn").startswith("Dropped: the kept conversation begins with a user turn")
    shortfall = cp.Reason.over_budget(cp.Shortfall(needed=5, remaining=2))
    assert cp.explain_reason(shortfall) == "Dropped: it needed more tokens than remained: needed 5, 2 remained."


def test_a_request_that_names_its_model_takes_what_it_leaves_out_from_the_profile():
    turns = [cp.ConversationTurn(role="user", content="What is the refund window?")]
    pack = cp.Builder().assemble(cp.AssembleRequest(
        model="gpt-4o-mini-2024-07-18", system_prompt="Answer briefly.", conversation=turns))
    model = pack.snapshot.model
    assert model.profile.name == "gpt-4o-mini"
    assert model.assumed == [cp.Assumed.TOKENIZER, cp.Assumed.BUDGET, cp.Assumed.ENTRY_OVERHEAD,
                             cp.Assumed.REPLY_OVERHEAD]
    assert pack.snapshot.tokenizer == cp.Tokenizer.o200k_base()
    assert pack.snapshot.token_budget == 128_000 - 16_384
    # As OpenAI's count of a chat request: 3 tokens and the role's a
    # message on top of the contents, and 3 that prime the reply.
    plain = cp.Builder().assemble(cp.AssembleRequest(
        tokenizer="o200k-base", system_prompt="Answer briefly.", conversation=turns))
    assert pack.snapshot.message_tokens == plain.snapshot.message_tokens + 4 * len(pack.messages) + 3
    assert plain.snapshot.model is None

    # A profile of one's own, and a name no profile has.
    house = cp.ModelProfile(name="house-7b", tokenizer=cp.Tokenizer.chars_per_token(4),
                            context_window=4096, output_reserve=1024, message_overhead=4,
                                reply_overhead=0)
    pack = cp.Builder({"models": [house]}).assemble(cp.AssembleRequest(model="acme/House-7B", conversation=turns))
    assert pack.snapshot.model.profile == house
    assert pack.snapshot.token_budget == 3072
    with pytest.raises(cp.CtxpackError, match=r"`request.model`: \"llama-3-8b\" is not a model this builder knows; nearest: llama-3-8b-instruct"):
        cp.Builder().assemble(cp.AssembleRequest(model="llama-3-8b", conversation=turns))
    with pytest.raises(cp.CtxpackError, match=r"tokenizer file \"llama3\" \(Llama 3's tokenizer.json"):
        cp.Builder().assemble(cp.AssembleRequest(model="meta-llama/Llama-3.1-8B-Instruct", conversation=turns))
    with pytest.raises(cp.CtxpackError, match=r"`request.tokenizer`: is required when the request names no model"):
        cp.Builder().assemble(cp.AssembleRequest(conversation=turns))
