"""How each ctxpack-error reads, as the core words it
(``ctxpack_core::Error::WORDING``): ``{name}`` is the case's field of that WIT
name, ``{0}`` its one string. Written by ``cargo run -p ctxpack-codegen``: do
not edit."""

import re
from typing import Any

WORDING = {
    "invalid-field": "invalid field `{field}`: {message}",
    "mandatory-over-budget": "mandatory layer needs {mandatory-tokens} tokens but the budget is {budget}",
    "tokenizer-unavailable": "tokenizer unavailable: {0}",
    "host-failed": "host import `{capability}` failed: {message}",
    "step-mismatch": "step mismatch: {0}",
}

NOT_PROVIDED = "not provided by this host"
"""The message a host writes for a capability it does not provide."""


def wording(tag: str, value: Any) -> str:
    """The message of the error case ``tag`` (its WIT name) with ``value``,
    its payload: the one string, or an object or dict of its fields."""
    template = WORDING.get(tag)
    if template is None:
        return f"{tag}: {value}"

    def field(m: "re.Match[str]") -> str:
        name = m.group(1)
        if name == "0":
            return str(value)
        if isinstance(value, dict):
            v = value.get(name, value.get(name.replace("-", "_")))
        else:
            v = getattr(value, name.replace("-", "_"), None)
        return m.group(0) if v is None else str(v)

    return re.sub(r"\{([a-z0-9-]+)\}", field, template)
