"""ctxpack for Python: what goes into an LLM's context window, within an
exact token budget, with the reason every candidate was taken or dropped.

The ctxpack WebAssembly component runs inside this package (through
wasmtime); your stores stay in Python. Plug them in as objects::

    from ctxpack_wasm import Builder, AssembleRequest, AgentContext, Candidate

    class Docs:
        def retrieve(self, context, query, limit):
            return [Candidate(id="kb-1", section="relevant-knowledge",
                              text="Refunds take 5 days.", trust="trusted")]

    builder = Builder({"profile": {"rag": {"retrieve_limit": 10}}})
    pack = builder.assemble(request, sources=Docs())

A source is any object with some of ``retrieve(context, query, limit)``,
``expand_graph(context, item_ids, depth)``, ``recall_memory(context,
user_id, query, limit)`` and ``repository_state(context)``; a method it
lacks is a source it does not provide. The policy is an object with
``review(context, items)`` (or a function of the same arguments) giving
one verdict per item (``"allow"``, ``Verdict.deny(reason)``,
``Verdict.redact(text)``) — by default :func:`allow_all`; the summariser has ``summarize(requests,
tokenizer)``. A callback that raises is that source's failure: the
assembly goes on degraded (or fails, for the policy), and the instance
stays usable. With ``assemble_async`` the callbacks may be coroutines;
the calls of one round run concurrently.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import inspect
import json
import re
import sys
from json.encoder import encode_basestring as _q  # C-accelerated; keeps non-ASCII
from typing import Any, Callable, Generator, Iterable, Optional

from . import _runtime
from ._codec import Record, Variant, decode, encode
from .types import *  # noqa: F401,F403 — the WIT's types are the package's
from .types import (
    AgentContext,
    AssembleRequest,
    AssemblyFailure,
    BuilderConfig,
    Candidate,
    ContextPack,
    ConversationTurn,
    CtxpackError as CtxpackErrorValue,
    Handling,
    Provenance,
    Role,
    RoutingDecision,
    Snapshot,
    SnapshotDiff,
    SummaryRequest,
    Tokenizer,
    Verdict,
)

__all__ = [
    "__version__",
    "count_tokens",
    "explain_reason",
    "PROFILES",
    "Builder",
    "Router",
    "diff_snapshots",
    "CtxpackError",
    "AssemblyFailed",
    "HostError",
    "Instance",
    "ComponentTrapped",
    "allow_all",
    "read_tokenizer",
]

Instance = _runtime.Instance
ComponentTrapped = _runtime.ComponentTrapped

# The WIT's types are the package's.
from . import types as _types  # noqa: E402

__all__ += _types.__all__

from ._calls import CALLS, DEFAULT_PROFILE, PROFILES  # noqa: E402
from ._errors import NOT_PROVIDED, wording  # noqa: E402
from ._writers import (  # noqa: E402
    _candidate,
    _candidate_text,
    _config,
    _provenance,
    _request,
    _turns_text,
    _verdict,
)


try:
    from importlib.metadata import PackageNotFoundError, version as _version

    __version__ = _version("ctxpack-wasm")
except PackageNotFoundError:  # a source tree on sys.path, never installed
    __version__ = "0+unknown"


def explain_reason(reason: Any) -> str:
    """Why a candidate was taken or dropped, in words: a snapshot entry's
    ``reason`` (or its name) as the WIT documents it, with what it
    carries (``explain_reason(entry.reason)``)."""
    tag, value = (reason, None) if isinstance(reason, str) else (reason.tag, reason.value)
    case = getattr(_types.Reason, str(tag).replace("-", "_"), None)
    doc = (case.__doc__ if case is not None and case.__doc__ else str(tag)).strip()
    if value is None:
        return doc
    if tag == "over-budget":
        what = f"needed {value.needed}, {value.remaining} remained"
    else:
        what = str(value)
    return f"{doc.rstrip('.')}: {what}."


def read_tokenizer(path: Any, *, name: str, pattern: Optional[str] = None) -> "_types.TokenizerFile":
    """The tokenizer file a model ships, read from ``path`` (or given as
    its bytes, as a download or a package's resource gives them), for a
    builder's ``tokenizers``; a request then counts with it as
    ``Tokenizer.named(name)``, or names a model whose profile counts with
    a file of that name (``"llama3"`` for Llama 3.x), exactly as the
    file's reference implementation counts::

        llama = read_tokenizer("Llama-3.1-8B/tokenizer.json", name="llama3")
        builder = Builder(BuilderConfig(tokenizers=[llama]))
        request.model = "meta-llama/Llama-3.1-8B-Instruct"  # or
        request.tokenizer = Tokenizer.named("llama3")

    A Hugging Face ``tokenizer.json`` with a BPE model, byte-level (Llama
    3.x, Qwen 2.5 and 3, DeepSeek V3, Phi-4) or SentencePiece-style (Gemma
    3), Mistral's ``tekken.json``, or a tiktoken rank file, whose
    ``pattern`` must then be named (``"llama3"``, ``"qwen"``, ``"o200k"``,
    ...). The file is read when the builder is
    made: one the counting does not follow is refused there, naming what."""
    if isinstance(path, (bytes, bytearray, memoryview)):
        try:
            text = bytes(path).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"read_tokenizer: the file's bytes are not UTF-8 ({e.reason} at byte {e.start}): every "
                "file ctxpack reads is text (a SentencePiece .model is binary, and not read)") from None
        return _types.TokenizerFile(name=name, text=text, pattern=pattern)
    if isinstance(path, str) and "\n" in path:
        raise TypeError(
            "read_tokenizer: `path` is a file's contents, not its path; for contents use "
            "TokenizerFile(name=..., text=...), or give its bytes"
        )
    with open(path, "rb") as f:
        return read_tokenizer(f.read(), name=name, pattern=pattern)


def _tokenizer_file_repr(self: "_types.TokenizerFile") -> str:
    # The text is a whole tokenizer file: shown by its length.
    return (f"TokenizerFile(name={self.name!r}, text=<{len(self.text)} characters>, "
            f"pattern={self.pattern!r})")


_types.TokenizerFile.__repr__ = _tokenizer_file_repr  # type: ignore[method-assign]


def allow_all(context: AgentContext, items: list) -> list:
    """The policy of a host without a policy engine: every item as it is.
    The default ``policy``; pass ``policy=None`` for a host that provides
    none (every assembly that reaches review then fails)."""
    return ["allow"] * len(items)


class CtxpackError(Exception):
    """ctxpack refused something: ``error`` is the WIT's ``ctxpack-error``
    (``error.tag`` is the kind, e.g. ``"invalid-field"``; ``error.value``
    its details)."""

    def __init__(self, error: CtxpackErrorValue) -> None:
        self.error = error
        super().__init__(_describe(error))


class AssemblyFailed(CtxpackError):
    """An assembly gave no pack: ``failure.error`` says why and
    ``failure.snapshot`` is the failed snapshot, when the assembly had
    begun."""

    def __init__(self, failure: AssemblyFailure) -> None:
        self.failure = failure
        super().__init__(failure.error)

    @property
    def snapshot(self) -> Optional[Snapshot]:
        return self.failure.snapshot


def _describe(error: CtxpackErrorValue) -> str:
    """The core's wording of ``error`` (see ``_errors.py``)."""
    return wording(error.tag, error.value)


def _error(value: Any) -> CtxpackError:
    """A ``ctxpack-error`` lifted by wasmtime-py, as the exception."""
    payload = value.payload
    if payload is not None and not isinstance(payload, str):
        payload = {k.replace("_", "-"): v for k, v in vars(payload).items()}
    obj = value.tag if payload is None else {value.tag: payload}
    return CtxpackError(_respell(decode(obj, ["ref", "CtxpackError"])))


_POSITION = re.compile(r" at line \d+ column \d+$")
_NAMED = re.compile(r"^(unknown|missing) field `")


def _snake(name: str) -> str:
    return name.replace("-", "_")


def _respell(error: CtxpackErrorValue, calls: Optional[list] = None) -> CtxpackErrorValue:
    """The error as a Python caller spells it: the field's path and the
    field names its message quotes in snake_case, without a position in
    JSON text the caller never wrote; with ``calls`` (the round's), an
    answer's path named after the callback (``retrieve()[0].section``).
    Changes ``error`` in place and gives it back."""
    if error.tag != "invalid-field":
        return error
    v = error.value
    field, message = v.field, _POSITION.sub("", v.message)
    if calls is not None:
        m = re.match(r"^answer(?:\[(\d+)\])?(?:\.(?:ok|err))?(.*)$", field)
        if m is not None:
            i = 0 if m.group(1) is None else int(m.group(1))
            if i < len(calls):
                field = f"{calls[i].method}(){m.group(2)}"
    if _NAMED.match(message):
        message = re.sub(r"`([^`]*)`", lambda q: f"`{_snake(q.group(1))}`", message)
    v.field, v.message = _snake(field), message
    return error


def _text(result: Any) -> str:
    if isinstance(result, _runtime.Ok):
        return result.text
    if isinstance(result, str):
        return result
    raise _error(result)


# --- what the host sends: in _writers --------------------------------------

def _refuse_unused(profile: str, sources: Any) -> None:
    """Lending a source the builder's profile never calls is a mistake (it
    would silently never be asked): refused, naming the profiles that do."""
    calls = PROFILES.get(profile)
    if calls is None or sources is None:
        return  # the component names a wrong profile
    for known in CALLS.values():
        if known.interface != "sources" or known.capability in calls:
            continue
        if callable(getattr(sources, known.method, None)):
            would = " or ".join(f"`{p}`" for p, c in PROFILES.items() if known.capability in c)
            error = decode({"invalid-field": {
                "field": f"sources.{known.method}",
                "message": f"the builder's profile `{profile}` never calls it; {would} would "
                           "(config.profile)",
            }}, ["ref", "CtxpackError"])
            raise CtxpackError(error)


def _refuse_misspelt(lenders: dict) -> None:
    """A lender that cannot lend what it is given for is a mistake that
    would pass silently (every call "not provided", a degraded pack):
    refused before anything runs. A function where the interface has
    several functions, or a method whose name is one or two letters from
    a callback's (``retreive``), raises ``TypeError`` naming both."""
    for interface, lender in lenders.items():
        if lender is None or lender is allow_all:
            continue
        methods = [k.method for k in CALLS.values() if k.interface == interface]
        if len(methods) > 1 and inspect.isroutine(lender):
            raise TypeError(f"{interface}: a function cannot lend {', '.join(methods)}; "
                            "pass an object with those methods")
        if inspect.isroutine(lender):
            continue
        missing = [m for m in methods if inspect.getattr_static(lender, m, None) is None]
        for name in dir(lender):
            near = [m for m in missing if not name.startswith("_") and _letters_apart(name, m) <= 2]
            if near and callable(inspect.getattr_static(lender, name, None)):
                raise TypeError(f"{interface}.{name}: ctxpack calls {interface}.{near[0]}(), which "
                                f"{type(lender).__name__} does not have — a misspelling?")


def _letters_apart(a: str, b: str) -> int:
    """Edits (a letter put in, left out, changed, or two swapped) from
    ``a`` to ``b``."""
    prev2: list = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            d = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                d = min(d, prev2[j - 2] + 1)
            row.append(d)
        prev2, prev = prev, row
    return prev[-1]


# --- the host's side of each step ------------------------------------------

class HostError(Exception):
    """Raise it in a callback to fail that call with exactly this message
    (any other exception fails it with ``"TypeName: message"``)."""


def _failure(capability: str, e: BaseException) -> dict:
    message = str(e) if isinstance(e, HostError) else f"{type(e).__name__}: {e}"
    return {"err": {"capability": capability, "message": message}}


def _not_provided(capability: str) -> dict:
    return {"err": {"capability": capability, "message": NOT_PROVIDED}}


class _Host:
    """The user's callbacks, lent as ``sources``, ``policy`` and
    ``summarizer``: each call of a step, found in the generated table of
    calls, is turned into a thunk that makes it and a function that turns
    its answer into the JSON answer."""

    def __init__(self, sources: Any, policy: Any, summarizer: Any, counter: Any,
                 context: AgentContext) -> None:
        self.lenders = {"sources": sources, "policy": policy, "summarizer": summarizer,
                        "counter": counter}
        self.context = context

    def call(self, call: Any) -> tuple[Any, Optional[Callable[[], Any]]]:
        """The call's entry in the table and its thunk (``None``: the host
        does not provide it). A call not in the table is a newer
        component's: answering it as another would be a guess."""
        ((name, args),) = call.items()
        known = CALLS.get(name)
        if known is None:
            raise RuntimeError(f"the component asked for a call this package does not know: {name!r}")
        f = _callback(self.lenders, known)
        if f is None:
            return known, None
        if f is allow_all:  # nothing to look at: skip the decoding
            values = [args[p] for p, _ in known.params]
        else:
            values = [decode(args[p], t) for p, t in known.params]
        if known.context:
            values.insert(0, self.context)
        return known, lambda: f(*values)

    @staticmethod
    def answer(known: Any, value: Any) -> str:
        """The JSON text of a callback's answer to the call ``known``. A
        value that does not fit its WIT type is a mistake in the callback,
        not its store's failure: it raises ``TypeError`` naming the
        callback and the field (``retrieve()[0].section``)."""
        where, ty = f"{known.method}()", known.answer
        if ty == ["list", ["ref", "Candidate"]] and not isinstance(value, (str, bytes, dict)):
            return _Host.candidates(where, value)
        if ty == ["list", ["ref", "Verdict"]] and not isinstance(value, (str, bytes, dict)):
            ok = [_verdict(v, f"{where}[{i}]") for i, v in enumerate(value)]
        else:
            ok = encode(value, ty, where)
        return json.dumps({"ok": ok}, ensure_ascii=False)

    @staticmethod
    def candidates(where: str, items: Any) -> str:
        """The answer's JSON text."""
        try:
            parts = [_candidate_text(c) if type(c) is Candidate
                     else json.dumps(_candidate(c, f"{where}[{i}]"), ensure_ascii=False)
                     for i, c in enumerate(items)]
        except (TypeError, AttributeError, ValueError) as e:
            # Say which field: the checking encoder names it.
            for i, c in enumerate(items):
                encode(c, ["ref", "Candidate"], f"{where}[{i}]")
            raise TypeError(f"{where}: {e}") from e
        return '{"ok":[' + ",".join(parts) + "]}"


def _steps(inst: _runtime.Instance, assembly: Any, host: _Host) -> Generator[list, list, str]:
    """Drives one JSON assembly: yields each step's callbacks (thunks),
    is sent their results (``(ok, value)`` pairs), and returns the
    outcome's JSON text (``{"pack": …}``, ``{"handled": …}`` or
    ``{"failed": …}``)."""
    try:
        return (yield from _step_loop(inst, assembly, host))
    finally:
        # The resource lives in the instance's table until dropped (an
        # instance that trapped is dropped whole instead).
        if not inst.broken:
            assembly.drop(inst.store)


def _step_loop(inst: _runtime.Instance, assembly: Any, host: _Host) -> Generator[list, list, str]:
    answer = ""
    asked: list = []
    while True:
        result = inst.step(inst.store, assembly, answer)
        if not isinstance(result, (_runtime.Ok, str)):
            # The component refused an answer: named after its callback.
            error = _error(result)
            _respell(error.error, asked)
            raise CtxpackError(error.error)
        text = _text(result)
        if text.startswith('{"done":'):
            return text[8:-1]
        with _no_gc_pauses():
            step = json.loads(text)
        ((kind, body),) = step.items()
        if kind != "calls":
            # A step this package does not know is a newer component's.
            raise RuntimeError(f"the component asked for a step this package does not know: {kind!r}")
        calls = [host.call(c) for c in body]
        asked = [known for known, _ in calls]
        results = yield [(known, thunk) for known, thunk in calls if thunk is not None]
        answers = []
        it = iter(results)
        for known, thunk in calls:
            if thunk is None:
                answers.append(json.dumps(_not_provided(known.capability)))
                continue
            ok, value = next(it)
            if not ok:
                answers.append(json.dumps(_failure(known.capability, value), ensure_ascii=False))
            else:
                answers.append(_Host.answer(known, value))
        answer = "[" + ",".join(answers) + "]"


def _callback(lenders: dict, known: Any) -> Optional[Callable[..., Any]]:
    """The callback that answers the call ``known``: its lender's method,
    or the lender itself when it is a function and the interface has one
    function; ``None`` when the host does not provide it."""
    lender = lenders.get(known.interface)
    f = None if lender is None else getattr(lender, known.method, None)
    if f is None and known.alone and callable(lender):
        f = lender
    return f


def _refuse_async(sources: Any, policy: Any, summarizer: Any, counter: Any = None) -> None:
    """The synchronous API cannot await: an ``async def`` callback is
    refused before anything runs, whether or not this assembly would call
    it."""
    lenders = {"sources": sources, "policy": policy, "summarizer": summarizer, "counter": counter}
    for known in CALLS.values():
        f = _callback(lenders, known)
        if f is not None and inspect.iscoroutinefunction(f):
            raise TypeError(f"the callback {known.method}() is async: await assemble_async / "
                            "handle_async instead")


# What a callback raises that is a mistake in its code, not its store
# failing: raised at the caller, never recorded as a degraded source.
_MISTAKES = (TypeError, NameError, AttributeError)


def _mistake(known: Any, e: BaseException) -> BaseException:
    """``e``, raised by the callback of ``known``, to raise at the caller."""
    if sys.version_info >= (3, 11):
        name = type(e).__name__
        article = "an" if name[:1] in "AEIOU" else "a"
        e.add_note(f"raised by the callback {known.method}() ({known.capability}): {article} "
                   f"{name} is a mistake in it, not its store failing")
    return e


def _run_sync(gen: Generator[list, list, str]) -> str:
    try:
        calls = next(gen)
        while True:
            results = []
            for known, thunk in calls:
                try:
                    value = thunk()
                except _MISTAKES as e:
                    gen.close()
                    raise _mistake(known, e)
                except Exception as e:  # a callback's failure is its source's
                    results.append((False, e))
                    continue
                if inspect.isawaitable(value):
                    if hasattr(value, "close"):
                        value.close()
                    gen.close()
                    raise TypeError(f"the callback {known.method}() is async: await "
                                    "assemble_async / handle_async instead")
                results.append((True, value))
            calls = gen.send(results)
    except StopIteration as done:
        return done.value


async def _run_async(gen: Generator[list, list, str]) -> str:
    async def run(known: Any, thunk: Callable[[], Any]) -> tuple[bool, Any]:
        try:
            value = thunk()
            if inspect.isawaitable(value):
                value = await value
            return True, value
        except _MISTAKES as e:
            raise _mistake(known, e)
        except Exception as e:  # a callback's failure is its source's
            return False, e

    try:
        calls = next(gen)
        while True:
            try:
                results = list(await asyncio.gather(*(run(k, t) for k, t in calls)))
            except BaseException:
                gen.close()
                raise
            calls = gen.send(results)
    except StopIteration as done:
        return done.value


@contextlib.contextmanager
def _no_gc_pauses():
    """Parsing a large outcome makes ~10^5 containers, none of them in a
    cycle; the collector's passes over them cost ~10% of a 10k pack. It is
    held off for the parse only, never while a callback runs."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _outcome(text: str) -> Any:
    with _no_gc_pauses():
        ((kind, body),) = json.loads(text).items()
        if kind == "failed":
            failure = decode(body, ["ref", "AssemblyFailure"])
            _respell(failure.error)
        elif kind == "pack":
            return decode(body, ["ref", "ContextPack"])
        elif kind == "trimmed":
            return decode(body, ["ref", "Trimmed"])
        else:
            return decode(body, ["ref", "Handling"])
    raise AssemblyFailed(failure)


class _Counter:
    """A host's counters lent as the ``counter`` interface: a function of
    texts (``count_tokens``), of lists of messages (``count_messages``)
    and a splitter (``split_text``), each where given."""

    def __init__(self, count_tokens: Any = None, count_messages: Any = None, split_text: Any = None) -> None:
        if count_tokens is not None:
            self.count_tokens = count_tokens
        if count_messages is not None:
            self.count_messages = count_messages
        if split_text is not None:
            self.split_text = split_text


def _text_counter(counter: Any) -> Any:
    """An assembly's ``counter``: a function of ``(tokenizer, texts)`` is
    its ``count_tokens``."""
    if counter is not None and inspect.isroutine(counter):
        return _Counter(count_tokens=counter)
    return counter


# --- the API ----------------------------------------------------------------

class _Held:
    """A resource inside an instance, dropped on `close()`, at the end of
    a ``with`` block, or when garbage-collected."""

    _inst: "Instance"
    _handle: Any = None

    def close(self) -> None:
        """Drops it inside its instance."""
        handle, self._handle = self._handle, None
        if handle is not None and not self._inst.broken:
            handle.drop(self._inst.store)

    def _live(self) -> "Instance":
        """Its instance; one that trapped is replaced first (the thread's
        default by a new default, one given by a new instance of its
        engine), and the resource made again in it."""
        if self._inst.broken:
            self._handle = None
            self._inst = _runtime.default_instance() if self._default else Instance(self._inst.engine)
            self._handle = self._make()
        return self._inst

    _default: bool = True

    def _make(self) -> Any:
        raise NotImplementedError

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # the instance may already be gone at exit
            pass

    def __enter__(self):
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()


class Router(_Held):
    """A router: a pure function of the raw query, compiled once from its
    config (YAML or JSON text)."""

    def __init__(self, config: str, format: str = "yaml", *, instance: Optional[Instance] = None) -> None:
        self._default = instance is None
        self._inst = instance or _runtime.default_instance()
        if format not in ("yaml", "json"):
            raise ValueError("format is 'yaml' or 'json'")
        self._config = (config, format)
        self._handle = self._make()

    def _make(self) -> Any:
        result = self._inst.router_create(self._inst.store, *self._config)
        if result.__class__.__name__ != "ResourceAny":
            raise _error(result)
        return result

    def route(self, query: str) -> RoutingDecision:
        """The decision on `query`, with every route's rule breakdown."""
        inst = self._live()
        text = _text(inst.route(inst.store, self._handle, query))
        return decode(json.loads(text), ["ref", "RoutingDecision"])


class Builder(_Held):
    """A context builder. Make it once and reuse it: it keeps the token
    counts it has made between assemblies. `config` is a
    :class:`BuilderConfig`, or a dict of its fields (``None``: every
    default)."""

    def __init__(self, config: Any = None, *, instance: Optional[Instance] = None) -> None:
        self._default = instance is None
        self._inst = instance or _runtime.default_instance()
        self._config, self.profile = _config(config)
        """The configuration's profile, as ``PROFILES`` names it."""
        self._handle = self._make()

    def _make(self) -> Any:
        result = self._inst.create(self._inst.store, self._config)
        if result.__class__.__name__ != "ResourceAny":
            raise _error(result)
        return result

    def _start(self, request: Any, router: Optional[Router], sources: Any, policy: Any,
               summarizer: Any, counter: Any) -> Generator[list, list, str]:
        counter = _text_counter(counter)
        _refuse_unused(self.profile, sources)
        _refuse_misspelt({"sources": sources, "policy": policy, "summarizer": summarizer,
                          "counter": counter})
        text, context = _request(request)
        inst = self._live()
        if router is None:
            assembly = inst.start(inst.store, self._handle, text)
        else:
            router._live()
            if router._inst is not inst:
                raise ValueError("the router and the builder belong to different instances")
            assembly = inst.handle(inst.store, self._handle, router._handle, text)
        return _steps(inst, assembly, _Host(sources, policy, summarizer, counter, context))

    def assemble(self, request: Any, *, sources: Any = None, policy: Any = allow_all,
                 summarizer: Any = None, counter: Any = None) -> ContextPack:
        """A pack for `request` (an :class:`AssembleRequest` or a dict of
        its fields). Raises :class:`AssemblyFailed` when there is none.

        A request whose ``chat`` holds the messages you send (``Chat(shape=
        "openai-chat", messages=[…])``, Anthropic's, Gemini's or the
        Responses API's) is packed for them, cache-first, and
        ``pack.chat.json()`` is the request to send, the kept messages as
        you gave them."""
        _refuse_async(sources, policy, summarizer, _text_counter(counter))
        return _outcome(_run_sync(self._start(request, None, sources, policy, summarizer, counter)))

    async def assemble_async(self, request: Any, *, sources: Any = None, policy: Any = allow_all,
                             summarizer: Any = None, counter: Any = None) -> ContextPack:
        """:meth:`assemble`, awaiting callbacks that are coroutines."""
        return _outcome(await _run_async(self._start(request, None, sources, policy, summarizer, counter)))

    def handle(self, router: Router, request: Any, *, sources: Any = None, policy: Any = allow_all,
               summarizer: Any = None, counter: Any = None) -> Handling:
        """Route `request.query`: a confident route goes straight to its
        skill, calling nothing; anything else is assembled and dispatched to
        the fallback skill."""
        _refuse_async(sources, policy, summarizer, _text_counter(counter))
        return _outcome(_run_sync(self._start(request, router, sources, policy, summarizer, counter)))

    async def handle_async(self, router: Router, request: Any, *, sources: Any = None,
                           policy: Any = allow_all, summarizer: Any = None, counter: Any = None) -> Handling:
        """:meth:`handle`, awaiting callbacks that are coroutines."""
        return _outcome(await _run_async(self._start(request, router, sources, policy, summarizer, counter)))

    def assemble_json(self, request: Any, *, router: Optional[Router] = None, sources: Any = None,
                      policy: Any = allow_all, summarizer: Any = None, counter: Any = None) -> str:
        """The outcome as the component wrote it: ``{"pack": …}``,
        ``{"handled": …}`` or ``{"failed": …}`` (to store or forward as
        it is, without the Python classes)."""
        _refuse_async(sources, policy, summarizer, _text_counter(counter))
        return _run_sync(self._start(request, router, sources, policy, summarizer, counter))

    def count(self, request: Any = None, *, texts: Optional[Iterable[str]] = None, chat: Any = None,
              model: Optional[str] = None, tokenizer: Any = None) -> "_types.TokenCounts":
        """Counts texts, and a chat as a request sends it, exactly as an
        assembly charges them (``request`` a :class:`CountRequest`, or the
        same given by keyword)::

            Builder().count(texts=[text], tokenizer="o200k-base").texts[0]
            Builder().count(chat=Chat(shape="openai-chat", messages=msgs), model="gpt-4o").total
        """
        if request is None:
            request = _types.CountRequest(texts=list(texts or []), chat=chat, model=model, tokenizer=tokenizer)
        inst = self._live()
        text = json.dumps(encode(request, ["ref", "CountRequest"], "count"), ensure_ascii=False)
        result = inst.count(inst.store, self._handle, text)
        with _no_gc_pauses():
            return decode(json.loads(_text(result)), ["ref", "TokenCounts"])

    def count_texts(self, texts: Iterable[str], *, model: Optional[str] = None,
                    tokenizer: Any = None) -> list[int]:
        """Each text's tokens, as :meth:`count` counts them (with
        ``"o200k-base"`` when neither is given, as :func:`count_tokens`),
        the texts crossing as they are (not written into JSON): the fast
        way to count much text."""
        if model is None and tokenizer is None:
            tokenizer = "o200k-base"
        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"`texts[{i}]`: expected a string, got {type(t).__name__}")
        request = _types.CountRequest(model=model, tokenizer=tokenizer)
        inst = self._live()
        named = json.dumps(encode(request, ["ref", "CountRequest"], "count"), ensure_ascii=False)
        result = inst.count_texts(inst.store, self._handle, named, texts)
        if isinstance(result, list):
            return result
        raise _error(result)

    def _trim(self, request: Any, counter: Any, splitter: Any) -> Generator[list, list, str]:
        lender = _Counter(count_messages=counter, split_text=None if splitter is None else _pieces(splitter))
        text = json.dumps(encode(request, ["ref", "TrimRequest"], "trim"), ensure_ascii=False)
        inst = self._live()
        assembly = inst.trim(inst.store, self._handle, text)
        return _steps(inst, assembly, _Host(None, None, None, lender, AgentContext(trace_id="")))

    def trim(self, request: Any, *, counter: Any = None, splitter: Any = None) -> "_types.Trimmed":
        """Trims a chat to a budget as LangChain's ``trim_messages`` does,
        exactly (``request`` a :class:`TrimRequest`; see
        :func:`ctxpack_wasm.chat.trim_messages` for LangChain's own
        arguments and messages). With ``tokenizer=Tokenizer.host(name)``,
        ``counter(name, lists)`` counts each list of messages (each a
        :class:`MessageList`: the chat's messages by index, and a cut one);
        with ``split="host"``, ``splitter(texts)`` splits each text into
        the pieces a cut message may keep."""
        return _outcome(_run_sync(self._trim(request, counter, splitter)))

    async def trim_async(self, request: Any, *, counter: Any = None, splitter: Any = None) -> "_types.Trimmed":
        """:meth:`trim`, awaiting a counter that is a coroutine."""
        return _outcome(await _run_async(self._trim(request, counter, splitter)))


def _pieces(splitter: Any) -> Callable[[list], list]:
    """A splitter of one text as the host's ``split_text`` of many."""
    def split(texts: list) -> list:
        return [_types.TextPieces(pieces=list(splitter(t))) for t in texts]
    return split


def count_tokens(text: str, *, model: Optional[str] = None, tokenizer: Any = None) -> int:
    """The tokens of ``text`` as ``tokenizer`` (``"o200k-base"`` when
    neither is given) or ``model``'s profile counts it: one call, the same
    number as every host and every assembly."""
    if not isinstance(text, str):
        raise TypeError(f"`text`: expected a string, got {type(text).__name__}")
    return _default_builder().count_texts([text], model=model, tokenizer=tokenizer)[0]


def _default_builder() -> "Builder":
    """This thread's builder with every default, for :func:`count_tokens`."""
    inst = _runtime.default_instance()
    held = getattr(inst, "_count_builder", None)
    if held is None:
        held = inst._count_builder = Builder(instance=inst)
    return held


def diff_snapshots(before: Any, after: Any, *, instance: Optional[Instance] = None) -> SnapshotDiff:
    """What changed between two snapshots: entered, left, moved, changed
    tokens, with each candidate's reason before and after."""
    inst = instance or _runtime.default_instance()

    def as_text(s: Any) -> str:
        return s if isinstance(s, str) else json.dumps(encode(s, ["ref", "Snapshot"], "snapshot"))

    text = _text(inst.diff(inst.store, as_text(before), as_text(after)))
    return decode(json.loads(text), ["ref", "SnapshotDiff"])
