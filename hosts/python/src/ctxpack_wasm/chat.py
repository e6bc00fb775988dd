"""The chat messages you already have, in and out of ctxpack.

In: OpenAI-style chat messages (dicts with ``role``, ``content`` as a
string or a list of text parts, ``tool_calls``, ``tool_call_id``),
messages in Anthropic's blocks (``text``, ``thinking``, ``tool_use``,
``tool_result``) and LangChain messages (``langchain_core.messages``), as a request's
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

import hashlib
import inspect
import json
import re
import unicodedata
from typing import Any, Callable, Iterable, Literal, Optional, Sequence, TypeGuard, Union

from . import AssemblyFailed, Builder, explain_reason
from . import _images
from ._codec import encode
from .types import AssembleRequest, CachePrefix, ContextPack, ConversationTurn, Role, Tokenizer

__all__ = [
    "conversation",
    "kept",
    "to_openai",
    "to_anthropic",
    "to_langchain",
    "to_dicts",
    "cached_prefix",
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
    text, calls, answers = _content(content, where)
    if calls or answers:
        kind = "tool_use" if calls else "tool_result"
        raise TypeError(f"`{where}.content`: a {kind!r} block belongs in a conversation's message")
    return text


#: Anthropic's blocks and LangChain's standard blocks that carry a
#: message's text, by the key that holds it (a model's thinking is sent
#: back as it was given, and charged so).
_TEXT_BLOCKS = {"text": "text", "thinking": "thinking", "reasoning": "reasoning"}


def _content(content: Any, where: str, images: Optional[list[tuple[dict[str, Any], str]]] = None
             ) -> tuple[str, list[tuple[str, str, str]], list[str]]:
    """A message's content as the turn holds it: its text (text parts and
    blocks, a tool result's content, one per line), the tool calls its
    ``tool_use`` blocks make (id, name, arguments) and the calls its
    ``tool_result`` blocks answer, by id; its image parts, with where they
    are, added to ``images`` when it is given. Any other part is refused,
    naming it: ctxpack would silently lose it."""
    if content is None:
        return "", [], []
    if isinstance(content, str):
        return content, [], []
    if not isinstance(content, list):
        raise TypeError(f"`{where}.content`: expected a string or a list of content blocks, "
                        f"got {type(content).__name__}")
    texts: list[str] = []
    calls: list[tuple[str, str, str]] = []
    answers: list[str] = []
    for j, part in enumerate(content):
        at = f"{where}.content[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if isinstance(part, str):
            texts.append(part)
        elif kind in _TEXT_BLOCKS and isinstance(part.get(_TEXT_BLOCKS[kind]), str):
            texts.append(part[_TEXT_BLOCKS[kind]])
        elif kind in ("tool_use", "tool_call"):
            # Anthropic's `tool_use` (its `input`), LangChain's standard
            # `tool_call` (its `args`).
            cid, name = part.get("id"), part.get("name")
            if not isinstance(cid, str) or not isinstance(name, str):
                raise TypeError(f"`{at}`: a {kind!r} block needs its call's `id` and `name`")
            args = part.get("input" if kind == "tool_use" else "args", {})
            calls.append((cid, name, args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)))
        elif images is not None and _images.is_image(part):
            images.append((part, at))
        elif kind == "tool_result":
            answered = part.get("tool_use_id")
            if not isinstance(answered, str):
                raise TypeError(f"`{at}.tool_use_id`: a tool result answers a call by its id")
            answers.append(answered)
            texts.append(_text(part.get("content"), at))
        else:
            shown = kind if kind is not None else type(part).__name__
            raise TypeError(f"`{at}`: a {shown!r} part is not carried: ctxpack packs text, images, tool calls "
                            "and their results (text, image, tool_use, tool_result, thinking blocks)")
    return "\n".join(texts), calls, answers


def _calls(m: Any, blocks: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The tool calls an assistant message makes: (id, name, arguments),
    from its ``tool_calls`` and from its content's ``tool_use`` blocks
    (``blocks``; LangChain gives a call both ways, once)."""
    if isinstance(m, dict):
        out = []
        for j, c in enumerate(m.get("tool_calls") or []):
            if not isinstance(c, dict) or not isinstance(c.get("id"), str) or not c["id"]:
                raise TypeError(f"`tool_calls[{j}].id`: a tool call needs its id (its results answer it by the id)")
            f = c.get("function") or {}
            out.append((c["id"], f.get("name", ""), f.get("arguments", "")))
    else:
        calls = getattr(m, "tool_calls", None) or []
        for j, c in enumerate(calls):
            if not isinstance(c.get("id"), str) or not c["id"]:
                raise TypeError(f"`tool_calls[{j}].id`: a tool call needs its id (its results answer it by the id)")
        out = [(c["id"], c["name"], json.dumps(c.get("args", {}), ensure_ascii=False)) for c in calls]
    if not blocks:
        return out
    made = {cid for cid, _, _ in out}
    return out + [c for c in blocks if c[0] not in made]


def conversation(messages: Iterable[Any], *, model: Optional[str] = None,
                 image_tokens: Union[None, int, Callable[[dict[str, Any]], int]] = None) -> list[ConversationTurn]:
    """``messages`` as a request's conversation, one turn per message, in
    order. An assistant message's tool calls are written into its text
    (``[tool call] name(arguments)``: the model is charged for them) and
    its results share its first call's id, so the call and every result
    are kept or dropped together. A message's images are charged with it
    (its ``attached_tokens``) as ``model``'s provider bills them (OpenAI's
    rule when no model is named), or as ``image_tokens`` gives them."""
    return _conversation(messages, 0, _images.pricer(model, image_tokens))


#: What a message whose content is a string holds besides its text.
_NONE: list[Any] = []


def _conversation(messages: Iterable[Any], offset: int,
                  price: Optional[_images.Pricer] = None) -> list[ConversationTurn]:
    """:func:`conversation` of messages that begin at ``offset`` in the
    caller's list (a mistake names the message by its place there), their
    images priced by ``price`` (OpenAI's rule when none)."""
    price = price or _images.pricer(None, None)
    turns: list[ConversationTurn] = []
    group: dict[str, str] = {}
    for i, m in enumerate(messages, offset):
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
        if content.__class__ is str:
            text, blocks, answers, images = content, _NONE, _NONE, _NONE
        else:
            images = []
            text, blocks, answers = _content(content, f"messages[{i}]", images)
        call_id: Optional[str] = None
        if role == "assistant":
            try:
                calls = _calls(m, blocks)
            except TypeError as e:
                raise TypeError(f"`messages[{i}].{str(e)[1:]}") from None
            if calls:
                call_id = calls[0][0]
                for cid, _, _ in calls:
                    group[cid] = call_id
                text = "\n".join([text] * bool(text) + [f"[tool call] {n}({a})" for _, n, a in calls])
        elif blocks:
            raise TypeError(f"`messages[{i}].content`: only an assistant message makes tool calls "
                            f"(a {role} message has a 'tool_use' block)")
        elif role == "tool":
            answered = m.get("tool_call_id") if isinstance(m, dict) else getattr(m, "tool_call_id", None)
            if not isinstance(answered, str) or not answered:
                raise TypeError(f"`messages[{i}].tool_call_id`: a tool message answers a call by its id")
            call_id = group.get(answered, answered)
        elif answers:
            # Anthropic's results come in a user message of `tool_result`
            # blocks: a tool turn of the call's unit (it never begins the
            # kept conversation, which would part it from its call).
            if role != "user":
                raise TypeError(f"`messages[{i}].content`: a {role} message cannot hold a 'tool_result' block")
            role, call_id = "tool", group.get(answers[0], answers[0])
        attached = sum(price(part, at) for part, at in images) if images else None
        turns.append(ConversationTurn(role=role, content=text, tool_call_id=call_id,  # type: ignore[arg-type]
                                      attached_tokens=attached))
    return turns


def _kept_turns(pack: ContextPack) -> list[int]:
    """The indices of the request's turns the pack kept, oldest first."""
    return [int(e.id[5:]) for e in pack.entries
            if e.section == "conversation-state" and e.id.startswith("turn-")]


def kept(pack: ContextPack, messages: Sequence[Any]) -> list[Any]:
    """The messages of ``messages`` (those the pack's conversation was made
    from, by :func:`conversation`) that the pack kept, unchanged — but a
    tool result its compaction cleared (``pack.compaction.cleared``), a
    copy whose result is the placeholder the pack sends."""
    _is_pack(pack, "kept")
    # A compacted conversation's summary stands in the place of a turn.
    made_from = sum(e.run.count if e.run is not None else 1 for e in pack.snapshot.entries
                    if e.section == "conversation-state"
                    and (e.id.startswith("turn-") or e.id == "conversation-summary"))
    if len(messages) != made_from:
        raise ValueError(f"`messages`: the pack's conversation was made from {made_from} messages, got "
                         f"{len(messages)}: give the messages it was made from")
    return _kept(pack, messages)


def _is_pack(pack: Any, called: str) -> None:
    """Refuses what is not a pack, naming it (the arguments swapped)."""
    if not isinstance(pack, ContextPack):
        raise TypeError(f"`pack`: expected the pack Builder.assemble gave, got {type(pack).__name__} "
                        f"({called}(pack, messages))")


def _kept(pack: ContextPack, messages: Sequence[Any]) -> list[Any]:
    """:func:`kept`, ``messages`` known to be the pack's."""
    indices = _kept_turns(pack)
    c = pack.compaction
    if c is None or c.cleared <= c.turns:
        return [messages[i] for i in indices]
    # The pack's own message for each kept turn, in order.
    sent = [m for slot, m in zip(_slots(pack), pack.messages) if slot is None]
    return [_cleared(messages[i], m.content) if c.turns <= i < c.cleared and _role(m) == "tool" else messages[i]
            for i, m in zip(indices, sent)]


def _role(m: Any) -> str:
    return str(getattr(m.role, "value", m.role))


def _cleared(m: Any, text: str) -> Any:
    """A copy of the tool result ``m`` with ``text`` for its result: each
    ``tool_result`` block's content, in Anthropic's blocks."""
    blocks = _blocks(m)
    if blocks is not None:
        return _with_content(m, [{**b, "content": text} if isinstance(b, dict) and b.get("type") == "tool_result"
                                 else b for b in blocks])
    return _with_content(m, text)


def _system_kept(pack: ContextPack, messages: Sequence[Any]) -> None:
    """Raises, saying why, when ``messages`` begin with a system message
    the pack left out: a conversation's turns give way to the budget, the
    oldest first, and an answer without its instructions is rarely what
    was meant (``kept`` gives the pack's choice as it is)."""
    if not messages or 0 in _kept_turns(pack) or conversation(messages[:1])[0].role != Role.SYSTEM:
        return
    # The reason's name alone: its numbers may be a run's of several turns.
    why = next((explain_reason(e.reason.tag) for e in pack.snapshot.entries
                if e.id == "turn-0" and e.section == "conversation-state"), "not kept.")
    raise ValueError(f"`messages[0]`, the system message, was left out of the pack: {why} Give it as the "
                     "request's system_prompt to keep it (the assembly then fails, saying so, if it alone is "
                     "over the budget), or take kept(pack, messages) as it is")


def _slots(pack: ContextPack) -> list[Optional[str]]:
    """The pack's messages in order: a system message's content, or
    ``None`` for a kept turn (in the order of :func:`_kept_turns`). The
    entries say which is which: a system message begins the pack, follows
    a turn, or passes from L0 to the other context (so the context goes
    after the conversation in a cache-first layout, before it otherwise)."""
    slots: list[Optional[str]] = []
    contents = iter(pack.messages)
    before = None
    for e in pack.entries:
        turn = e.section == "conversation-state" and e.id.startswith("turn-")
        l0 = e.layer == "l0"
        if turn:
            next(contents)
            slots.append(None)
        elif before is None or before == "turn" or (before == "l0" and not l0):
            slots.append(next(contents).content)
        before = "turn" if turn else "l0" if l0 else "context"
    return slots


def to_dicts(pack: ContextPack) -> list[dict[str, Any]]:
    """The pack's messages as plain dicts (``role``, ``content``, and
    ``tool_call_id`` when there is one): ``json.dumps`` takes them. A
    message charged for images (``attached_tokens``), which the pack holds
    no copy of, is refused rather than sent as its text alone."""
    _no_attached(pack, "to_dicts")
    out = []
    for m in pack.messages:
        d = {"role": str(m.role.value if isinstance(m.role, Role) else m.role), "content": m.content}
        if m.tool_call_id is not None:
            d["tool_call_id"] = m.tool_call_id
        out.append(d)
    return out


def _no_attached(pack: ContextPack, called: str) -> None:
    """Refuses a pack with a message charged for what it sends beside its
    text (its images), which the pack holds no copy of."""
    attached = next((i for i, m in enumerate(pack.messages) if m.attached_tokens is not None), None)
    if attached is not None:
        raise ValueError(f"this pack's message {attached} was charged {pack.messages[attached].attached_tokens} "
                         "tokens of what it sends beside its text (its images), which the pack holds no copy "
                         f"of: give the messages it was made from, {called}(pack, messages), to send them")


def _blocks(m: Any) -> Optional[list[Any]]:
    """The content blocks of a message given in Anthropic's shape (a
    list holding more than text parts), else ``None``."""
    content = m.get("content") if isinstance(m, dict) else getattr(m, "content", None)
    if isinstance(m, ConversationTurn) or not isinstance(content, list):
        return None
    plain = all(isinstance(p, str) or (isinstance(p, dict) and p.get("type") == "text") for p in content)
    return None if plain else content


def _openai_of(m: Any) -> list[dict[str, Any]]:
    """An original message as OpenAI's messages: itself, or, given in
    blocks (Anthropic's or LangChain's), an assistant message with its
    ``tool_use`` blocks as ``tool_calls`` and its text (a thinking block,
    which OpenAI does not take, left out), and a user message's
    ``tool_result`` blocks as tool messages, its text and images after
    them (images as ``image_url`` parts)."""
    blocks = _blocks(m) if isinstance(m, dict) or _is_langchain(m) else None
    if isinstance(m, dict) and blocks is None:
        return [m]
    if blocks is not None:
        role = _ROLES.get(str(m.get("role") if isinstance(m, dict) else m.type), "user")
        texts = [p if isinstance(p, str) else p["text"] for p in blocks
                 if isinstance(p, str) or p.get("type") == "text"]
        if role == "assistant":
            _, calls, _ = _content(blocks, "message", [])
            d: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts)}
            calls = _calls(m, calls)
            if calls:
                d["tool_calls"] = [{"id": cid, "type": "function", "function": {"name": n, "arguments": a}}
                                   for cid, n, a in calls]
            return [d]
        out: list[dict[str, Any]] = [
            {"role": "tool", "tool_call_id": p["tool_use_id"], "content": _text(p.get("content"), "message")}
            for p in blocks if isinstance(p, dict) and p.get("type") == "tool_result"]
        if any(_images.is_image(p) for p in blocks):
            parts = [_images.as_openai(p) if _images.is_image(p) else {"type": "text", "text": p if isinstance(p, str)
                     else p["text"]} for p in blocks
                     if _images.is_image(p) or isinstance(p, str) or p.get("type") == "text"]
            out.append({"role": role, "content": parts})
        elif texts or not out:
            out.append({"role": role, "content": "\n".join(texts)})
        return out
    if isinstance(m, ConversationTurn):
        d = {"role": m.role.value if isinstance(m.role, Role) else m.role, "content": m.content}
        if m.tool_call_id is not None and d["role"] == "tool":
            d["tool_call_id"] = m.tool_call_id
        return [d]
    from langchain_core.messages import convert_to_openai_messages  # the extra

    converted: list[dict[str, Any]] = convert_to_openai_messages([m])
    return converted


def to_openai(pack: ContextPack, messages: Optional[Sequence[Any]] = None) -> list[dict[str, Any]]:
    """OpenAI chat messages: the pack's system messages, then the kept
    conversation — the original messages when ``messages`` is given (tool
    calls intact; one given in Anthropic's blocks in OpenAI's shape, its
    ``tool_use`` blocks as ``tool_calls`` and its ``tool_result`` blocks as
    tool messages), otherwise the pack's own turns (refused when they hold
    tool calls, which only the originals can give back). Given messages
    that begin with a system message the pack left out, it raises saying
    why (here, in :func:`to_anthropic` and :func:`to_langchain`)."""
    return _to_openai(pack, messages, "to_openai")


def _to_openai(pack: ContextPack, messages: Optional[Sequence[Any]], called: str) -> list[dict[str, Any]]:
    """:func:`to_openai`, a refusal naming the function ``called``."""
    _is_pack(pack, called)
    if messages is None:
        if any(m.tool_call_id is not None for m in pack.messages):
            raise ValueError("this pack's conversation has tool calls, which it holds as text: "
                             f"give the messages it was made from, {called}(pack, messages), to "
                             "get them back as tool calls")
        _no_attached(pack, called)
        return to_dicts(pack)
    _system_kept(pack, messages)
    originals = iter(kept(pack, messages))
    return [d for slot in _slots(pack)
            for d in ([{"role": "system", "content": slot}] if slot is not None else _openai_of(next(originals)))]


def _prefix_hash(messages: Sequence[Any]) -> str:
    """The hash of a pack's first messages, as ``cache_prefixes`` hashes
    them: each message's role, tool-call id, attached tokens and content,
    each as its UTF-8 byte length, ``:`` and its bytes."""
    digest = hashlib.sha256()
    for m in messages:
        role = str(getattr(m.role, "value", m.role))
        attached = "" if m.attached_tokens is None else str(m.attached_tokens)
        for field in (role, m.tool_call_id or "", attached, m.content):
            data = field.encode()
            digest.update(f"{len(data)}:".encode() + data)
    return digest.hexdigest()


def cached_prefix(previous: ContextPack, pack: ContextPack) -> Optional[CachePrefix]:
    """What a provider's prompt cache could serve of ``pack`` after
    ``previous`` was sent: the longest of ``previous``'s cache prefixes
    (``snapshot.cache_prefixes``) that ``pack`` begins with byte for byte,
    or ``None``. Its ``tokens`` are the tokens served, where ``cacheable``
    (and where the breakpoints :func:`to_anthropic` marks reach it)."""
    _is_pack(previous, "cached_prefix")
    _is_pack(pack, "cached_prefix")
    for p in sorted(previous.snapshot.cache_prefixes, key=lambda p: p.messages, reverse=True):
        if p.messages <= len(pack.messages) and _prefix_hash(pack.messages[:p.messages]) == p.hash:
            return p
    return None


#: Anthropic's limits on cache breakpoints: at most 4 a request, and a
#: breakpoint finds an earlier turn's cache within 20 blocks before it.
_BREAKPOINTS, _LOOK_BACK = 4, 20
_EPHEMERAL = {"type": "ephemeral"}


def _breakpoints(pack: ContextPack) -> list[int]:
    """How many of the pack's messages precede each cache breakpoint: its
    stable and history prefixes (``snapshot.cache_prefixes``) that reach
    the fewest tokens the model's provider caches."""
    ends = [p.messages for p in pack.snapshot.cache_prefixes
            if p.cacheable and str(getattr(p.boundary, "value", p.boundary)) in ("stable", "history")]
    return sorted(set(ends))


def _takes_breakpoint(block: Any) -> TypeGuard[dict[str, Any]]:
    """Whether an Anthropic block can carry ``cache_control``: not a
    thinking block, not an empty text."""
    return isinstance(block, dict) and block.get("type") not in ("thinking", "redacted_thinking") \
        and not (block.get("type") == "text" and not block.get("text"))


def _mark(blocks: list[tuple[list[Any], int]], at: list[int], taken: int) -> None:
    """Puts ``cache_control`` on the blocks at ``at`` (indices into
    ``blocks``, each a list and a position in it), and, where a history
    breakpoint lies more than ``_LOOK_BACK`` blocks after the one before,
    on blocks every ``_LOOK_BACK`` back from it, so a turn that adds many
    blocks still finds the last turn's cache; at most ``_BREAKPOINTS`` in
    all, ``taken`` of them by the messages as given, the boundaries before
    the blocks between them. A block that cannot
    hold one (thinking, empty text) passes it to the one before."""
    rungs: list[int] = []
    before = -1
    for end in at:
        rung = end
        while rung - before > _LOOK_BACK and rung - _LOOK_BACK > before:
            rung -= _LOOK_BACK
            rungs.append(rung)
        before = end
    # The boundaries first, the latest first, then the rungs between them.
    room = max(0, _BREAKPOINTS - taken)
    wanted = [*sorted(at, reverse=True), *sorted(rungs, reverse=True)][:room]
    for k in wanted:
        while k >= 0:
            where, i = blocks[k]
            block = where[i]
            if _takes_breakpoint(block):
                if "cache_control" not in block:
                    where[i] = {**block, "cache_control": dict(_EPHEMERAL)}
                break
            k -= 1


def to_anthropic(pack: ContextPack, messages: Optional[Sequence[Any]] = None) -> dict[str, Any]:
    """Anthropic's Messages API shape: ``{"system": …, "messages": […]}``,
    the system text apart, tool calls as ``tool_use`` blocks and their
    results as ``tool_result`` blocks in a user turn, consecutive turns of
    one role merged; a message given in Anthropic's blocks keeps them as
    they are. Its first message must be the user's: a pack whose
    kept conversation does not begin so (``conversation_start="any-turn"``)
    is refused, saying so.

    Cache breakpoints (``cache_control``) mark the prefixes the next turn
    repeats — the system text, and the conversation that leads before what
    changes every turn — where they reach the model's fewest cacheable
    tokens (``snapshot.cache_prefixes``); the system text is then a list
    of one text block. At most 4 in all, counting any the messages
    carry."""
    system = ""
    out: list[dict[str, Any]] = []
    # Where each of the pack's messages ended: None for the system text,
    # else the message and block of ``out`` it ended in.
    ends: list[Optional[tuple[int, int]]] = []

    def add(role: str, block: Any) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].append(block)
        else:
            out.append({"role": role, "content": [block]})

    originals = iter(kept(pack, messages) if messages is not None else [None] * len(_kept_turns(pack)))
    converted = _to_openai(pack, messages, "to_anthropic")
    placed = False
    def ended() -> None:
        ends.append((len(out) - 1, len(out[-1]["content"]) - 1) if out else None)

    for slot in _slots(pack):
        if slot is not None:
            # The pack's first system message (L0) is the system text; the
            # other context is the next user turn's text, so the system
            # text stays the same turn after turn whatever was retrieved.
            converted = converted[1:]
            if out or placed:
                add("user", {"type": "text", "text": slot})
            else:
                system = "\n\n".join(filter(None, [system, slot]))
            placed = True
            ended()
            continue
        original = next(originals)
        blocks = _blocks(original) if original is not None else None
        if blocks is not None:
            # As given; LangChain may hold a call in `tool_calls` alone.
            kind = original.get("role") if isinstance(original, dict) else getattr(original, "type", None)
            role = "assistant" if _ROLES.get(str(kind)) == "assistant" else "user"
            for block in blocks:
                add(role, {"type": "text", "text": block} if isinstance(block, str)
                    else _images.as_anthropic(block) if _images.is_image(block) else block)
            used = {b.get("id") for b in blocks if isinstance(b, dict)}
            for cid, name, args in _calls(original, []) if role == "assistant" else []:
                if cid not in used:
                    add(role, {"type": "tool_use", "id": cid, "name": name, "input": json.loads(args or "{}")})
            converted = converted[len(_openai_of(original)):]
            ended()
            continue
        m, converted = converted[0], converted[1:]
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
        ended()
    if not out:
        raise ValueError("Anthropic's API needs at least one message; this pack kept none of the conversation")
    if out[0]["role"] != "user":
        raise ValueError("Anthropic's API needs the first message to be the user's; this pack's "
                         "conversation begins with an assistant turn (conversation_start='any-turn')")
    at = _breakpoints(pack)
    if not at:
        return {"system": system, "messages": out}
    head: list[Any] = [{"type": "text", "text": system}] if system else []
    # Every block in order, as a list and a position in it.
    blocks = [(head, 0)] * len(head) + [(m["content"], i) for m in out for i in range(len(m["content"]))]
    first = {id(m["content"]): sum(len(x["content"]) for x in out[:k]) + len(head) for k, m in enumerate(out)}

    def index(end: Optional[tuple[int, int]]) -> int:
        return len(head) - 1 if end is None else first[id(out[end[0]]["content"])] + end[1]

    taken = sum(1 for where, i in blocks if isinstance(where[i], dict) and "cache_control" in where[i])
    _mark(blocks, [index(ends[n - 1]) for n in at if 0 < n <= len(ends)], taken)
    return {"system": head or system, "messages": out}


def to_langchain(pack: ContextPack, messages: Optional[Sequence[Any]] = None) -> list[Any]:
    """LangChain messages (needs ``langchain_core``): the originals kept when
    ``messages`` is given, otherwise built from the pack's. For a pack made
    for a Claude model (``model="claude-…"``), the context after a turn is
    a user message rather than a system one (Anthropic takes system text
    only at the top), and the messages that end the prefixes the next turn
    repeats carry Anthropic's ``cache_control`` (their content then a list
    of blocks), as :func:`to_anthropic` marks them; the originals given are
    copied, never changed."""
    from langchain_core.messages import convert_to_messages  # the extra

    # Per pack message, the LangChain messages it becomes.
    if messages is not None and all(_is_langchain(m) for m in messages):
        _system_kept(pack, messages)
        originals = iter(kept(pack, messages))
        out = [[convert_to_messages([{"role": "system", "content": slot}])[0] if slot is not None
                else next(originals)] for slot in _slots(pack)]
    else:
        converted = _to_openai(pack, messages, "to_langchain")
        originals = iter(kept(pack, messages) if messages is not None else [None] * len(_kept_turns(pack)))
        out = []
        for slot in _slots(pack):
            n = 1 if slot is not None else len(_openai_of(o)) if (o := next(originals)) is not None else 1
            out.append(list(convert_to_messages(converted[:n])))
            converted = converted[n:]
    model = pack.snapshot.model
    if model is not None and model.profile.name.lower().startswith("claude"):
        # Anthropic takes system text only at the top (ChatAnthropic refuses
        # a system message after a turn): the context that follows a turn
        # is a user message, which ChatAnthropic merges into the next turn,
        # as to_anthropic makes it a text block of that turn.
        from langchain_core.messages import HumanMessage  # the extra

        spoken = False
        for k, slot in enumerate(_slots(pack)):
            if slot is not None and spoken:
                out[k] = [HumanMessage(content=[{"type": "text", "text": slot}])]
            spoken |= slot is None
        given = sum(1 for ms in out for m in ms for b in (m.content if isinstance(m.content, list) else [])
                    if isinstance(b, dict) and "cache_control" in b)
        for n in sorted(_breakpoints(pack), reverse=True)[:max(0, _BREAKPOINTS - given)]:
            _mark_langchain(out[:n])
    return [m for ms in out for m in ms]


def _mark_langchain(head: list[list[Any]]) -> None:
    """Puts ``cache_control`` on the last block of the last message in
    ``head`` that has one to take it, on a copy of that message."""
    for ms in reversed(head):
        for k in range(len(ms) - 1, -1, -1):
            m = ms[k]
            content = m.content if isinstance(m.content, list) else (
                [{"type": "text", "text": m.content}] if m.content else [])
            for i in range(len(content) - 1, -1, -1):
                b = content[i]
                if isinstance(b, str) and b:
                    b = {"type": "text", "text": b}
                if _takes_breakpoint(b):
                    if "cache_control" not in b:
                        content = [*content[:i], {**b, "cache_control": dict(_EPHEMERAL)}, *content[i + 1:]]
                        ms[k] = m.model_copy(update={"content": content})
                    return


_U32_MAX = 0xFFFF_FFFF


#: The request fields `trim_messages` fills from its arguments.
_ARGUMENTS = {"request.model": "model", "request.budget": "max_tokens", "request.tokenizer": "token_counter"}


def _counts_messages(token_counter: Any) -> bool:
    """Whether ``token_counter`` counts messages as LangChain's does: a
    function, or a chat model (``get_num_tokens_from_messages``)."""
    return hasattr(token_counter, "get_num_tokens_from_messages") or (
        callable(token_counter) and not isinstance(token_counter, (str, Tokenizer)))


def _list_counter(token_counter: Any) -> Callable[[list[Any]], Any]:
    """``token_counter`` as LangChain calls it: on a list of messages. A
    model counts with ``get_num_tokens_from_messages``; a function whose
    first parameter is annotated ``BaseMessage`` counts one message, and
    the list's count is the sum."""
    model_count = getattr(token_counter, "get_num_tokens_from_messages", None)
    if model_count is not None:
        return model_count  # type: ignore[no-any-return]
    try:
        first = next(iter(inspect.signature(token_counter).parameters.values()), None)
    except (TypeError, ValueError):  # a builtin without a signature
        first = None
    if first is not None and first.annotation is not inspect.Parameter.empty:
        # Written `BaseMessage`, or the string under `from __future__
        # import annotations` (which LangChain itself takes for a list).
        names = {"BaseMessage"}
        try:
            from langchain_core.messages import BaseMessage  # the extra

            one_message = first.annotation in (BaseMessage, *names)
        except ImportError:  # without LangChain, only the name
            one_message = first.annotation in names
        if one_message:
            return lambda messages: sum(token_counter(m) for m in messages)
    return token_counter  # type: ignore[no-any-return]


#: The blank line before a rendered message: where the whole rendered
#: conversation is cut back into its messages.
_BEFORE_MESSAGE = re.compile(r"\n\n(?=\[(?:user|assistant|system|tool)\] )")


def _written(text: str) -> str:
    """``text`` without what the core removes from every text it writes:
    control characters other than tab and line breaks, and tag
    characters. The drop-ins send it so, and the core's texts then differ
    from it only where it turned the opening bracket of a tag-like
    structure into ``(``, character for character."""
    if text.isprintable():
        return text
    return "".join(c for c in text if not (
        (unicodedata.category(c) == "Cc" and c not in "\t\n\r") or 0xE0000 <= ord(c) <= 0xE007F))


def _defused(text: str, written: str) -> bool:
    """Whether ``text`` is ``written`` as the core writes it: the same
    characters but where ``text`` has ``(`` for an opening bracket."""
    return len(text) == len(written) and all(a == b or a == "(" for a, b in zip(text, written))


class _CountedAsMessages:
    """A ``token_counter`` that counts messages, lent as the host's counter.

    The core asks for the count of texts: a message's content (what is
    sent), the system prompt and, for the flat text it records beside the
    messages, a message as it is rendered (``[role] content``), the blank
    line that joins two (never sent: no tokens) and the text around a
    join. Each is counted as the messages it stands for — the
    caller's own, as they were given —, the whole text as the list of its
    messages: it is cut before each message's header, and each part found
    by its text (the messages are sent as the core writes them, control
    characters removed), or where the core defused a tag-like structure
    in it, by its role and the rest of its characters. A text that is none
    of these (none is asked when nothing is cut) is counted as one user
    message holding it.

    A counter may add a count once per list (OpenAI's models add 3 for
    the reply's priming): that count, the empty list's, is ``base``, taken
    off every count here and off the budget once, so that counts add up
    as the list's do."""

    def __init__(self, token_counter: Any, messages: Sequence[Any], turns: Sequence[ConversationTurn],
                 system: Optional[Any]) -> None:
        self.count_list = _list_counter(token_counter)
        self.langchain = any(_is_langchain(m) for m in messages) or _is_langchain(system)
        # Each message by the texts the core writes it as (`turns` are
        # already `_written`), exactly; and by role ("" for a content
        # alone) and length, for a text the core defused.
        self.by_text: dict[str, Any] = {}
        self.by_length: dict[tuple[str, int], list[tuple[str, Any]]] = {}
        written: list[tuple[Any, str, str]] = [
            (m, str(t.role.value if isinstance(t.role, Role) else t.role), t.content)
            for m, t in zip(messages, turns)]
        if system is not None:
            written.insert(0, (system, "", _written(conversation([system])[0].content)))
        for m, role, content in written:
            if role:
                self.by_text.setdefault(f"[{role}] {content}", m)
            self.by_length.setdefault((role, len(content)), []).append((content, m))
        # The messages each content is sent as: one the core asks to count
        # is charged as the costliest of them (a counter may charge roles
        # apart: an empty AI message more than an empty human one).
        self.sharing: dict[str, list[Any]] = {}
        for m, role, content in written:
            self.by_text.setdefault(content, m)
            self.sharing.setdefault(content, []).append(m)
            if role:
                self.by_length.setdefault(("", len(content)), []).append((content, m))
        # The most parts one message's text is cut into.
        self.widest = 1 + max((len(_BEFORE_MESSAGE.findall(c)) for _, _, c in written), default=0)
        self.system = system
        self.counted: dict[str, dict[int, int]] = {}
        self.failure: Optional[BaseException] = None
        try:
            base = self.count_list([])
        except Exception:  # a counter that cannot count no messages adds nothing for them
            base = 0
        self.base: int = base if type(base) is int and base >= 0 else 0

    def __call__(self, _tokenizer: str, texts: list[str]) -> list[int]:
        try:
            return [self.count(t) for t in texts]
        except Exception as e:
            # Kept, so that trim_messages raises it as the caller's counter
            # raised it (the assembly only records a failed call).
            self.failure = e
            raise

    def count(self, text: str) -> int:
        # The blank line that joins two messages is never sent; a message
        # of whitespace is.
        if text == "\n\n" or (not text.strip() and self.message_of(text) is None):
            return 0
        shared = self.shared(text)
        if shared:
            return min(shared.values())
        return self._checked(self.count_list(self.messages_of(text))) - self.base

    def shared(self, content: str) -> dict[int, int]:
        """The count of each message that sends ``content``, by id, when
        several do (a counter may charge roles apart: an empty AI message
        more than an empty human one); empty when one does."""
        sharers = self.sharing.get(content, [])
        if len(sharers) < 2:
            return {}
        if content not in self.counted:
            self.counted[content] = {id(m): self._checked(self.count_list([m])) - self.base for m in sharers}
        return self.counted[content]

    def extra(self, m: Any, content: str) -> int:
        """What message ``m`` costs beyond its ``content``'s count (the
        least of those that send it), so that each is charged its own
        exactly: a turn's attached tokens; the system message's is taken
        off the budget (it is always kept)."""
        shared = self.shared(content)
        return shared[id(m)] - min(shared.values()) if shared else 0

    def _checked(self, n: Any) -> int:
        if type(n) is not int or n < 0:
            raise TypeError(f"`token_counter`: expected a whole number of tokens, got {n!r}")
        return max(n, self.base)

    def message_of(self, text: str) -> Any:
        """The message ``text`` renders, if one does."""
        found = self.by_text.get(text)
        if found is not None:
            return found
        header = re.match(r"\[(user|assistant|system|tool)\] ", text)
        role, body = (header.group(1), text[header.end():]) if header else ("", text)
        for content, m in self.by_length.get((role, len(body)), []):
            if _defused(body, content):
                return m
        return None

    def messages_of(self, text: str) -> list[Any]:
        """The messages ``text`` renders, in order (one made up when it
        renders none: a cut text)."""
        one = self.message_of(text)
        if one is not None:
            return [one]
        parts = _BEFORE_MESSAGE.split(text)
        # back[j]: where the last message of parts[:j] begins, and that
        # message (a message's content may hold what looks like a header).
        back: list[Optional[tuple[int, Any]]] = [(0, None)]
        back += [None] * len(parts)
        for i in range(len(parts)):
            if back[i] is None:
                continue
            for j in range(i + 1, min(len(parts), i + self.widest) + 1):
                m = self.message_of("\n\n".join(parts[i:j]))
                if m is not None and back[j] is None:
                    back[j] = (i, m)
        if back[len(parts)] is not None:
            out, j = [], len(parts)
            while j > 0:
                step = back[j]
                if step is None:  # cannot be: each step back was reached
                    break
                j, m = step
                out.append(m)
            return out[::-1]
        if self.langchain:
            from langchain_core.messages import HumanMessage  # the extra

            return [HumanMessage(content=text)]
        return [{"role": "user", "content": text}]


def _suffix(messages: Sequence[Any], max_tokens: int) -> int:
    """Where the newest messages begin that a cheap estimate (a token
    per eight characters, and one a message) puts at twice ``max_tokens``
    and more."""
    estimate, start = 0, len(messages)
    while start > 0 and estimate <= 2 * max_tokens + 64:
        start -= 1
        content = getattr(messages[start], "content", None) if not isinstance(messages[start], dict) \
            else messages[start].get("content")
        estimate += (len(content) if isinstance(content, str) else len(str(content))) // 8 + 1
    return start


def _stopped_by_budget(pack: ContextPack, sent: int) -> bool:
    """Whether the turns before the pack's kept conversation end, past
    those left out before the first user turn, at one left out over the
    budget: no older message could then be kept."""
    reasons: dict[int, str] = {}
    for e in pack.snapshot.entries:
        if e.id.startswith("turn-") and e.section == "conversation-state":
            first = int(e.id[5:])
            last = int(e.run.last_id[5:]) if e.run is not None else first
            reasons.update((t, e.reason.tag) for t in range(first, last + 1))
    kept_turns = _kept_turns(pack)
    before = (min(kept_turns) if kept_turns else sent) - 1
    while before >= 0 and reasons.get(before) == "before-user-turn":
        before -= 1
    return before >= 0 and reasons.get(before) == "over-budget"


def _trim_pack(sent: tuple[list[Any], int], head: list[Any], system: str, max_tokens: int, token_counter: Any,
               counting: dict[str, Any], starts: list[str], builder: Builder) -> ContextPack:
    """``sent`` (the messages, and where they begin in the caller's list)
    trimmed by the core, as :func:`trim_messages` asks."""
    tokenizer, model, entry_overhead = counting["tokenizer"], counting["model"], counting["entry_overhead"]
    messages, offset = sent
    turns = _conversation(messages, offset, counting["price"])
    counter, held = None, 0
    if token_counter is not None:
        # Sent as the core would write them, so that its texts can be told
        # back to the messages they came from (see _CountedAsMessages).
        # Images too: the counter counts a message with its images.
        turns = [ConversationTurn(role=t.role, content=_written(t.content), tool_call_id=t.tool_call_id)
                 for t in turns]
        system = _written(system)
        counter = _CountedAsMessages(token_counter, messages, turns, head[0] if head else None)
        # A content several messages send is counted as the least of them,
        # and each turn is charged the rest of its own beside it.
        turns = [ConversationTurn(role=t.role, content=t.content, tool_call_id=t.tool_call_id,
                                  attached_tokens=counter.extra(m, t.content) or None)
                 for m, t in zip(messages, turns)]
        # What the system message costs beyond its text's count, always sent.
        held = counter.extra(head[0], system) if head else 0
    request = AssembleRequest(
        conversation=turns, budget=max(max_tokens - counter.base - held, 0) if counter else max_tokens,
        tokenizer=tokenizer,
        model=model, system_prompt=system, entry_overhead=entry_overhead,
        conversation_start="user-turn" if starts else "any-turn", form="messages",
        # As LangChain's trim does, the newest turns that fit, turn by turn:
        # not the steps of a cache-first layout.
        layout="context-first",
    )
    try:
        pack = builder.assemble(request, counter=counter)
    except Exception as e:
        if counter is not None and counter.failure is not None:
            raise counter.failure from None
        # A refusal of a field filled from an argument names the argument
        # the caller wrote (`max_tokens`, not `request.budget`).
        error = e.failure.error if isinstance(e, AssemblyFailed) else None
        field = getattr(error.value, "field", None) if error is not None else None
        if error is not None and error.tag == "invalid-field" and field in _ARGUMENTS:
            raise ValueError(f"`{_ARGUMENTS[field]}`: {error.value.message}") from None
        if error is not None and error.tag == "host-failed" and error.value.capability == "counter.count-tokens" \
                and counter is None:
            raise ValueError(f"`token_counter`: {model!r} is counted by its provider: give token_counter= a "
                             "function of messages or a chat model that counts as it does (a LangChain chat "
                             "model's get_num_tokens_from_messages)") from None
        # The system message kept with include_system is alone over it.
        if error is not None and error.tag == "mandatory-over-budget" and head:
            need = error.value.mandatory_tokens + (counter.base + held if counter else 0)
            raise ValueError(
                f"`max_tokens`: the system message alone is {need} tokens as counted, over max_tokens "
                f"({max_tokens}); ctxpack never goes over max_tokens (LangChain's trim_messages keeps "
                "it anyway): raise max_tokens, or leave include_system off") from None
        raise
    return pack


def _counter_of(token_counter: Any, counting: dict[str, Any], builder: Optional[Builder]) -> Callable[[list[Any]], int]:
    """A count of a list of messages as the trim counts it: the caller's
    counter (LangChain's), or each message as it is sent — its content
    and overhead — by the core."""
    if token_counter is not None:
        count_list = _list_counter(token_counter)

        def count(ms: list[Any]) -> int:
            n = count_list(ms)
            if type(n) is not int or n < 0:
                raise TypeError(f"`token_counter`: expected a whole number of tokens, got {n!r}")
            return n
        return count
    return lambda ms: (_counted(_conversation(ms, 0, counting["price"]), counting, builder).snapshot.message_tokens
                       if ms else 0)


def _lines(text: str) -> list[str]:
    """LangChain's default ``text_splitter``: lines, each with its line break."""
    splits = text.split("\n")
    return [s + "\n" for s in splits[:-1]] + splits[-1:]


def _splitter(text_splitter: Any) -> Callable[[str], list[str]]:
    """``text_splitter`` as a function of a text: a LangChain
    ``TextSplitter`` (its ``split_text``) or a function; lines when none."""
    if text_splitter is None:
        return _lines
    split = getattr(text_splitter, "split_text", None)
    if callable(split):
        return split  # type: ignore[no-any-return]
    if callable(text_splitter):
        return text_splitter  # type: ignore[no-any-return]
    raise TypeError(f"`text_splitter`: expected a function of a text or a LangChain TextSplitter, "
                    f"got {type(text_splitter).__name__}")


def _with_content(m: Any, content: Any) -> Any:
    """A copy of ``m`` holding ``content``."""
    if isinstance(m, dict):
        return {**m, "content": content}
    if isinstance(m, ConversationTurn):
        return ConversationTurn(role=m.role, content=content, tool_call_id=m.tool_call_id)
    copy = m.model_copy(deep=True)
    copy.content = content
    return copy


def _partial(m: Any, kept: list[Any], room: int, count: Callable[[list[Any]], int],
             split: Callable[[str], list[str]], keep_end: bool) -> Optional[Any]:
    """``allow_partial``: the most of message ``m`` that fits in ``room``
    beside ``kept``, as LangChain's trim cuts it — whole blocks of a list
    content first (those at the end when ``keep_end``, as the newest
    messages are kept, else those at the start), then the splits of its
    text; ``None`` when nothing of it fits. A message of a tool call's
    unit is never cut (its call or results would be parted)."""
    if conversation([m])[0].tool_call_id is not None:
        return None
    content = m.get("content") if isinstance(m, dict) else m.content
    text = content
    if isinstance(content, list):
        for k in range(len(content) - 1, 0, -1):
            cut = _with_content(m, content[len(content) - k:] if keep_end else content[:k])
            if count([cut, *kept] if keep_end else [*kept, cut]) <= room:
                return cut
        # Then, as LangChain's, the text of the one block left (the last
        # when the end is kept), if it is text.
        last = content[-1:] if keep_end else content[:1]
        text = next((b if isinstance(b, str) else b.get("text") for b in last
                     if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")), None)
    if not isinstance(text, str) or not text:
        return None
    splits = split(text)
    if not isinstance(splits, list) or not all(isinstance(t, str) for t in splits):
        raise TypeError("`text_splitter`: expected a list of texts")
    base = count(kept)

    def taken(k: int) -> Any:
        return _with_content(m, "".join(splits[len(splits) - k:] if keep_end else splits[:k]))
    low, high = 0, len(splits)
    while low < high:
        mid = (low + high + 1) // 2
        if base + count([taken(mid)]) <= room:
            low = mid
        else:
            high = mid - 1
    return taken(low) if low > 0 else None


def _first(messages: list[Any], max_tokens: int, token_counter: Any, counting: dict[str, Any],
           end_on: Any, builder: Optional[Builder], split: Optional[Callable[[str], list[str]]]) -> list[Any]:
    """``strategy="first"``: the longest run of the oldest messages whose
    count is within ``max_tokens``, as LangChain's, a tool call never
    apart from its results (the run ends before a call whose results do
    not all fit), a result whose call is not before it never kept, then
    cut back to the last message of ``end_on``'s types. A counter of
    messages counts each run it weighs, as LangChain's does; a tokenizer
    counts each message as it is sent, in one pass of the core."""
    turns = _conversation(messages, 0, counting["price"])
    # Where a run may end: not inside a tool call's unit.
    last_of: dict[str, int] = {}
    for i, t in enumerate(turns):
        if t.tool_call_id is not None:
            last_of[t.tool_call_id] = i
    ends = [True] * (len(turns) + 1)
    orphan = [False] * len(turns)
    opened: set[str] = set()
    for i, t in enumerate(turns):
        cid = t.tool_call_id
        if cid is None:
            continue
        if t.role == Role.TOOL and cid not in opened:
            orphan[i] = True
            continue
        opened.add(cid)
        for k in range(i + 1, last_of[cid] + 1):
            ends[k] = False
    if token_counter is not None:
        count_list = _list_counter(token_counter)

        def count(k: int) -> int:
            n = count_list([m for m, o in zip(messages[:k], orphan) if not o])
            if type(n) is not int or n < 0:
                raise TypeError(f"`token_counter`: expected a whole number of tokens, got {n!r}")
            return n
    else:
        # Each message as it is sent: one pass of the core counts them all.
        pack = _counted(turns, counting, builder)
        tokens = {int(e.id[5:]): e.tokens for e in pack.entries if e.id.startswith("turn-")}
        overhead = (pack.snapshot.message_tokens - sum(tokens.values())) // max(len(tokens), 1)
        prefix = [0]
        for i in range(len(turns)):
            prefix.append(prefix[-1] + (tokens[i] + overhead if i in tokens else 0))

        def count(k: int) -> int:
            return prefix[k]
    # The longest run within the budget (counts grow with the run).
    low, high = 0, len(messages)
    if count(high) > max_tokens:
        high -= 1
        while low < high:
            mid = (low + high + 1) // 2
            if count(mid) <= max_tokens:
                low = mid
            else:
                high = mid - 1
    idx = high
    while idx > 0 and not ends[idx]:
        idx -= 1
    cut = None
    if split is not None and idx < len(messages):
        # allow_partial: the start of the next message, as much as fits.
        whole = [m for m, o in zip(messages[:idx], orphan) if not o]
        cut = _partial(messages[idx], whole, max_tokens, _counter_of(token_counter, counting, builder), split,
                       keep_end=False)
    if cut is not None and (end_on is None or _is_type(cut, end_on)):
        return [m for m, o in zip(messages[:idx], orphan) if not o] + [cut]
    # As LangChain's: cut back to the last message of end_on's types.
    while end_on is not None and idx > 0 and not _is_type(messages[idx - 1], end_on):
        idx -= 1
        while idx > 0 and not ends[idx]:
            idx -= 1
    return [m for m, o in zip(messages[:idx], orphan) if not o]


def _counted(turns: list[ConversationTurn], counting: dict[str, Any], builder: Optional[Builder]) -> ContextPack:
    """``turns`` assembled whole, each counted as the message it is sent
    as: the model's tokenizer and overhead taken from a first, empty
    assembly when ``counting`` names a model."""
    builder = builder or Builder()
    tokenizer, overhead = counting["tokenizer"], counting["entry_overhead"]
    if counting["model"] is not None:
        probe = builder.assemble(AssembleRequest(model=counting["model"], tokenizer=tokenizer,
                                                 entry_overhead=overhead, form="messages"))
        tokenizer = probe.snapshot.tokenizer
        if overhead is None and probe.snapshot.model is not None:
            overhead = probe.snapshot.model.profile.message_overhead
    return builder.assemble(AssembleRequest(
        conversation=turns, budget=_U32_MAX, tokenizer=tokenizer, entry_overhead=overhead,
        conversation_start="any-turn", form="messages"))


#: LangChain's message types, by the roles a dict or a turn gives (read
#: as the conversation reads them, `_ROLES`).
_TYPES = {name: {"user": "human", "assistant": "ai"}.get(role, role) for name, role in _ROLES.items()}


def _type_of_class(cls: type) -> Optional[str]:
    """A LangChain message class's type (``HumanMessage``: ``"human"``)."""
    field = getattr(cls, "model_fields", {}).get("type")
    default = getattr(field, "default", None)
    return default if isinstance(default, str) else None


def _is_type(message: Any, types: Any) -> bool:
    """LangChain's ``_is_message_type``: ``message`` is one of ``types``
    (type names, ``"human"``, ``"ai"``, …, or message classes)."""
    types = [types] if isinstance(types, (str, type)) else list(types)
    if isinstance(message, dict):
        kind = _TYPES.get(str(message.get("role")))
    elif isinstance(message, ConversationTurn):
        kind = _TYPES.get(message.role.value if isinstance(message.role, Role) else str(message.role))
    else:
        kind = getattr(message, "type", None)
    return kind in [t for t in types if isinstance(t, str)] or isinstance(
        message, tuple(t for t in types if isinstance(t, type)))


def trim_messages(
    messages: Optional[Sequence[Any]] = None,
    *,
    max_tokens: int,
    token_counter: Any = None,
    strategy: Literal["last", "first"] = "last",
    allow_partial: bool = False,
    end_on: Optional[Any] = None,
    start_on: Optional[Union[str, Sequence[str]]] = None,
    include_system: bool = False,
    text_splitter: Optional[Any] = None,
    entry_overhead: Optional[int] = None,
    model: Optional[str] = None,
    image_tokens: Union[None, int, Callable[[dict[str, Any]], int]] = None,
    builder: Optional[Builder] = None,
) -> Any:
    """``langchain_core.messages.trim_messages``, packed by ctxpack: the
    newest messages that fit ``max_tokens``, returned unchanged and in
    order, a tool call never apart from its results. Without
    ``messages``, a LangChain ``Runnable`` that trims what it is given
    (needs ``langchain_core``). ``token_counter`` is a tokenizer ctxpack
    counts exactly (``"o200k-base"``, the default, ``"cl100k-base"``,
    ``Tokenizer.named(file)``, ``Tokenizer.chars_per_token(n)``), or
    LangChain's (below; ``"approximate"`` is its
    ``count_tokens_approximately``). ``model`` names
    the model the messages are for (``"gpt-4o"``, ``"qwen3-8b"``): its
    tokenizer and its chat format's ``entry_overhead`` are then the
    defaults.
    ``token_counter`` may also be LangChain's: a function counting a list
    of messages (or, annotated ``BaseMessage``, one message), or a chat
    model with ``get_num_tokens_from_messages``. It is called with your
    messages as you gave them, and the kept messages are those whose list
    it counts within ``max_tokens`` (the system message, with
    ``include_system``, among them); ``entry_overhead`` is then 0 unless
    given, since such a counter counts a message's overhead itself.
    ``end_on`` drops the messages after the last one of its types (type
    names, ``"human"``, ``"ai"``, …, or message classes) before trimming,
    as LangChain does; ``start_on="human"`` (or ``"user"``) makes the kept
    messages begin on a user turn; ``include_system`` keeps a first system
    message whatever happens. ``text_splitter`` is used, as LangChain uses
    it, only with ``allow_partial``. Counted by a tokenizer as the
    messages are sent: each message's content plus ``entry_overhead``
    (no role header, no separator: neither is sent), and every token of
    ``max_tokens`` is used that a next-older message fits in.
    ``strategy="first"`` keeps the oldest messages instead, as
    LangChain's does (without ``start_on`` or ``include_system``, which
    it refuses too). ``allow_partial`` then cuts the next message as
    LangChain's does — the newest end of the next-older one (the oldest
    start of the next one with ``strategy="first"``), whole blocks of a
    list content first, then the splits of ``text_splitter`` (a function
    or a LangChain ``TextSplitter``; lines by default), as much as fits —
    except a message of a tool call's unit, which is never cut."""
    if messages is None:
        from langchain_core.runnables import RunnableLambda  # the extra

        options = dict(max_tokens=max_tokens, token_counter=token_counter, strategy=strategy,
                       allow_partial=allow_partial, end_on=end_on, start_on=start_on,
                       include_system=include_system, text_splitter=text_splitter,
                       entry_overhead=entry_overhead, model=model, image_tokens=image_tokens, builder=builder)

        def trim(given: Any) -> Any:
            # A prompt's value (`prompt | trimmer`) gives its messages.
            return trim_messages(given.to_messages() if hasattr(given, "to_messages") else given, **options)
        return RunnableLambda(trim).with_config({"run_name": "trim_messages"})
    if isinstance(token_counter, str) and token_counter == "approximate":
        try:
            from langchain_core.messages.utils import count_tokens_approximately  # the extra
        except ImportError:
            raise ValueError("`token_counter`: 'approximate' is LangChain's count_tokens_approximately, "
                             "which needs langchain-core; or give Tokenizer.chars_per_token(4)") from None
        token_counter = count_tokens_approximately
    if isinstance(token_counter, (dict, list, tuple, set)):
        raise ValueError(f"`token_counter`: expected a tokenizer, a function of messages or a chat model, "
                         f"got a {type(token_counter).__name__}")
    if strategy not in ("last", "first"):
        raise ValueError(f"strategy: 'last' (the newest messages) or 'first' (the oldest), got {strategy!r}")
    if strategy == "first" and (start_on or include_system):
        # As LangChain's.
        raise ValueError(f"{'start_on' if start_on else 'include_system'}: only valid with strategy='last'")
    for name, flag in (("allow_partial", allow_partial), ("include_system", include_system)):
        if not isinstance(flag, bool):
            raise TypeError(f"`{name}`: expected True or False, got {flag!r}")
    split = _splitter(text_splitter) if allow_partial else None
    counts_messages = _counts_messages(token_counter)
    if counts_messages and entry_overhead is None:
        entry_overhead = 0
    # Checked here, so that a mistake names the argument the caller wrote
    # (`max_tokens`), not the request field it becomes (`request.budget`).
    for name, tokens in (("max_tokens", max_tokens), ("entry_overhead", entry_overhead)):
        if tokens is None and name == "entry_overhead":
            continue
        if type(tokens) is not int or not 0 <= tokens <= _U32_MAX:
            raise TypeError(f"`{name}`: expected a whole number of tokens up to {_U32_MAX}, got {tokens!r}")
    if model is not None and not isinstance(model, str):
        raise TypeError(f"`model`: expected a model's name, got {model!r}")
    tokenizer = Tokenizer.host("token_counter") if counts_messages else token_counter
    if tokenizer is None and model is None:
        tokenizer = "o200k-base"
    if tokenizer is not None and not counts_messages:
        encode(tokenizer, ["ref", "Tokenizer"], "token_counter")
    # A message's images, as its model's provider bills them (a counter of
    # messages counts them itself).
    price: _images.Pricer = (lambda part, where: 0) if counts_messages else _images.pricer(model, image_tokens)
    starts = [start_on] if isinstance(start_on, (str, type)) else list(start_on or [])
    # As LangChain's, a message class stands for its type.
    starts = [_type_of_class(s) if isinstance(s, type) else s for s in starts]
    if any(s not in ("human", "user") for s in starts):
        raise ValueError(f"start_on: only a user turn ('human') can begin the kept messages, got {start_on!r}")
    messages = list(messages)
    if strategy == "first":
        return _first(messages, max_tokens, token_counter if counts_messages else None,
                      dict(tokenizer=tokenizer, model=model, entry_overhead=entry_overhead, price=price), end_on,
                      builder, split)
    if end_on is not None:
        # As LangChain: the messages after the last of `end_on`'s types
        # are dropped first.
        while messages and not _is_type(messages[-1], end_on):
            messages.pop()
    head: list[Any] = []
    system = ""
    if include_system and messages and conversation(messages[:1])[0].role == Role.SYSTEM:
        head, messages = messages[:1], messages[1:]
        system = conversation(head)[0].content
    # Only the newest messages that could fit are converted and sent: a
    # suffix a cheap estimate puts well over the budget, grown until the
    # kept run ends at a turn left out over the budget (an older one then
    # cannot be kept either).
    start = _suffix(messages, max_tokens)
    builder = builder or Builder()
    counting = dict(tokenizer=tokenizer, model=model, entry_overhead=entry_overhead, price=price)
    while True:
        sent = messages[start:]
        # With allow_partial, the run LangChain's finds before start_on
        # cuts it (a message cut to fit may begin it).
        pack = _trim_pack((sent, start + len(head)), head, system, max_tokens, token_counter if counts_messages else None,
                          counting, [] if split else starts, builder)
        if start == 0 or _stopped_by_budget(pack, len(sent)):
            break
        start = max(0, len(messages) - 2 * len(sent))
    out = _kept(pack, sent)
    before = start + (min(_kept_turns(pack)) if out else len(sent)) - 1
    if split is not None and before >= 0:
        # allow_partial: the end of the next-older message, as much as
        # fits beside the kept ones (and the system message).
        count = _counter_of(token_counter if counts_messages else None, counting, builder)
        room = max_tokens - (count(head) if head else 0)
        cut = _partial(messages[before], out, room, count, split, keep_end=True)
        if cut is not None:
            out.insert(0, cut)
    if starts:
        # As LangChain's: the kept messages begin on a user turn even
        # when all of them fit (a leading system message goes, unless
        # include_system keeps it).
        while out and not _is_type(out[0], "human"):
            out.pop(0)
    return head + out
