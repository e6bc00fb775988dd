"""Between the generated classes and the component's JSON.

The JSON spells the WIT's types in kebab-case (as the scenario files do):
a record is an object of its fields, an enum case a string, a variant's
case without a payload a string and one with a payload ``{"case": value}``.
Encoding checks every value against its WIT type and names the field of
one that does not fit (``request.conversation[0].role``), so a mistake is
a Python ``TypeError`` where it was made, not a refusal from inside.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from typing import Any, Callable


class _Unset:
    """A field left out: the core's default applies, or the core refuses
    the request naming the field."""

    _instance = None

    def __new__(cls) -> "_Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()


class Record:
    """A WIT record: a dataclass of its fields."""

    __slots__ = ()

    def to_json(self) -> dict:
        """The record as the component's JSON (a dict)."""
        return encode(self, ["ref", type(self).__name__], type(self).__name__.lower())

    @classmethod
    def from_json(cls, obj: Any):
        """The record from the component's JSON (a dict)."""
        return decode(obj, ["ref", cls.__name__])


class Variant:
    """A WIT variant: the case's name (``tag``, as the WIT spells it) and
    its payload (``value``, ``None`` for a case without one)."""

    __slots__ = ("tag", "value")

    def __init__(self, tag: str, value: Any = None) -> None:
        self.tag = tag
        self.value = value

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and (self.tag, self.value) == (other.tag, other.value)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.tag, repr(self.value)))

    def __repr__(self) -> str:
        if self.value is None:
            return f"{type(self).__name__}({self.tag!r})"
        return f"{type(self).__name__}({self.tag!r}, {self.value!r})"

    def to_json(self) -> Any:
        return encode(self, ["ref", type(self).__name__], type(self).__name__.lower())

    @classmethod
    def from_json(cls, obj: Any):
        return decode(obj, ["ref", cls.__name__])


_TABLES: list = []


class LazyList(Sequence):
    """A list read from the component's JSON whose items are made into
    classes when first looked at: a snapshot of a 10k-candidate pack has
    10k entries, and most callers send the pack and store the snapshot's
    JSON without reading them all. It compares equal to a list of the
    same items; ``list(x)`` makes a plain list."""

    __slots__ = ("_raw", "_decode", "_items")

    def __init__(self, raw: list, decode: Callable[[Any], Any]) -> None:
        self._raw = raw
        self._decode = decode
        self._items: list = [None] * len(raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self._raw)))]
        item = self._items[i]
        if item is None:
            item = self._items[i] = self._decode(self._raw[i])
        return item

    def __iter__(self):
        for i in range(len(self._raw)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, LazyList)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return repr(list(self))

    def raw(self) -> list:
        """The items as the component's JSON."""
        return self._raw


def register(schema: dict, decoders: dict) -> None:
    """The WIT's types, as `types.py` (generated) describes them: it calls
    this once when it is imported, so the codec never imports it."""
    _TABLES[:] = [schema, decoders]


def _schema() -> dict:
    if not _TABLES:
        raise RuntimeError("ctxpack_wasm.types was not imported: the codec has no types")
    return _TABLES[0]


def _decoders() -> dict:
    _schema()
    return _TABLES[1]


_INTS = {"u32": (0, 2**32 - 1), "u64": (0, 2**64 - 1), "s32": (-(2**31), 2**31 - 1),
         "s64": (-(2**63), 2**63 - 1), "u8": (0, 255), "u16": (0, 65535)}


def _shown(value: Any, most: int = 120) -> str:
    """``repr(value)`` for an error message, cut to ``most`` characters: a
    wrong value may be a whole tokenizer file."""
    text = repr(value)
    return text if len(text) <= most else f"{text[:most]}… ({len(text)} characters)"


def encode(value: Any, ty: Any, path: str) -> Any:
    """`value` (a generated class, or the dict / str the JSON would hold)
    as JSON of WIT type `ty`; a value that does not fit raises
    ``TypeError`` naming `path`."""
    if isinstance(ty, str):
        if ty == "string":
            if isinstance(value, str):
                return value
        elif ty == "bool":
            if isinstance(value, bool):
                return value
        elif ty in ("f64", "f32"):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
        else:
            lo, hi = _INTS[ty]
            if isinstance(value, int) and not isinstance(value, bool):
                if lo <= value <= hi:
                    return value
                raise TypeError(f"`{path}`: {value} is out of range for {ty}")
        raise TypeError(f"`{path}`: expected {ty}, got {type(value).__name__} {_shown(value)}")
    kind = ty[0]
    if kind == "option":
        return None if value is None else encode(value, ty[1], path)
    if kind == "list":
        if isinstance(value, LazyList) and not any(value._items):
            return value.raw()  # as it came: nothing was looked at, nothing changed
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
            raise TypeError(f"`{path}`: expected a list, got {type(value).__name__}")
        return [encode(v, ty[1], f"{path}[{i}]") for i, v in enumerate(value)]
    entry = _schema()[ty[1]]
    if entry[0] == "enum":
        if isinstance(value, entry[1]):
            return value.value
        if isinstance(value, str) and value in entry[1]._value2member_map_:
            return value
        allowed = ", ".join(m.value for m in entry[1])
        raise TypeError(f"`{path}`: expected one of {allowed}, got {_shown(value)}")
    if entry[0] == "variant":
        cases = entry[2]
        if isinstance(value, entry[1]):
            tag, payload = value.tag, value.value
        elif isinstance(value, str):
            tag, payload = value, None
        elif isinstance(value, dict) and len(value) == 1:
            ((tag, payload),) = value.items()
        else:
            raise TypeError(f"`{path}`: expected {ty[1]}, a case name or {{case: value}}, got {_shown(value)}")
        if (tag not in cases and isinstance(value, dict) and isinstance(tag, str)
                and tag.replace("_", "-") in cases):
            tag = tag.replace("_", "-")  # a case written as a snake_case key (a name is a value)
        if tag not in cases:
            hint = ("; a tokenizer file the builder was given is Tokenizer.named(NAME), and a model "
                    "('gpt-4o', 'qwen3-8b') is named by the request's `model`") if ty[1] == "Tokenizer" else ""
            raise TypeError(f"`{path}`: {tag!r} is not a case of {ty[1]} ({', '.join(cases)}){hint}")
        if cases[tag] is None:
            if payload is not None:
                raise TypeError(f"`{path}`: case {tag!r} has no payload")
            return tag
        return {tag: encode(payload, cases[tag], f"{path}.{tag}")}
    # A record: the class, or a dict keyed in snake_case or kebab-case. A
    # field left out (UNSET) is left out of the JSON: the core applies its
    # default, or refuses naming the field.
    fields = entry[2]
    if isinstance(value, entry[1]):
        get = lambda f, k: getattr(value, f)  # noqa: E731
    elif isinstance(value, dict):
        known = {f for f, _, _ in fields} | {k for _, k, _ in fields}
        unknown = [k for k in value if k not in known]
        if unknown:
            raise TypeError(f"`{path}`: {ty[1]} has no field {unknown[0]!r}")
        get = lambda f, k: value.get(f, value.get(k, UNSET))  # noqa: E731
    else:
        raise TypeError(f"`{path}`: expected {ty[1]} (or a dict), got {type(value).__name__}")
    out = {}
    for f, k, t in fields:
        v = get(f, k)
        if v is not UNSET:
            if ty[1] == "Chat" and f == "messages" and not isinstance(v, str):
                # A chat's messages as Python holds them: their JSON text.
                v = _messages_text(v, f"{path}.{f}")
            out[k] = encode(v, t, f"{path}.{f}")  # named as a Python caller writes it
    return out


def _messages_text(messages: Any, path: str) -> str:
    """Chat messages given as the list (or the object holding it) a
    provider's SDK takes, as JSON text."""
    try:
        return json.dumps(messages, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as e:
        raise TypeError(f"`{path}`: the messages as JSON: {e} (LangChain's messages: "
                        "ctxpack_wasm.chat.chat(messages))") from None


def decode(obj: Any, ty: Any) -> Any:
    """JSON of WIT type `ty` as the generated classes."""
    if ty.__class__ is list and ty[0] == "ref":
        return _decoders()[ty[1]](obj)
    if isinstance(ty, str):
        return obj
    kind = ty[0]
    if kind == "option":
        return None if obj is None else decode(obj, ty[1])
    if kind == "list":
        return [decode(v, ty[1]) for v in obj]
    entry = _schema()[ty[1]]
    if entry[0] == "enum":
        return entry[1](obj)
    if entry[0] == "variant":
        if isinstance(obj, str):
            return entry[1](obj)
        ((tag, payload),) = obj.items()
        return entry[1](tag, decode(payload, entry[2][tag]))
    return entry[1](**{f: decode(obj.get(k), t) for f, k, t in entry[2] if k in obj})


def as_json(value: Any) -> Any:
    """A decoded value back as JSON: the inverse of `decode`, for any
    generated value (used to check a round trip)."""
    if isinstance(value, Record):
        return value.to_json()
    if isinstance(value, Variant):
        return value.to_json()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, LazyList):
        return value.raw()
    if isinstance(value, list):
        return [as_json(v) for v in value]
    return value
