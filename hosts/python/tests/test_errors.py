"""Every error reads as the core words it: the package's messages come
from ``_errors.py``, written from ``ctxpack_core::Error::WORDING``, and
every case of the WIT's ``ctxpack-error`` has its wording."""

from ctxpack_wasm import CtxpackError
from ctxpack_wasm import types
from ctxpack_wasm._errors import WORDING, wording


def test_every_case_of_the_wit_error_is_worded():
    assert set(WORDING) == set(types._SCHEMA["CtxpackError"][2])


def test_an_error_reads_as_the_cores_wording_with_its_fields():
    error = types.CtxpackError.mandatory_over_budget(
        types.MandatoryShortfall(mandatory_tokens=120, budget=100))
    assert str(CtxpackError(error)) == "mandatory layer needs 120 tokens but the budget is 100"
    error = types.CtxpackError.host_failed(
        types.HostError(capability="policy.review", message="down {budget}"))
    # A value's own braces are not read as fields.
    assert str(CtxpackError(error)) == "host import `policy.review` failed: down {budget}"
    assert wording("step-mismatch", "late") == "step mismatch: late"


def test_a_model_name_of_any_unicode_is_refused_naming_the_field_and_the_builder_goes_on():
    import pytest
    import ctxpack_wasm as cp

    b = cp.Builder()
    for name in ["日本語", "õy\x1f:", "日本語-2024-08-06", "-"]:
        with pytest.raises(cp.CtxpackError) as e:
            b.count(texts=["hello"], model=name)
        assert "request.model" in str(e.value) or "count.model" in str(e.value), str(e.value)
    assert b.count_texts(["hello world"]) == [2]


def test_an_instance_that_traps_is_told_and_replaced_and_the_next_call_works():
    import pytest
    import ctxpack_wasm as cp

    inst = cp.Instance()
    b = cp.Builder(instance=inst)
    assert b.count_texts(["hello world"]) == [2]
    # A memory limit the store sets, which the next call passes: the
    # component's allocation fails and it traps.
    inst.store.set_limits(memory_size=64 << 20)
    with pytest.raises(cp.ComponentTrapped) as e:
        b.count_texts(["word " * (20 << 20)])
    assert str(e.value).startswith("the component trapped in [method]json-builder.count-texts ("), str(e.value)
    assert "next call makes a new one" in str(e.value)
    assert inst.broken
    # The same builder answers the next call, in a new instance.
    assert b.count_texts(["hello world"]) == [2]
    assert b._inst is not inst and not b._inst.broken
    pack = b.assemble({"context": {"trace-id": "t"}, "query": "q", "tokenizer": "o200k-base",
                       "system-prompt": "Be brief.", "budget": 100})
    assert pack.snapshot.tokens_used > 0
