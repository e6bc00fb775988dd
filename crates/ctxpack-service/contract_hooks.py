"""schemathesis' hooks for `crates/ctxpack-service/contract`.

A valid request (one its schema admits) must be taken: schemathesis'
`positive_data_acceptance`, but for the rules the document itself lists
under the request body's `x-refused-across-fields`, which JSON Schema
cannot say (a field against another, or against the path). A 400 of a
valid request is taken only when its message names one of those rules'
fields with its words; any other 400 is the document failing to say what
the service refuses, and fails the run.
"""

import schemathesis
from schemathesis.specs.openapi.checks import positive_data_acceptance


def _rules(case):
    body = case.operation.definition.raw.get("requestBody") or {}
    return body.get("x-refused-across-fields") or []


def _message(response):
    try:
        return response.json()["error"]["message"]
    except Exception:  # not our error body: no rule applies
        return ""


@schemathesis.check
def valid_requests_are_taken(ctx, response, case):
    try:
        return positive_data_acceptance(ctx, response, case)
    except AssertionError:
        if response.status_code == 400:
            message = _message(response)
            if any(r["field"] in message and r["refused"] in message for r in _rules(case)):
                return None
        raise
