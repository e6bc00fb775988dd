"""LangChain's messages in and out of ctxpack.

The chat itself — reading a provider's messages, charging them as sent,
what is kept, cache hints, LangChain's trim — is the core's, the same in
every host (``AssembleRequest.chat``, ``Builder.trim``). This module only
maps LangChain's objects to a provider's shape (OpenAI's) and back:

- :func:`chat`: messages — OpenAI-style dicts as they are, LangChain
  messages as OpenAI's — as a request's ``chat``;
- :func:`to_langchain`: a pack's request to send as LangChain messages,
  yours as you gave them (the same objects);
- :func:`trim_messages`: ``langchain_core.messages.trim_messages``, by the
  core, its counters and text splitters lent as the host's.

LangChain is an optional extra: nothing here imports it until a LangChain
message is given or asked for.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Literal, Optional, Sequence

from . import Builder, CtxpackError
from .types import Chat, ChatShape, ContextPack, Role, Tokenizer, TrimRequest, TrimStrategy

__all__ = ["chat", "to_langchain", "trim_messages"]

# LangChain's message types, as the roles a chat's turns have.
_ROLES: dict[str, Literal["system", "user", "assistant", "tool"]] = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant",
          "system": "system", "developer": "system", "tool": "tool"}


def _is_langchain(m: Any) -> bool:
    return not isinstance(m, dict) and hasattr(m, "type") and hasattr(m, "content")


# LangChain's plain message types, as OpenAI's roles.
_PLAIN = {"human": "user", "ai": "assistant", "system": "system"}


def _plain(m: Any) -> Optional[dict[str, Any]]:
    """A LangChain message of text alone as OpenAI's, its content the
    string it is (``convert_to_openai_messages`` makes a block of it, and
    costs a tenth of a trim of plain messages; the core charges and cuts
    the two alike); None for any other."""
    # The fields as pydantic holds them: an attribute a message lacks
    # costs an exception through pydantic's __getattr__.
    fields = getattr(m, "__dict__", None)
    role = _PLAIN.get(str(fields.get("type"))) if isinstance(fields, dict) else None
    if role is None or fields is None:
        return None
    content = fields.get("content")
    if (not isinstance(content, str) or fields.get("name") is not None or fields.get("additional_kwargs")
            or fields.get("tool_calls") or fields.get("invalid_tool_calls")):
        return None
    return {"role": role, "content": content}


def _openai(messages: Sequence[Any]) -> tuple[list[dict[str, Any]], list[int]]:
    """``messages`` as OpenAI's (LangChain's converted, their blocks kept as
    blocks), and for each, the index of the message it came from."""
    out: list[dict[str, Any]] = []
    origin: list[int] = []
    for i, m in enumerate(messages):
        plain = None if isinstance(m, dict) else _plain(m)
        if isinstance(m, dict):
            converted = [m]
        elif plain is not None:
            converted = [plain]
        elif _is_langchain(m):
            from langchain_core.messages import convert_to_openai_messages  # the extra

            converted = convert_to_openai_messages([m], text_format="block")
        else:
            raise TypeError(f"`messages[{i}]`: expected an OpenAI-style dict or a LangChain message, "
                            f"got {type(m).__name__}")
        out.extend(converted)
        origin.extend([i] * len(converted))
    return out, origin


Shape = Literal["openai-chat", "openai-responses", "anthropic", "gemini"]


def chat(messages: Sequence[Any], shape: Shape | ChatShape = "openai-chat") -> Chat:
    """``messages`` as a request's ``chat``: dicts in ``shape`` as they are,
    LangChain messages as OpenAI's (``shape`` then ``"openai-chat"``)."""
    messages = list(messages)
    if any(_is_langchain(m) for m in messages):
        converted, _ = _openai(messages)
        return Chat(shape="openai-chat", messages=converted)
    return Chat(shape=shape, messages=messages)


def to_langchain(pack: ContextPack, messages: Sequence[Any]) -> list[Any]:
    """The pack's request (``pack.chat``, made from ``messages`` by
    :func:`chat`) as LangChain messages: each of yours the pack kept, the
    same object (a copy where it carries a cache hint the pack added, or a
    result compaction cleared), and the pack's own as ``SystemMessage``
    (``HumanMessage`` where the model takes system text only at the top)."""
    from langchain_core.messages import HumanMessage, SystemMessage, convert_to_messages  # the extra

    if not isinstance(pack, ContextPack) or pack.chat is None:
        raise TypeError("`pack`: expected a pack assembled from a chat (its `chat` is the request to send)")
    messages = list(messages)
    converted, origin = _openai(messages)
    body = pack.chat.json()
    out: list[Any] = []
    if pack.chat.shape != "openai-chat":
        raise ValueError(f"`pack`: its chat is {pack.chat.shape}'s; LangChain's messages are OpenAI's (chat(messages))")
    for sent, source in zip(body["messages"], pack.chat.sources):
        if source is None:
            made = SystemMessage if sent.get("role") in ("system", "developer") else HumanMessage
            out.append(made(content=sent["content"]))
            continue
        original = messages[origin[source]]
        if out and out[-1] is original:
            continue  # one of yours that was several of OpenAI's
        if sent == converted[source] or not _is_langchain(original):
            out.append(original if sent == converted[source] else convert_to_messages([sent])[0])
        else:
            out.append(original.model_copy(update={"content": sent["content"]}))
    return out


def _type(t: Any) -> Role:
    """A LangChain message type or class as a chat's role."""
    if isinstance(t, type):
        field = getattr(t, "model_fields", {}).get("type")
        t = getattr(field, "default", None)
    role = _ROLES.get(t) if isinstance(t, str) else None
    if role is None:
        raise ValueError(f"{t!r} is not a message type ctxpack keeps ({', '.join(_ROLES)})")
    return Role(role)


def _roles(types: Any) -> list[Literal["system", "user", "assistant", "tool"] | Role]:
    if types is None:
        return []
    return [_type(t) for t in ([types] if isinstance(types, (str, type)) else types)]


def _list_counter(token_counter: Any) -> Callable[[list[Any]], int]:
    """``token_counter`` as LangChain calls it: on a list of messages."""
    count = getattr(token_counter, "get_num_tokens_from_messages", None)
    if count is not None:
        return count  # type: ignore[no-any-return]
    if not callable(token_counter):
        raise ValueError("'token_counter' expected to be a model that implements 'get_num_tokens_from_messages()' "
                         f"or a function. Received object of type {type(token_counter)}.")
    try:
        first = next(iter(inspect.signature(token_counter).parameters.values()), None)
    except (TypeError, ValueError):  # a builtin without a signature
        first = None
    if first is not None and first.annotation in ("BaseMessage",) or (
            first is not None and getattr(first.annotation, "__name__", None) == "BaseMessage"):
        return lambda ms: sum(token_counter(m) for m in ms)
    return token_counter  # type: ignore[no-any-return]


def _cut(m: Any, partial: Any) -> Any:
    """A copy of message ``m`` as the core cut it (``partial``)."""
    content: Any = m.get("content") if isinstance(m, dict) else m.content
    if partial.blocks is not None:
        b = partial.blocks
        content = content[b.first:b.first + b.count]
    else:
        content = partial.text
    if isinstance(m, dict):
        return {**m, "content": content}
    copy = m.model_copy(deep=True)
    copy.content = content
    return copy


def _lent_counter(token_counter: Any, messages: list[Any], origin: list[int]) -> Callable[..., list[int]]:
    """The user's counter of messages lent as the host's: each list of the
    core's (messages by index, a cut one) as the user's own objects, in
    order, counted as the counter counts a list."""
    count_list = _list_counter(token_counter)

    def count(_tokenizer: str, lists: list[Any]) -> list[int]:
        counts = []
        for lst in lists:
            at = {i: messages[origin[i]] for i in lst.messages}
            if lst.cut is not None:
                at[lst.cut.message] = _cut(messages[origin[lst.cut.message]], lst.cut)
            ordered, seen = [], set()
            for i in sorted(at):
                if id(at[i]) not in seen:
                    seen.add(id(at[i]))
                    ordered.append(at[i])
            n = count_list(ordered)
            if type(n) is not int or n < 0:
                raise TypeError(f"`token_counter`: expected a whole number of tokens, got {n!r}")
            counts.append(n)
        return counts

    return count


def _approximate() -> Any:
    try:
        from langchain_core.messages.utils import count_tokens_approximately  # the extra
    except ImportError:
        raise ValueError("`token_counter`: 'approximate' is LangChain's count_tokens_approximately, which "
                         "needs langchain-core; or give Tokenizer.chars_per_token(4)") from None
    return count_tokens_approximately


def _splitter(text_splitter: Any) -> Optional[Callable[[str], list[str]]]:
    if text_splitter is None:
        return None  # LangChain's default, lines, is the core's
    split = getattr(text_splitter, "split_text", None)
    if callable(split):
        return split  # type: ignore[no-any-return]
    if callable(text_splitter):
        return text_splitter  # type: ignore[no-any-return]
    raise TypeError(f"`text_splitter`: expected a function of a text or a LangChain TextSplitter, "
                    f"got {type(text_splitter).__name__}")


def trim_messages(
    messages: Optional[Sequence[Any]] = None,
    *,
    max_tokens: int,
    token_counter: Any = "o200k-base",
    strategy: Literal["last", "first"] = "last",
    allow_partial: bool = False,
    end_on: Any = None,
    start_on: Any = None,
    include_system: bool = False,
    text_splitter: Any = None,
    model: Optional[str] = None,
    builder: Optional[Builder] = None,
) -> Any:
    """``langchain_core.messages.trim_messages``, by ctxpack's core: the same
    arguments and messages, returned unchanged (a cut one a copy). Without
    ``messages``, a LangChain ``Runnable`` that trims what it is given.

    ``token_counter`` is LangChain's — a function of a list of messages
    (or of one, annotated ``BaseMessage``), a chat model's
    ``get_num_tokens_from_messages``, ``"approximate"`` —, called with your
    messages, in order, on every list it weighs; or a tokenizer ctxpack
    counts exactly (``"o200k-base"``, the default, ``"cl100k-base"``,
    ``Tokenizer.named(file)``), each message then counted as it is sent
    with ``model``'s overheads. Beyond LangChain's: a tool call is never
    kept apart from its results, and where nothing of the conversation
    would be kept (the newest message alone over ``max_tokens``), it
    raises saying so rather than returning nothing."""
    options = dict(max_tokens=max_tokens, token_counter=token_counter, strategy=strategy,
                   allow_partial=allow_partial, end_on=end_on, start_on=start_on,
                   include_system=include_system, text_splitter=text_splitter, model=model, builder=builder)
    if messages is None:
        from langchain_core.runnables import RunnableLambda  # the extra

        def trim(given: Any) -> Any:
            # A prompt's value (`prompt | trimmer`) gives its messages.
            return trim_messages(given.to_messages() if hasattr(given, "to_messages") else given, **options)
        return RunnableLambda(trim).with_config({"run_name": "trim_messages"})
    messages = list(messages)
    if isinstance(token_counter, str) and token_counter == "approximate":
        token_counter = _approximate()
    if isinstance(token_counter, str) and token_counter not in ("o200k-base", "cl100k-base"):
        raise ValueError(f"Invalid token_counter shortcut '{token_counter}'. Available shortcuts: 'approximate' "
                         "(and the tokenizers 'o200k-base', 'cl100k-base'; a model is named by `model`).")
    counted = isinstance(token_counter, (str, Tokenizer)) or (token_counter is None and model is not None)
    if not counted:
        _list_counter(token_counter)  # refused here, as LangChain refuses it
    split = _splitter(text_splitter)
    converted, origin = _openai(messages)
    request = TrimRequest(
        chat=Chat(shape="openai-chat", messages=converted), max_tokens=max_tokens, model=model,
        tokenizer=token_counter if counted else Tokenizer.host("token_counter"),
        strategy=TrimStrategy(strategy), include_system=include_system, start_on=_roles(start_on), end_on=_roles(end_on),
        allow_partial=allow_partial, split="host" if split is not None else "lines")
    counter = None if counted else _lent_counter(token_counter, messages, origin)
    try:
        trimmed = (builder or Builder()).trim(request, counter=counter, splitter=split)
    except CtxpackError as e:
        # Named as the caller wrote it: `max_tokens`, `messages[3]`.
        v = e.error.value
        if e.error.tag == "invalid-field" and v.field.startswith("trim."):
            v.field = v.field[5:].replace("chat.messages", "messages", 1)
            e.args = (str(e).replace("`trim.", "`", 1).replace("chat.messages", "messages", 1),)
        raise
    out: list[Any] = []
    for i in trimmed.kept:
        m = messages[origin[i]]
        if trimmed.partial is not None and trimmed.partial.message == i:
            m = _cut(m, trimmed.partial)
        if not out or out[-1] is not m:
            out.append(m)
    return out
