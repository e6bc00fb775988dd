"""What the host sends the component, as JSON text: requests,
configurations, candidates, provenance, verdicts. The writers for the
large parts (candidates, a conversation's turns) write the text directly,
listing the fields by hand for speed; ``tests/test_fast_writers.py``
compares each with the checking encoder field for field."""

from __future__ import annotations

import dataclasses
import json
from json.encoder import encode_basestring as _q  # C-accelerated; keeps non-ASCII
from typing import Any, Optional

from ._calls import DEFAULT_PROFILE
from ._codec import decode, encode
from .types import AgentContext, AssembleRequest, Candidate, ConversationTurn, Provenance, Role


def _provenance(p: Any) -> Any:
    if p is None or isinstance(p, dict):
        return None if p is None else {k.replace("_", "-"): v for k, v in p.items()}
    if type(p) is Provenance:
        return {"source-kind": p.source_kind, "reference": p.reference,
                "source-version": p.source_version, "index-revision": p.index_revision}
    return encode(p, ["ref", "Provenance"], "provenance")


def _candidate(c: Any, path: str) -> Any:
    """A candidate as JSON, cheaply: the component checks every field and
    names one that is wrong."""
    if type(c) is Candidate:
        d = {"id": c.id, "section": c.section, "text": c.text, "trust": c.trust}
        if c.provenance is not None:
            d["provenance"] = _provenance(c.provenance)
        if c.score is not None:
            d["score"] = c.score
        if c.sequence is not None:
            d["sequence"] = c.sequence
        if c.scope is not None:
            d["scope"] = c.scope
        if c.token_count is not None:
            d["token-count"] = c.token_count
        return d
    if isinstance(c, dict):
        d = {k.replace("_", "-"): v for k, v in c.items()}
        if "provenance" in d:
            d["provenance"] = _provenance(d["provenance"])
        return d
    return encode(c, ["ref", "Candidate"], path)


def _candidate_text(c: Candidate) -> str:
    """A `Candidate` as JSON text, written directly: the 10k-candidate
    answer is most of what crosses. A field of the wrong type raises
    ``TypeError`` (that source's failure); a wrong value is refused by
    the component, naming the field."""
    p, score, seq, scope, count = c.provenance, c.score, c.sequence, c.scope, c.token_count
    if p is None:
        prov = ""
    elif type(p) is Provenance and p.source_version is None and p.index_revision is None:
        prov = ',"provenance":{"source-kind":%s,"reference":%s}' % (_q(p.source_kind), _q(p.reference))
    else:
        prov = ',"provenance":' + json.dumps(_provenance(p), ensure_ascii=False)
    text = '{"id":%s,"section":%s,"text":%s,"trust":%s%s' % (
        _q(c.id), _q(c.section), _q(c.text), _q(c.trust), prov)
    if score is not None:
        text += ',"score":' + (float.__repr__(score) if score.__class__ is float else _number(score))
    if seq is not None or scope is not None or count is not None:
        if seq is not None:
            text += ',"sequence":' + _number(seq)
        if scope is not None:
            text += ',"scope":' + _q(scope)
        if count is not None:
            text += ',"token-count":' + _number(count)
    return text + "}"


def _number(v: Any) -> str:
    if v.__class__ is bool or not isinstance(v, (int, float)):
        raise TypeError(f"expected a number, got {type(v).__name__} {v!r}")
    return float.__repr__(v) if v.__class__ is float else int.__repr__(v)


def _verdict(v: Any, path: str) -> Any:
    if isinstance(v, tuple) and len(v) == 2:
        v = {v[0]: v[1]}
    return encode(v, ["ref", "Verdict"], path)


def _turns_text(turns: list) -> Optional[str]:
    """A conversation of ``ConversationTurn``s as JSON text, written
    directly (a 10k-message chat is most of what a trim sends); ``None``
    when any turn is something else, for the checking encoder."""
    parts = []
    for i, t in enumerate(turns):
        if type(t) is not ConversationTurn:
            return None
        role, content, call = t.role, t.content, t.tool_call_id
        if role.__class__ is not str:
            if not isinstance(role, Role):
                return None
            role = role.value
        if role not in _ROLE_NAMES or content.__class__ is not str:
            return None
        text = '{"role":"%s","content":%s' % (role, _q(content))
        if call is not None:
            if call.__class__ is not str:
                return None
            text += ',"tool-call-id":' + _q(call)
        attached = t.attached_tokens
        if attached is not None:
            # Checked by the encoder's rules: a whole number that fits a u32.
            if attached.__class__ is not int or not 0 <= attached <= 0xFFFF_FFFF:
                return None
            text += ',"attached-tokens":%d' % attached
        parts.append(text + "}")
    return "[" + ",".join(parts) + "]"


_ROLE_NAMES = frozenset(r.value for r in Role)


def _request(request: Any) -> tuple[str, AgentContext]:
    turns = request.conversation if type(request) is AssembleRequest else None
    written = _turns_text(turns) if turns else None
    if written is not None:
        request = dataclasses.replace(request, conversation=[])
    try:
        obj = encode(request, ["ref", "AssembleRequest"], "request")
    except TypeError as e:
        if "`request.conversation[" in str(e):
            raise TypeError(f"{e} (chat messages as they are sent to a model are the request's "
                            "`chat`: Chat(shape='openai-chat', messages=messages), or "
                            "ctxpack_wasm.chat.chat(messages) for LangChain's)") from None
        raise
    # The context the callbacks are given: the core's when left out (an
    # empty trace id, every other field absent).
    context = {"trace-id": "", **obj.get("context", {})}
    if written is not None:
        # Written beside what the encoder wrote (it checked the rest).
        obj.pop("conversation", None)
        text = json.dumps(obj, ensure_ascii=False)
        text = text[:-1] + (', ' if len(obj) else '') + '"conversation": ' + written + "}"
    else:
        text = json.dumps(obj, ensure_ascii=False)
    return text, decode(context, ["ref", "AgentContext"])


def _config(config: Any) -> tuple[str, str]:
    """The configuration's JSON text and its profile's name."""
    if config is None:
        return "{}", DEFAULT_PROFILE
    obj = encode(config, ["ref", "BuilderConfig"], "config")
    profile = obj.get("profile", DEFAULT_PROFILE) if isinstance(obj, dict) else DEFAULT_PROFILE
    if isinstance(profile, dict) and len(profile) == 1:
        (profile,) = profile
    return json.dumps(obj, ensure_ascii=False), str(profile)
