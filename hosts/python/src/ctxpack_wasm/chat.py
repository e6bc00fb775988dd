"""The chat messages you already have, in and out of ctxpack.

In: OpenAI-style chat messages (dicts with ``role``, ``content`` as a
string or a list of text parts, ``tool_calls``, ``tool_call_id``) and
LangChain messages (``langchain_core.messages``), as a request's
conversation. Out: a pack's kept conversation as OpenAI messages, as
Anthropic's ``system`` and ``messages``, as LangChain messages, and as
plain JSON-serialisable dicts (snake_case). Given the messages the pack
was made from, what comes out is the originals that were kept, unchanged
(tool calls and all); without them, what the pack holds.

``trim_messages`` is ``langchain_core.messages.trim_messages`` (the subset
that makes sense for an exact packer) backed by ctxpack. LangChain is an
optional extra: nothing here imports it until a LangChain message is
given or asked for.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Literal, Optional, Sequence, Union

from . import AssemblyFailed, Builder
from ._codec import encode
from .types import AssembleRequest, ContextPack, ConversationTurn, Role

__all__ = [
    "conversation",
    "kept",
    "to_openai",
    "to_anthropic",
    "to_langchain",
    "to_dicts",
    "trim_messages",
]

# OpenAI's roles and LangChain's message types, as the conversation's.
_ROLES = {
    "system": "system", "developer": "system", "user": "user", "assistant": "assistant",
    "tool": "tool", "human": "user", "ai": "assistant",
}


def _is_langchain(m: Any) -> bool:
    return not isinstance(m, dict) and hasattr(m, "type") and hasattr(m, "content")


def _text(content: Any, where: str) -> str:
    """A message's content as text: a string, or text parts (any other part
    is refused, naming it: ctxpack would silently lose it)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise TypeError(f"`{where}.content[{j}]`: a {kind!r} part is not text; "
                                "ctxpack packs text only")
        return "\n".join(texts)
    raise TypeError(f"`{where}.content`: expected a string or a list of text parts, "
                    f"got {type(content).__name__}")


def _calls(m: Any) -> list[tuple[str, str, str]]:
    """The tool calls an assistant message makes: (id, name, arguments)."""
    if isinstance(m, dict):
        out = []
        for c in m.get("tool_calls") or []:
            f = c.get("function") or {}
            out.append((c["id"], f.get("name", ""), f.get("arguments", "")))
        return out
    calls = getattr(m, "tool_calls", None)
    if not calls:
        return []
    return [(c["id"], c["name"], json.dumps(c.get("args", {}), ensure_ascii=False)) for c in calls]


def conversation(messages: Iterable[Any]) -> list[ConversationTurn]:
    """``messages`` as a request's conversation, one turn per message, in
    order. An assistant message's tool calls are written into its text
    (``[tool call] name(arguments)``: the model is charged for them) and
    its results share its first call's id, so the call and every result
    are kept or dropped together."""
    turns: list[ConversationTurn] = []
    group: dict[str, str] = {}
    for i, m in enumerate(messages):
        if m.__class__ is ConversationTurn:
            turns.append(m)
            continue
        if m.__class__ is dict:
            role_name, content = m.get("role"), m.get("content")
        elif _is_langchain(m):
            role_name, content = m.type, m.content
        else:
            raise TypeError(f"`messages[{i}]`: expected an OpenAI-style dict, a LangChain "
                            f"message or a ConversationTurn, got {type(m).__name__}")
        role = _ROLES.get(role_name) if role_name.__class__ is str else None
        if role is None:
            raise TypeError(f"`messages[{i}].role`: {role_name!r} is not a chat role "
                            f"({', '.join(sorted(_ROLES))})")
        text = content if content.__class__ is str else _text(content, f"messages[{i}]")
        call_id: Optional[str] = None
        if role == "assistant":
            calls = _calls(m)
            if calls:
                call_id = calls[0][0]
                for cid, _, _ in calls:
                    group[cid] = call_id
                text = "\n".join([text] * bool(text) + [f"[tool call] {n}({a})" for _, n, a in calls])
        elif role == "tool":
            answered = m.get("tool_call_id") if isinstance(m, dict) else getattr(m, "tool_call_id", None)
            if not isinstance(answered, str):
                raise TypeError(f"`messages[{i}].tool_call_id`: a tool message answers a call by its id")
            call_id = group.get(answered, answered)
        turns.append(ConversationTurn(role=role, content=text, tool_call_id=call_id))  # type: ignore[arg-type]
    return turns


def _kept_turns(pack: ContextPack) -> list[int]:
    """The indices of the request's turns the pack kept, oldest first."""
    return [int(e.id[5:]) for e in pack.entries
            if e.section == "conversation-state" and e.id.startswith("turn-")]


def kept(pack: ContextPack, messages: Sequence[Any]) -> list[Any]:
    """The messages of ``messages`` (those the pack's conversation was made
    from, by :func:`conversation`) that the pack kept, unchanged."""
    return [messages[i] for i in _kept_turns(pack)]


def _system(pack: ContextPack) -> list[str]:
    """The pack's system messages: L0 and the other context."""
    n = len(_kept_turns(pack))
    head = pack.messages[:len(pack.messages) - n]
    return [m.content for m in head]


def to_dicts(pack: ContextPack) -> list[dict[str, Any]]:
    """The pack's messages as plain dicts (``role``, ``content``, and
    ``tool_call_id`` when there is one): ``json.dumps`` takes them."""
    out = []
    for m in pack.messages:
        d = {"role": str(m.role.value if isinstance(m.role, Role) else m.role), "content": m.content}
        if m.tool_call_id is not None:
            d["tool_call_id"] = m.tool_call_id
        out.append(d)
    return out


def _openai_of(m: Any) -> dict[str, Any]:
    if isinstance(m, dict):
        return m
    if isinstance(m, ConversationTurn):
        d = {"role": m.role.value if isinstance(m.role, Role) else m.role, "content": m.content}
        if m.tool_call_id is not None and d["role"] == "tool":
            d["tool_call_id"] = m.tool_call_id
        return d
    from langchain_core.messages import convert_to_openai_messages  # the extra

    converted: dict[str, Any] = convert_to_openai_messages(m)
    return converted


def to_openai(pack: ContextPack, messages: Optional[Sequence[Any]] = None) -> list[dict[str, Any]]:
    """OpenAI chat messages: the pack's system messages, then the kept
    conversation — the original messages when ``messages`` is given (tool
    calls intact), otherwise the pack's own turns (refused when they hold
    tool calls, which only the originals can give back)."""
    if messages is None:
        if any(m.tool_call_id is not None for m in pack.messages):
            raise ValueError("this pack's conversation has tool calls, which it holds as text: "
                             "give the messages it was made from, to_openai(pack, messages), to "
                             "get them back as tool_calls")
        return to_dicts(pack)
    head = [{"role": "system", "content": text} for text in _system(pack)]
    return head + [_openai_of(m) for m in kept(pack, messages)]


def to_anthropic(pack: ContextPack, messages: Optional[Sequence[Any]] = None) -> dict[str, Any]:
    """Anthropic's Messages API shape: ``{"system": …, "messages": […]}``,
    the system text apart, tool calls as ``tool_use`` blocks and their
    results as ``tool_result`` blocks in a user turn, consecutive turns of
    one role merged. Its first message must be the user's: a pack whose
    kept conversation does not begin so (``conversation_start="any-turn"``)
    is refused, saying so."""
    system = "\n\n".join(_system(pack))
    out: list[dict[str, Any]] = []

    def add(role: str, block: dict[str, Any]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].append(block)
        else:
            out.append({"role": role, "content": [block]})

    for m in to_openai(pack, messages)[len(_system(pack)):]:
        role, text = m["role"], _text(m.get("content"), "message")
        if role == "system":
            system = "\n\n".join(filter(None, [system, text]))
        elif role == "tool":
            add("user", {"type": "tool_result", "tool_use_id": m.get("tool_call_id"), "content": text})
        elif role == "assistant":
            if text:
                add("assistant", {"type": "text", "text": text})
            for c in m.get("tool_calls") or []:
                f = c.get("function") or {}
                args = f.get("arguments") or "{}"
                add("assistant", {"type": "tool_use", "id": c["id"], "name": f.get("name", ""),
                                  "input": json.loads(args) if isinstance(args, str) else args})
        else:
            add("user", {"type": "text", "text": text})
    if out and out[0]["role"] != "user":
        raise ValueError("Anthropic's API needs the first message to be the user's; this pack's "
                         "conversation begins with an assistant turn (conversation_start='any-turn')")
    return {"system": system, "messages": out}


def to_langchain(pack: ContextPack, messages: Optional[Sequence[Any]] = None) -> list[Any]:
    """LangChain messages (needs ``langchain_core``): the originals kept when
    ``messages`` is given, otherwise built from the pack's."""
    from langchain_core.messages import convert_to_messages  # the extra

    if messages is not None and all(_is_langchain(m) for m in messages):
        head = convert_to_messages([{"role": "system", "content": t} for t in _system(pack)])
        return list(head) + kept(pack, messages)
    return list(convert_to_messages(to_openai(pack, messages)))


_U32_MAX = 0xFFFF_FFFF


#: The request fields `trim_messages` fills from its arguments.
_ARGUMENTS = {"request.model": "model", "request.budget": "max_tokens", "request.tokenizer": "token_counter"}


def trim_messages(
    messages: Sequence[Any],
    *,
    max_tokens: int,
    token_counter: Any = None,
    strategy: Literal["last"] = "last",
    allow_partial: bool = False,
    start_on: Optional[Union[str, Sequence[str]]] = None,
    include_system: bool = False,
    entry_overhead: Optional[int] = None,
    model: Optional[str] = None,
    builder: Optional[Builder] = None,
) -> list[Any]:
    """``langchain_core.messages.trim_messages``, packed by ctxpack: the
    newest messages that fit ``max_tokens``, returned unchanged and in
    order, a tool call never apart from its results. ``token_counter`` is
    a tokenizer ctxpack counts exactly (``"o200k-base"``, the default,
    ``"cl100k-base"``, ``Tokenizer.named(file)``,
    ``Tokenizer.chars_per_token(n)``), not a function. ``model`` names
    the model the messages are for (``"gpt-4o"``, ``"qwen3-8b"``): its
    tokenizer and its chat format's ``entry_overhead`` are then the
    defaults.
    ``start_on="human"`` (or ``"user"``) makes the kept messages begin on a
    user turn; ``include_system`` keeps a first system message whatever
    happens. Counted as ctxpack renders the conversation: each message as
    ``[role] content``, joined by blank lines, plus ``entry_overhead`` per
    message. Not supported (an error, never ignored): ``strategy="first"``,
    ``allow_partial``, ``end_on`` and ``text_splitter``."""
    if strategy != "last":
        raise ValueError("strategy: ctxpack keeps the newest messages ('last') only")
    if allow_partial:
        raise ValueError("allow_partial: ctxpack keeps or drops a message whole")
    if callable(token_counter):
        raise TypeError("token_counter: ctxpack counts exactly with its own tokenizers; "
                        "give 'o200k-base', 'cl100k-base' or Tokenizer.chars_per_token(n)")
    # Checked here, so that a mistake names the argument the caller wrote
    # (`max_tokens`), not the request field it becomes (`request.budget`).
    for name, tokens in (("max_tokens", max_tokens), ("entry_overhead", entry_overhead)):
        if tokens is None and name == "entry_overhead":
            continue
        if type(tokens) is not int or not 0 <= tokens <= _U32_MAX:
            raise TypeError(f"`{name}`: expected a whole number of tokens up to {_U32_MAX}, got {tokens!r}")
    if model is not None and not isinstance(model, str):
        raise TypeError(f"`model`: expected a model's name, got {model!r}")
    if token_counter is None and model is None:
        token_counter = "o200k-base"
    if token_counter is not None:
        encode(token_counter, ["ref", "Tokenizer"], "token_counter")
    starts = [start_on] if isinstance(start_on, str) else list(start_on or [])
    if any(s not in ("human", "user") for s in starts):
        raise ValueError(f"start_on: only a user turn ('human') can begin the kept messages, got {start_on!r}")
    messages = list(messages)
    head: list[Any] = []
    system = ""
    if include_system and messages and conversation(messages[:1])[0].role == Role.SYSTEM:
        head, messages = messages[:1], messages[1:]
        system = conversation(head)[0].content
    request = AssembleRequest(
        conversation=conversation(messages), budget=max_tokens, tokenizer=token_counter,
        model=model, system_prompt=system, entry_overhead=entry_overhead,
        conversation_start="user-turn" if starts else "any-turn",
    )
    try:
        pack = (builder or Builder()).assemble(request)
    except Exception as e:
        # A refusal of a field filled from an argument names the argument
        # the caller wrote (`max_tokens`, not `request.budget`).
        error = e.failure.error if isinstance(e, AssemblyFailed) else None
        field = getattr(error.value, "field", None) if error is not None else None
        if error is not None and error.tag == "invalid-field" and field in _ARGUMENTS:
            raise ValueError(f"`{_ARGUMENTS[field]}`: {error.value.message}") from None
        raise
    return head + kept(pack, messages)
