"""Loading the component and calling its `json` interface.

The component is compiled once per process, and the compiled artifact is
kept in the user's cache directory (``$CTXPACK_WASM_CACHE``, else
``$XDG_CACHE_HOME/ctxpack-wasm``, else ``~/.cache/ctxpack-wasm``), named
by the component's SHA-256 and the wasmtime version, so a new component or
a new wasmtime never reads a stale one.

Every call crosses with strings only: wasmtime-py converts each value
field by field in Python, and one JSON string each way is far cheaper
than the records. The calls read their types once (wasmtime-py reads a
function's type from C at every call) and lift a ``result<string, E>``
directly; both use wasmtime-py's ``_ffi`` module, so the wasmtime
dependency is pinned.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from ctypes import byref, pointer
from pathlib import Path
from typing import Any, Optional

import wasmtime
import wasmtime.component as wc
from wasmtime import _ffi as ffi
from wasmtime.component._enter import enter_wasm

COMPONENT = Path(__file__).with_name("ctxpack.wasm")
INTERFACE = "ctxpack:context/json@0.1.0"
BUILDER = "ctxpack:context/builder@0.1.0"


def cache_dir() -> Path:
    """Where compiled artifacts are kept."""
    if os.environ.get("CTXPACK_WASM_CACHE"):
        return Path(os.environ["CTXPACK_WASM_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "ctxpack-wasm"


_loaded: dict = {}
_load_lock = threading.Lock()


def load(engine: wasmtime.Engine, path: Path = COMPONENT) -> wc.Component:
    """The component at `path`, compiled for `engine`: from the cached
    artifact when there is one, else compiled and cached."""
    key = (id(engine), str(path))
    with _load_lock:
        if key in _loaded:
            return _loaded[key][1]
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        version = getattr(wasmtime, "__version__", None) or _wasmtime_version()
        artifact = cache_dir() / f"{digest[:32]}-wasmtime-{version}.cwasm"
        component = None
        if artifact.exists():
            try:
                component = wc.Component.deserialize_file(engine, str(artifact))
            except wasmtime.WasmtimeError:
                component = None  # made by another engine setting: remake it
        if component is None:
            component = wc.Component(engine, data)
            try:
                artifact.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=artifact.parent, suffix=".tmp")
                with os.fdopen(fd, "wb") as f:
                    f.write(component.serialize())
                os.replace(tmp, artifact)
            except OSError:
                pass  # a read-only cache: compile each time, still correct
        _loaded[key] = (engine, component)
        return component


def _wasmtime_version() -> str:
    from importlib.metadata import version

    return version("wasmtime")


class Call:
    """One exported function, its type read once."""

    def __init__(self, func: wc.Func, store: wasmtime.Store, owner: "Instance", name: str = "") -> None:
        self.owner = owner
        self.name = name
        self.func = func
        self.type = func.type(store)  # kept: the types below live in it
        self.params = [t for _, t in self.type.params]
        self.result = self.type.result

    def __call__(self, store: wasmtime.Store, *params: Any) -> Any:
        capi = (ffi.wasmtime_component_val_t * len(params))()
        n = 0
        fn = byref(self.func._func)
        ctx = store._context()
        space = ffi.wasmtime_component_val_t()
        try:
            for ty, val in zip(self.params, params):
                ty.convert_to_c(store, val, pointer(capi[n]))
                n += 1
            try:
                enter_wasm(lambda: ffi.wasmtime_component_func_call(fn, ctx, capi, n, byref(space), 1))
            except wasmtime.WasmtimeError as e:
                # A trap leaves the instance unusable: it is never entered
                # again (the thread's default and every builder in it are
                # made afresh on their next call), and the caller is told
                # what failed, not what a later use of the dead instance
                # would say.
                self.owner.broken = True
                raise ComponentTrapped(self.name, e) from e
            if space.kind == ffi.WASMTIME_COMPONENT_RESULT.value and space.of.result.is_ok:
                ok = space.of.result.val
                if ok and ok.contents.kind == ffi.WASMTIME_COMPONENT_STRING.value:
                    text = ffi.to_str(ok.contents.of.string)
                    ffi.wasmtime_component_val_delete(byref(space))
                    enter_wasm(lambda: ffi.wasmtime_component_func_post_return(fn, ctx))
                    return Ok(text)
            value = self.result.convert_from_c(space)
            enter_wasm(lambda: ffi.wasmtime_component_func_post_return(fn, ctx))
        finally:
            for i in range(n):
                ffi.wasmtime_component_val_delete(byref(capi[i]))
        return value


class ComponentTrapped(RuntimeError):
    """The component trapped (a fault in it, or a limit the store set):
    its instance is dropped, and the next call makes a new one. ``trap``
    is wasmtime's message, its backtrace included."""

    def __init__(self, function: str, trap: Exception) -> None:
        self.trap = str(trap)
        first = self.trap.strip().splitlines()[0] if self.trap.strip() else "a trap"
        super().__init__(
            f"the component trapped in {function or 'a call'} ({first}); its instance is "
            "dropped and the next call makes a new one")


class Ok:
    """A ``result``'s ok string, lifted directly."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class Instance:
    """One instance of the component in its own store, with the `json`
    interface's functions. Not shared between threads."""

    def __init__(self, engine: Optional[wasmtime.Engine] = None) -> None:
        #: Set when a call trapped: the instance cannot be entered again.
        self.broken = False
        self.engine = engine or _default_engine()
        component = load(self.engine)
        linker = wc.Linker(self.engine)
        # Driven with JSON, the component calls no import; an import
        # called anyway traps instead of reaching Python.
        linker.define_unknown_imports_as_traps(component)
        self.store = wasmtime.Store(self.engine)
        self.instance = linker.instantiate(self.store, component)
        json = self.instance.get_export_index(self.store, INTERFACE)
        builder = self.instance.get_export_index(self.store, BUILDER)

        def get(name: str, parent: Any) -> Call:
            index = self.instance.get_export_index(self.store, name, parent)
            return Call(self.instance.get_func(self.store, index), self.store, self, name)

        self.create = get("[static]json-builder.create", json)
        self.start = get("[method]json-builder.start", json)
        self.handle = get("[method]json-builder.handle", json)
        self.step = get("[method]json-assembly.step", json)
        self.count = get("[method]json-builder.count", json)
        self.count_texts = get("[method]json-builder.count-texts", json)
        self.trim = get("[method]json-builder.trim", json)
        self.route = get("route", json)
        self.diff = get("diff-snapshots", json)
        self.router_create = get("[static]router.create", builder)


_engine: Optional[wasmtime.Engine] = None
_local = threading.local()


def _default_engine() -> wasmtime.Engine:
    global _engine
    with _load_lock:
        if _engine is None:
            _engine = wasmtime.Engine()
        return _engine


def default_instance() -> Instance:
    """This thread's instance, made on first use."""
    inst = getattr(_local, "instance", None)
    if inst is None or inst.broken:
        inst = _local.instance = Instance()
    return inst
