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
